import { formatNumber } from './token-colours.js'

/** A table cell as text: numbers rounded, an interval `[low, high]` (or `{ low, high }`) as "low – high", other values as JSON. */
export function formatCell(value: unknown): string {
  if (value === null || value === undefined) return ''
  if (typeof value === 'number') return Number.isInteger(value) ? String(value) : formatNumber(value)
  if (typeof value === 'string') return value
  if (Array.isArray(value) && value.length === 2 && value.every((item) => typeof item === 'number')) return `${formatCell(value[0])} – ${formatCell(value[1])}`
  if (typeof value === 'object' && typeof (value as { low?: unknown }).low === 'number' && typeof (value as { high?: unknown }).high === 'number')
    return `${formatCell((value as { low: number }).low)} – ${formatCell((value as { high: number }).high)}`
  return JSON.stringify(value)
}

const maximumConfigRows = 400

/** `{ a: { b: 1 }, c: [1, 2] }` → `a.b = 1`, `c = [1,2]` (arrays of plain values stay one row; others are indexed). */
export function flattenConfig(config: unknown, prefix = '', into = new Map<string, string>(), depth = 0): Map<string, string> {
  if (into.size >= maximumConfigRows) return into
  const plain = (value: unknown) => value === null || typeof value !== 'object'
  if (plain(config) || depth >= 8) into.set(prefix || '(config)', typeof config === 'string' ? config : (JSON.stringify(config) ?? String(config)))
  else if (Array.isArray(config) && config.every(plain)) into.set(prefix, JSON.stringify(config))
  else
    for (const [key, value] of Object.entries(config as Record<string, unknown>)) {
      flattenConfig(value, prefix === '' ? key : Array.isArray(config) ? `${prefix}[${key}]` : `${prefix}.${key}`, into, depth + 1)
      if (into.size >= maximumConfigRows) break
    }
  return into
}

/** A cell shown as text (the table's own interval columns joined by `joinIntervals`). */
export type ShownTable = { name: string; columns: string[]; rows: string[][]; numeric: boolean[] }

const lowColumn = /^(.*?)[ _-]?low$/i

/**
 * A table with each interval shown in one column: `x`, `xLow`, `xHigh` (the trainer's `eval/…` figures) become
 * `x` = "0.410 [0.350, 0.470]"; `Interval 95% low`, `Interval 95% high` (CharacterArena) become `Interval 95%` =
 * "[0.350, 0.470]". Other columns as they are, every cell as text (`formatCell`).
 */
export function joinIntervals(table: { name: string; columns: readonly string[]; rows: readonly (readonly unknown[])[] }): ShownTable {
  const columns = table.columns
  const pairs = new Map<number, { high: number; base: number | undefined; name: string }>()
  const absorbed = new Set<number>()
  columns.forEach((column, low) => {
    const prefix = lowColumn.exec(column)?.[1]
    if (prefix === undefined || prefix === '') return
    const suffix = column.slice(prefix.length) // " low", "Low", "_low"…
    const high = columns.indexOf(`${prefix}${suffix.replace(/low$/i, (word) => (word === 'Low' ? 'High' : word === 'LOW' ? 'HIGH' : 'high'))}`)
    if (high === -1) return
    const base = columns.indexOf(prefix)
    pairs.set(low, { high, base: base === -1 ? undefined : base, name: prefix })
    absorbed.add(high)
    if (base !== -1) absorbed.add(low)
  })
  const interval = (row: readonly unknown[], low: number, high: number) =>
    row[low] === null || row[low] === undefined || row[high] === null || row[high] === undefined ? '' : `[${formatCell(row[low])}, ${formatCell(row[high])}]`
  const shown: { name: string; cell: (row: readonly unknown[]) => string; numeric: boolean }[] = []
  columns.forEach((column, index) => {
    if (absorbed.has(index)) return
    const pair = pairs.get(index)
    if (pair !== undefined) return void shown.push({ name: pair.name, cell: (row) => interval(row, index, pair.high), numeric: true })
    const joined = [...pairs.entries()].find(([, candidate]) => candidate.base === index)
    if (joined !== undefined) {
      const [low, { high }] = joined
      return void shown.push({ name: column, cell: (row) => `${formatCell(row[index])} ${interval(row, low, high)}`.trim(), numeric: true })
    }
    shown.push({
      name: column,
      cell: (row) => formatCell(row[index]),
      numeric: table.rows.length > 0 && table.rows.every((row) => typeof row[index] === 'number' || row[index] === null),
    })
  })
  return {
    name: table.name,
    columns: shown.map((column) => column.name),
    rows: table.rows.map((row) => shown.map((column) => column.cell(row))),
    numeric: shown.map((column) => column.numeric),
  }
}
