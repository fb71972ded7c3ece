import { compile } from 'vega-lite'
import { describe, expect, it } from 'vitest'
import { defaultMetrics, metricNames, metricPoints, metricSpec, smooth } from './charts.js'

describe('smooth (TensorBoard’s debiased exponential moving average)', () => {
  it('returns the values unchanged at weight 0', () => {
    expect(smooth([1, 5, null, 2], 0)).toEqual([1, 5, null, 2])
  })

  it('debiases the first points: a constant series stays constant instead of rising from zero', () => {
    expect(smooth([3, 3, 3, 3], 0.9).map((value) => Number(value?.toFixed(12)))).toEqual([3, 3, 3, 3])
  })

  it('matches the formula on a short series and leaves non-finite values out of the average', () => {
    const weight = 0.5
    // after 1 point: 0.5·1 / (1 − 0.5) = 1; after 2: (0.25 + 0.5·3) / (1 − 0.25) = 7/3
    const smoothed = smooth([1, null, 3], weight)
    expect(smoothed[0]).toBeCloseTo(1, 12)
    expect(smoothed[1]).toBeNull()
    expect(smoothed[2]).toBeCloseTo(7 / 3, 12)
  })
})

describe('metric names and the default charts', () => {
  const records = [
    [
      { step: 1, loss: 0.5, 'reward/kuhn/player0': 0.1, 'eval/exploitability': 0.3 },
      { step: 2, loss: 0.4, kl: 0.01 },
    ],
    [{ step: 1, 'reward/kuhn/player1': -0.1, entropy: 1 }],
  ]

  it('lists the union of the names, rewards first, then evaluations, then the rest, without step', () => {
    expect(metricNames(records)).toEqual(['reward/kuhn/player0', 'reward/kuhn/player1', 'eval/exploitability', 'entropy', 'kl', 'loss'])
  })

  it('shows the reward curves, the first evaluation series and the loss by default', () => {
    expect(defaultMetrics(metricNames(records))).toEqual(['reward/kuhn/player0', 'reward/kuhn/player1', 'eval/exploitability', 'loss'])
    expect(defaultMetrics(['a', 'b', 'c'])).toEqual(['a', 'b'])
  })

  it('makes points only where a run has a finite value (a sparse evaluation series)', () => {
    const points = metricPoints(
      [
        {
          run: 'a',
          records: [
            { step: 1, 'eval/x': null },
            { step: 2, 'eval/x': 0.5 },
            { step: 3, loss: 1 },
          ],
        },
        { run: 'b', records: [{ step: 1, 'eval/x': 0.25 }] },
      ],
      'eval/x',
      0,
    )
    expect(points).toEqual([
      { run: 'a', step: 2, value: 0.5, smoothed: 0.5 },
      { run: 'b', step: 1, value: 0.25, smoothed: 0.25 },
    ])
  })

  it('draws the raw line under the smoothed one only when smoothing is on', () => {
    const points = [{ run: 'a', step: 1, value: 1, smoothed: 1 }]
    const layers = (smoothing: boolean) => (metricSpec('loss', points, { runs: ['a'], smoothing, width: 300 }) as { layer: unknown[] }).layer.length
    expect(layers(true)).toBe(2)
    expect(layers(false)).toBe(1)
  })

  it('compiles without a Vega-Lite warning for one run or several, smoothed or not (the page counts a console warning as a fault)', () => {
    const points = [
      { run: 'a', step: 1, value: 1, smoothed: 1 },
      { run: 'b', step: 1, value: 2, smoothed: 2 },
    ]
    for (const runs of [['a'], ['a', 'b']])
      for (const smoothing of [true, false]) {
        const warnings: string[] = []
        const logger = {
          level: () => logger,
          info: () => logger,
          debug: () => logger,
          warn: (...message: unknown[]) => {
            warnings.push(message.join(' '))
            return logger
          },
          error: (...message: unknown[]) => {
            warnings.push(message.join(' '))
            return logger
          },
        }
        compile(metricSpec('loss', points, { runs, smoothing, width: 300 }), { logger: logger as never })
        expect(warnings, `${runs.length} run(s), smoothing ${smoothing}`).toEqual([])
      }
  })
})
