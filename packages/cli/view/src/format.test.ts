import { describe, expect, it } from 'vitest'
import { describeSkipped } from './api.js'
import { flattenConfig, formatCell } from './format.js'
import { mergeRecords, parseEpisodesEvent, parseMetricsEvent } from './live.js'

describe('describeSkipped', () => {
  it('says nothing when nothing was skipped', () => {
    expect(describeSkipped([])).toBe('')
  })

  it('groups the skipped lines by reason and caps the line numbers named', () => {
    const skipped = [
      { line: 4, reason: 'invalid JSON' },
      { line: 7, reason: 'over 1 MiB' },
      { line: 9, reason: 'invalid JSON' },
    ]
    expect(describeSkipped(skipped)).toBe('3 lines skipped: invalid JSON at 4, 9; over 1 MiB at 7')
    expect(describeSkipped([{ line: 1, reason: 'x' }])).toBe('1 line skipped: x at 1')
    const many = Array.from({ length: 12 }, (_, index) => ({ line: index + 1, reason: 'invalid JSON' }))
    expect(describeSkipped(many, 3)).toBe('12 lines skipped: invalid JSON at 1, 2, 3, …')
  })
})

describe('live updates', () => {
  it('merges metric records by step, the newer line winning, in step order', () => {
    const merged = mergeRecords(
      [
        { step: 1, loss: 1 },
        { step: 2, loss: 2 },
      ],
      [
        { step: 3, loss: 3 },
        { step: 2, loss: 20 },
      ],
    )
    expect(merged).toEqual([
      { step: 1, loss: 1 },
      { step: 2, loss: 20 },
      { step: 3, loss: 3 },
    ])
  })

  it('ignores events that are not the shape the page expects', () => {
    expect(parseMetricsEvent('{"run":"a","records":[{"step":3,"loss":1},{"loss":2}]}')).toEqual({ run: 'a', records: [{ step: 3, loss: 1 }] })
    expect(parseMetricsEvent('not json')).toBeUndefined()
    expect(parseMetricsEvent('{"run":1,"records":[]}')).toBeUndefined()
    expect(parseEpisodesEvent('{"run":"a","total":12}')).toEqual({ run: 'a', total: 12 })
    expect(parseEpisodesEvent('{"run":"a","total":"12"}')).toBeUndefined()
  })
})

describe('table cells and config rows', () => {
  it('writes intervals as "low – high" and rounds numbers', () => {
    expect(formatCell([0.35, 0.4712])).toBe('0.350 – 0.471')
    expect(formatCell({ low: 1, high: 2 })).toBe('1 – 2')
    expect(formatCell(256)).toBe('256')
    expect(formatCell(null)).toBe('')
    expect(formatCell({ other: true })).toBe('{"other":true}')
  })

  it('flattens a config into one row per field', () => {
    const rows = flattenConfig({ kind: 'rl', model: { preset: 'tiny', seed: 0 }, loggers: ['jsonl', 'tensorboard'], environments: [{ game: 'kuhn' }] })
    expect([...rows]).toEqual([
      ['kind', 'rl'],
      ['model.preset', 'tiny'],
      ['model.seed', '0'],
      ['loggers', '["jsonl","tensorboard"]'],
      ['environments[0].game', 'kuhn'],
    ])
  })

  it('stops at 400 rows however large the config', () => {
    const huge = Object.fromEntries(Array.from({ length: 5000 }, (_, index) => [`field${index}`, index]))
    expect(flattenConfig(huge).size).toBe(400)
  })
})
