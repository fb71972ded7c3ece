import type { TopLevelSpec } from 'vega-lite'
import type { StepMetrics } from './api.js'

/**
 * TensorBoard's smoothing: an exponential moving average debiased like Adam's moments (divided by 1 − weightᵏ after
 * k finite points), so the first points are not pulled towards zero. `weight` 0 returns the values as they are; a
 * non-finite value (null) stays null and does not enter the average.
 */
export function smooth(values: readonly (number | null)[], weight: number): (number | null)[] {
  if (!(weight > 0)) return [...values]
  const w = Math.min(weight, 0.999)
  let average = 0
  let count = 0
  return values.map((value) => {
    if (value === null || !Number.isFinite(value)) return null
    average = average * w + (1 - w) * value
    count++
    return average / (1 - w ** count)
  })
}

/** Every metric name of the records (not `step`), sorted with `reward/…` first, then `eval/…`, then the rest. */
export function metricNames(recordLists: readonly (readonly StepMetrics[])[]): string[] {
  const names = new Set<string>()
  for (const records of recordLists) for (const record of records) for (const name of Object.keys(record)) if (name !== 'step') names.add(name)
  const rank = (name: string) => (name.startsWith('reward/') || name === 'reward' ? 0 : name.startsWith('eval/') ? 1 : 2)
  return [...names].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b))
}

/** The charts shown before the user picks: the reward curves (up to four), the first evaluation series, and the loss. */
export function defaultMetrics(names: readonly string[]): string[] {
  const rewards = names.filter((name) => name.startsWith('reward/') || name === 'reward').slice(0, 4)
  const evaluation = names.find((name) => name.startsWith('eval/'))
  const loss = names.includes('loss') ? ['loss'] : []
  const chosen = [...rewards, ...(evaluation === undefined ? [] : [evaluation]), ...loss]
  return chosen.length > 0 ? chosen : names.slice(0, 2)
}

export interface ChartPoint {
  run: string
  step: number
  value: number
  smoothed: number
}

/** One metric of several runs as chart points: a run's steps without a finite value (an evaluation series is sparse) are left out. */
export function metricPoints(series: readonly { run: string; records: readonly StepMetrics[] }[], metric: string, weight: number): ChartPoint[] {
  const points: ChartPoint[] = []
  for (const { run, records } of series) {
    const present = records.filter((record) => typeof record[metric] === 'number' && Number.isFinite(record[metric]))
    const smoothed = smooth(
      present.map((record) => record[metric] as number),
      weight,
    )
    present.forEach((record, index) => {
      points.push({ run, step: record.step, value: record[metric] as number, smoothed: smoothed[index] ?? (record[metric] as number) })
    })
  }
  return points
}

/**
 * A metric's chart: one line per run (colour by run, in `runs` order), the smoothed line over the raw one drawn faint
 * when smoothing is on; points where a series is sparse (an evaluation every N steps).
 */
export function metricSpec(
  metric: string,
  points: readonly ChartPoint[],
  options: { runs: readonly string[]; smoothing: boolean; width: number },
): TopLevelSpec {
  const steps = new Map<string, number>()
  for (const point of points) steps.set(point.run, (steps.get(point.run) ?? 0) + 1)
  const sparse = [...steps.values()].some((count) => count <= 20)
  const x = { field: 'step', type: 'quantitative', title: 'step', axis: { tickMinStep: 1 } } as const
  const color = {
    field: 'run',
    type: 'nominal',
    title: null,
    scale: { domain: [...options.runs] },
    legend: options.runs.length > 1 ? { orient: 'bottom' } : null,
  } as const
  const tooltip = [
    { field: 'run', type: 'nominal' },
    { field: 'step', type: 'quantitative' },
    { field: 'value', type: 'quantitative', format: '.4~g' },
    ...(options.smoothing ? [{ field: 'smoothed', type: 'quantitative', format: '.4~g' }] : []),
  ] as const
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    width: options.width,
    height: 180,
    autosize: { type: 'fit-x', contains: 'padding' },
    title: { text: metric, anchor: 'start', fontSize: 12, fontWeight: 'normal' },
    data: { values: points as ChartPoint[] },
    layer: [
      ...(options.smoothing
        ? [
            {
              mark: { type: 'line', opacity: 0.25, strokeWidth: 1 },
              encoding: { x, y: { field: 'value', type: 'quantitative', title: null, axis: { format: '~g' } }, color },
            } as const,
          ]
        : []),
      {
        mark: { type: 'line', strokeWidth: 1.6, point: sparse ? { size: 18 } : false },
        encoding: {
          x,
          y: { field: options.smoothing ? 'smoothed' : 'value', type: 'quantitative', title: null, scale: { zero: false }, axis: { format: '~g' } },
          color,
          tooltip: [...tooltip],
        },
      },
    ],
    config: {
      view: { stroke: null },
      legend: { symbolOpacity: 1, symbolType: 'stroke', symbolStrokeWidth: 2 },
      axis: { labelFontSize: 10, titleFontSize: 10, gridColor: '#eee' },
      font: 'system-ui, sans-serif',
    },
  } as TopLevelSpec
}
