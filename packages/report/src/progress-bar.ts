import cliProgress from 'cli-progress'

/**
 * Where the progress goes: a TTY gets a live bar (cli-progress) redrawn in place, anything else (a pipe, a CI
 * log) a plain line now and then.
 */
export interface ProgressStream {
  write(text: string): unknown
  isTTY?: boolean
  columns?: number
}

export interface ProgressBar {
  update(done: number, fields?: Readonly<Record<string, number | string>>): void
  /** Draws the last state and ends the bar (a TTY gets its newline; a log its final line). */
  finish(): void
}

export interface ProgressBarOptions {
  /** Default: `process.stderr`. */
  stream?: ProgressStream
  /** Written before the bar, e.g. `sft`. */
  label?: string
  /** Characters of the bar. Default 24. */
  width?: number
  /** Not a TTY: a plain line at most this often, in seconds, besides every 10% and the final one. Default 30. */
  intervalSeconds?: number
  /** How `done` and `total` are written (e.g. bytes as `12.3 MB`). Default: as they are. */
  formatValue?: (value: number) => string
  /** Milliseconds since some origin (tests give a fake clock). Default `Date.now`. */
  now?: () => number
}

/**
 * A progress bar: `label [#######.......] 7/20  0:42 < 1:12  reward 0.31 …` (elapsed < remaining, then the
 * fields of the last update). On a TTY it is cli-progress's bar, redrawn in place at most 10 times a second. Anywhere
 * else it writes a plain line at the first update, each time another 10% is done, at most every
 * `intervalSeconds` in between, and at `finish` (unless the last update was just written), so a CI log gets a
 * dozen lines rather than one per step.
 */
export function createProgressBar(total: number, options: ProgressBarOptions = {}): ProgressBar {
  const stream = options.stream ?? process.stderr
  const width = options.width ?? 24
  const label = options.label === undefined ? '' : `${options.label} `
  const formatValue = options.formatValue ?? String
  const now = options.now ?? Date.now
  const started = now()
  let first: number | undefined // the first `done`, so a resumed run's rate counts only the steps taken now
  const fieldsText = (fields: Readonly<Record<string, number | string>>) =>
    Object.entries(fields)
      .map(([name, value]) => `${name} ${typeof value === 'number' ? formatNumber(value) : value}`)
      .join('  ')
  const remaining = (done: number): number => {
    const elapsed = (now() - started) / 1000
    const rate = (done - (first ?? 0)) / Math.max(elapsed, 1e-9)
    return rate > 0 ? Math.max(0, total - done) / rate : Number.POSITIVE_INFINITY
  }

  const fractionOf = (done: number) => (total > 0 ? Math.min(1, Math.max(0, done / total)) : 1)
  const line = (done: number, fields: string) => {
    const filled = Math.round(fractionOf(done) * width)
    const text = `${label}[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${formatValue(done)}/${formatValue(total)}  ${clock((now() - started) / 1000)} < ${clock(remaining(done))}  ${fields}`
    return text.trimEnd()
  }

  if (stream.isTTY === true) {
    const bar = new QuietTimerBar({
      stream: stream as NodeJS.WritableStream,
      // cli-progress's own formatter pads and aligns; ours cuts the line to the terminal's width instead.
      format: (_options, params, payload) => line(params.value, String(payload.fields ?? '')).slice(0, Math.max(1, params.maxWidth - 1)),
      hideCursor: false,
      gracefulExit: false,
      linewrap: false,
      fps: 10,
    })
    let active = false
    return {
      update(done, fields = {}) {
        first ??= done === 0 ? 0 : done - 1
        if (!active) {
          bar.start(total, done, { fields: fieldsText(fields) })
          active = true
          return
        }
        bar.update(done, { fields: fieldsText(fields) })
      },
      finish() {
        if (active) bar.stop()
        active = false
      },
    }
  }

  const intervalMs = (options.intervalSeconds ?? 30) * 1000
  let lastWritten: { time: number; tenth: number; done: number } | undefined
  let pending: { done: number; fields: Readonly<Record<string, number | string>> } | undefined
  const write = (done: number, fields: Readonly<Record<string, number | string>>) => {
    stream.write(`${line(done, fieldsText(fields))}\n`)
    lastWritten = { time: now(), tenth: Math.floor(fractionOf(done) * 10), done }
    pending = undefined
  }
  return {
    update(done, fields = {}) {
      first ??= done === 0 ? 0 : done - 1
      if (lastWritten === undefined || Math.floor(fractionOf(done) * 10) > lastWritten.tenth || now() - lastWritten.time >= intervalMs) write(done, fields)
      else pending = { done, fields }
    },
    finish() {
      if (pending !== undefined && pending.done !== lastWritten?.done) write(pending.done, pending.fields)
      pending = undefined
    },
  }
}

/**
 * cli-progress's bar redraws on a timer between updates; with the timer unreferenced after every draw, a bar a
 * caller never finishes (an error in a step) does not keep the process alive.
 */
class QuietTimerBar extends cliProgress.SingleBar {
  override render(): void {
    super.render()
    ;(this as unknown as { timer?: { unref?: () => void } | null }).timer?.unref?.()
  }
}

function clock(seconds: number): string {
  if (!Number.isFinite(seconds)) return '?:??'
  const whole = Math.max(0, Math.round(seconds))
  const hours = Math.floor(whole / 3600)
  const minutes = `${Math.floor((whole % 3600) / 60)}`
  const rest = `${String(whole % 60).padStart(2, '0')}`
  return hours > 0 ? `${hours}:${minutes.padStart(2, '0')}:${rest}` : `${minutes}:${rest}`
}

function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return String(value)
  if (Number.isInteger(value)) return String(value)
  const magnitude = Math.abs(value)
  return magnitude !== 0 && (magnitude < 1e-3 || magnitude >= 1e5) ? value.toExponential(2) : value.toFixed(3)
}
