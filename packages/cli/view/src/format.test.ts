import { describe, expect, it } from 'vitest'
import { describeSkipped } from './api.js'
import { flattenConfig, formatCell, joinIntervals } from './format.js'
import { combineLoaded, mergeRecords, parseEpisodesEvent, parseMetricsEvent, parseRunsEvent } from './live.js'

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
    expect(describeSkipped(many, 12, 3)).toBe('12 lines skipped: invalid JSON at 1, 2, 3, …')
    expect(describeSkipped(many.slice(0, 2), 5000)).toBe('5000 lines skipped: invalid JSON at 1, 2; 4998 more not listed')
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

  it('keeps the steps live events brought while a load was under way (a load answered with an older view of the file)', () => {
    const step = (n: number, loss = n) => ({ step: n, loss })
    // A full load answered [1, 2] while an event had already brought step 3 of the rewritten file.
    expect(combineLoaded([step(1), step(2), step(3)], [step(1), step(2)], undefined)).toEqual([step(1), step(2), step(3)])
    // A full load replaces what the page had up to its last step (a resumed run rewrote steps 2 and 3).
    expect(combineLoaded([step(1), step(2, 20), step(3, 30)], [step(1), step(2)], undefined)).toEqual([step(1), step(2), step(3, 30)])
    // A load after step 2 keeps the steps before, adds the answer, keeps the newer events.
    expect(combineLoaded([step(1), step(2), step(5)], [step(3), step(4)], 2)).toEqual([step(1), step(2), step(3), step(4), step(5)])
    expect(combineLoaded([], [step(1)], undefined)).toEqual([step(1)])
  })

  it('ignores events that are not the shape the page expects', () => {
    expect(parseMetricsEvent('{"run":"a","records":[{"step":3,"loss":1},{"loss":2}]}')).toEqual({
      run: 'a',
      records: [{ step: 3, loss: 1 }],
      reset: false,
      refetch: false,
    })
    expect(parseMetricsEvent('{"run":"a","records":[],"reset":true,"refetch":true}')).toMatchObject({ reset: true, refetch: true })
    expect(parseMetricsEvent('not json')).toBeUndefined()
    expect(parseMetricsEvent('{"run":1,"records":[]}')).toBeUndefined()
    expect(parseEpisodesEvent('{"run":"a","total":12}')).toEqual({ run: 'a', total: 12, reset: false })
    expect(parseRunsEvent('{"runs":[{"id":"a","name":"kuhn","status":"running","step":3},{"id":4}]}')).toEqual([
      { id: 'a', name: 'kuhn', status: 'running', step: 3 },
    ])
    expect(parseRunsEvent('{"runs":"none"}')).toBeUndefined()
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

describe('joinIntervals', () => {
  it('joins a figure with its Low and High columns (the trainer’s eval/ figures)', () => {
    const table = joinIntervals({
      name: 'Evaluation at step 2',
      columns: ['opponent', 'winRate', 'winRateLow', 'winRateHigh', 'meanReward'],
      rows: [
        ['random', 0.41, 0.35, 0.47, -0.2],
        ['nash', null, null, null, 0.1],
      ],
    })
    expect(table.columns).toEqual(['opponent', 'winRate', 'meanReward'])
    expect(table.rows).toEqual([
      ['random', '0.410 [0.350, 0.470]', '-0.200'],
      ['nash', '', '0.100'],
    ])
    expect(table.numeric).toEqual([false, true, true])
  })

  it('joins a "… low" / "… high" pair into one interval column (CharacterArena)', () => {
    const table = joinIntervals({
      name: 'Ratings',
      columns: ['Rank', 'Player', 'Rating', 'Interval 95% low', 'Interval 95% high', 'Games'],
      rows: [[1, 'pirate', 1012.5, 990.25, 1030.5, 40]],
    })
    expect(table.columns).toEqual(['Rank', 'Player', 'Rating', 'Interval 95%', 'Games'])
    expect(table.rows).toEqual([['1', 'pirate', '1012.5', '[990.3, 1030.5]', '40']])
  })

  it('leaves a table without interval columns as it is', () => {
    const table = joinIntervals({ name: 't', columns: ['game', 'win 95% interval', 'low'], rows: [['kuhn', '[0.1, 0.2]', 3]] })
    expect(table.columns).toEqual(['game', 'win 95% interval', 'low'])
    expect(table.rows).toEqual([['kuhn', '[0.1, 0.2]', '3']])
  })
})
