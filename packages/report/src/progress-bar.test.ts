import { describe, expect, it } from 'vitest'
import { createProgressBar } from './progress-bar.js'

/** A stream that keeps what is written; `isTTY` as given. */
function fakeStream(isTTY: boolean, columns = 80) {
  const writes: string[] = []
  return { writes, stream: { isTTY, columns, write: (text: string) => writes.push(text) } }
}

describe('createProgressBar', () => {
  it('writes a log a line at the start, at every 10% and at the end, not one per update', () => {
    const { writes, stream } = fakeStream(false)
    let time = 0
    const bar = createProgressBar(200, { stream, label: 'sft', now: () => time, intervalSeconds: 3600 })
    for (let done = 1; done <= 199; done++) {
      time += 100 // 0.1 s per step: never the interval
      bar.update(done, { nll: 1 / done })
    }
    bar.finish()
    const lines = writes
      .join('')
      .split('\n')
      .filter((line) => line !== '')
    expect(writes.every((text) => text.endsWith('\n') && !text.includes('\r'))).toBe(true)
    // The first update, one per tenth reached (10%…90%: steps 20, 40, … 180), and the final 199.
    expect(lines.map((line) => /\] (\d+)\/200/.exec(line)?.[1])).toEqual(['1', '20', '40', '60', '80', '100', '120', '140', '160', '180', '199'])
    expect(lines[0]).toMatch(/^sft \[\.+\] 1\/200 {2}0:00 < 0:20 {2}nll 1$/)
    expect(lines.at(-1)).toContain('nll 0.005')
  })

  it('writes a log line after intervalSeconds without a new tenth, and nothing more at finish when the last update was written', () => {
    const { writes, stream } = fakeStream(false)
    let time = 0
    const bar = createProgressBar(1000, { stream, now: () => time, intervalSeconds: 30 })
    for (let done = 1; done <= 50; done++) {
      time += 10_000 // 10 s per step: a line every third step, 5% of the run in all
      bar.update(done)
    }
    bar.finish()
    const counts = writes.map((line) => Number(/\] (\d+)\//.exec(line)?.[1]))
    expect(counts).toEqual([1, 4, 7, 10, 13, 16, 19, 22, 25, 28, 31, 34, 37, 40, 43, 46, 49, 50])
    const before = writes.length
    bar.finish()
    expect(writes.length).toBe(before)
  })

  it('formats the counts with formatValue', () => {
    const { writes, stream } = fakeStream(false)
    const bar = createProgressBar(2048, { stream, formatValue: (bytes) => `${bytes / 1024} KiB` })
    bar.update(1024)
    bar.finish()
    expect(writes.join('')).toContain('1 KiB/2 KiB')
  })

  it('draws a live bar on a TTY, redrawn in place and cut to the terminal width, with a newline at finish', () => {
    const { writes, stream } = fakeStream(true, 40)
    const bar = createProgressBar(10, { stream, label: 'self-play', width: 8 })
    for (let done = 0; done <= 10; done++) bar.update(done, { reward: 0.25, note: 'a long field that does not fit' })
    bar.finish()
    const output = writes.join('')
    expect(output).toContain('self-play [')
    expect(output).toContain('\x1B[1G') // the cursor back to the first column: the same line redrawn
    expect(output.endsWith('\n')).toBe(true)
    const drawn = output.split(/\x1B\[[0-9;?]*[A-Za-z]|\x1B[78]/).filter((part) => part.includes('['))
    expect(drawn.length).toBeGreaterThan(0)
    for (const part of drawn) expect(part.replace('\n', '').length).toBeLessThan(40)
    expect(drawn.at(-1)).toMatch(/10\/10/)
  })
})
