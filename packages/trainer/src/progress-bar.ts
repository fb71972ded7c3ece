/** Where the progress goes: a TTY gets one line updated in place, anything else one plain line per update. */
export interface ProgressStream {
  write(text: string): unknown
  isTTY?: boolean
  columns?: number
}

export interface ProgressBar {
  update(done: number, fields?: Readonly<Record<string, number | string>>): void
  /** Ends the updating line (a TTY gets its newline). */
  finish(): void
}

/**
 * A terminal progress bar: `[#######.......]  7/20  0:42 < 1:12  reward 0.31 …`. On a TTY it rewrites one
 * line (`\r`); otherwise (a pipe, a CI log) it writes one plain line per update.
 */
export function createProgressBar(total: number, options: { stream?: ProgressStream; label?: string; width?: number } = {}): ProgressBar {
  const stream = options.stream ?? process.stderr
  const width = options.width ?? 24
  const label = options.label === undefined ? '' : `${options.label} `
  const started = Date.now()
  let start: number | undefined
  let active = false
  const clock = (seconds: number): string => {
    if (!Number.isFinite(seconds)) return '?:??'
    const whole = Math.max(0, Math.round(seconds))
    return `${Math.floor(whole / 60)}:${String(whole % 60).padStart(2, '0')}`
  }
  return {
    update(done, fields = {}) {
      start ??= done === 0 ? 0 : done - 1
      const fraction = total > 0 ? Math.min(1, done / total) : 1
      const filled = Math.round(fraction * width)
      const elapsed = (Date.now() - started) / 1000
      const rate = (done - start) / Math.max(elapsed, 1e-9)
      const remaining = rate > 0 ? (total - done) / rate : Infinity
      const shown = Object.entries(fields)
        .map(([name, value]) => `${name} ${typeof value === 'number' ? formatNumber(value) : value}`)
        .join('  ')
      const line = `${label}[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total}  ${clock(elapsed)} < ${clock(remaining)}  ${shown}`
      if (stream.isTTY === true) {
        const columns = stream.columns ?? 120
        stream.write(`\r${line.length > columns - 1 ? line.slice(0, columns - 1) : line.padEnd(columns - 1)}`)
        active = true
      } else {
        stream.write(`${line}\n`)
      }
    },
    finish() {
      if (active) stream.write('\n')
      active = false
    },
  }
}

function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return String(value)
  if (Number.isInteger(value)) return String(value)
  const magnitude = Math.abs(value)
  return magnitude !== 0 && (magnitude < 1e-3 || magnitude >= 1e5) ? value.toExponential(2) : value.toFixed(3)
}
