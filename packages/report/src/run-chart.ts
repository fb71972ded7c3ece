import { InvalidArgumentError } from '@ludic/core'
import { renderVegaLite, type VegaLiteSpec } from './vega-chart.js'

/** One panel of a run chart: a curve over training steps. */
export interface ChartSeries {
  name: string
  /** The curve's colour (any CSS colour). */
  color: string
  points: readonly { step: number; value: number }[]
  /** Fixed y range; default from 0 to the largest value (or reference), rounded up. */
  range?: readonly [number, number]
  /** A dashed horizontal reference line, e.g. a target. */
  reference?: { value: number; label: string }
}

export interface RunChartOptions {
  /** The x axis' title. Default `'self-play step'`. */
  xTitle?: string
  /** Width of each panel in pixels. Default 640. */
  width?: number
  /** Height of each panel in pixels. Default 180. */
  height?: number
}

/**
 * The Vega-Lite specification of a run chart: one panel per series stacked vertically (each with its own y
 * scale, the steps shared), the curve with its points, and the series' reference as a dashed rule with its
 * label. Points whose value is not finite are left out (a chart never shows NaN). Plain JSON: paste it into
 * the Vega editor, or render it with `renderRunChart`.
 */
export function runChartSpecification(title: string, series: readonly ChartSeries[], options: RunChartOptions = {}): VegaLiteSpec {
  if (!Array.isArray(series as unknown)) throw new InvalidArgumentError({ argument: 'series', value: series, message: 'must be an array of chart series' })
  const width = options.width ?? 640
  const height = options.height ?? 180
  const maxStep = Math.max(1, ...series.flatMap((item) => item.points.map((point) => point.step)).filter(Number.isFinite))
  const panels = series.map((item) => {
    const values = item.points.filter((point) => Number.isFinite(point.step) && Number.isFinite(point.value)).map(({ step, value }) => ({ step, value }))
    const y = {
      field: 'value',
      type: 'quantitative',
      title: null,
      ...(item.range === undefined ? { scale: { zero: true, nice: true } } : { scale: { domain: [...item.range], nice: false } }),
    } as const
    const x = { field: 'step', type: 'quantitative', title: options.xTitle ?? 'self-play step', scale: { domain: [0, maxStep] } } as const
    const reference = item.reference !== undefined && Number.isFinite(item.reference.value) ? item.reference : undefined
    return {
      title: { text: item.name, color: item.color, anchor: 'start', fontSize: 13 },
      width,
      height,
      layer: [
        {
          data: { values },
          mark: { type: 'line', color: item.color, strokeWidth: 2, point: { filled: true, size: 24, color: item.color } },
          encoding: { x, y, tooltip: [{ field: 'step' }, { field: 'value', format: '.4~g' }] },
        },
        ...(reference === undefined
          ? []
          : [
              {
                data: { values: [{ value: reference.value, label: reference.label }] },
                mark: { type: 'rule', color: '#c00', strokeDash: [5, 4] },
                encoding: { y },
              },
              {
                data: { values: [{ value: reference.value, label: reference.label }] },
                mark: { type: 'text', color: '#c00', align: 'right', baseline: 'bottom', dy: -3, x: 'width' },
                encoding: { y, text: { field: 'label' } },
              },
            ]),
      ],
    }
  })
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: title, fontSize: 15 },
    background: 'white',
    config: { font: 'sans-serif' },
    vconcat: panels,
  } as VegaLiteSpec
}

/**
 * A run chart as a standalone SVG document (`runChartSpecification` drawn by `renderVegaLite`): one panel per
 * series with its name, points and reference line.
 */
export function renderRunChart(title: string, series: readonly ChartSeries[], options: RunChartOptions = {}): Promise<string> {
  return renderVegaLite(runChartSpecification(title, series, options))
}
