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
