import { InvalidArgumentError } from '@ludic/core'
import { renderVegaLite } from '@ludic/report'
import type { TopLevelSpec } from 'vega-lite'

export interface RenderChartOptions {
  /** `svg` (text) or `png` (bytes, drawn from the SVG by resvg). */
  format: 'svg' | 'png'
  /** PNG only: pixels per SVG pixel. Default 2. */
  scale?: number
}

/**
 * Draws a Vega-Lite specification: as SVG text (`@ludic/report`'s `renderVegaLite`, Vega headless in Node), or as
 * PNG bytes (that SVG rasterised by `@resvg/resvg-js`, a prebuilt native module loaded only when a PNG is asked
 * for; text uses the system's fonts).
 */
export async function renderChart(spec: TopLevelSpec, options: { format: 'svg'; scale?: number }): Promise<string>
export async function renderChart(spec: TopLevelSpec, options: { format: 'png'; scale?: number }): Promise<Uint8Array>
export async function renderChart(spec: TopLevelSpec, options: RenderChartOptions): Promise<string | Uint8Array>
export async function renderChart(spec: TopLevelSpec, options: RenderChartOptions): Promise<string | Uint8Array> {
  if (options?.format !== 'svg' && options?.format !== 'png') {
    throw new InvalidArgumentError({ argument: 'options.format', value: options?.format, message: "must be 'svg' or 'png'" })
  }
  const scale = options.scale ?? 2
  if (!Number.isFinite(scale) || scale <= 0 || scale > 8)
    throw new InvalidArgumentError({ argument: 'options.scale', value: scale, message: 'must be in (0, 8]' })
  const svg = await renderVegaLite(spec)
  if (options.format === 'svg') return svg
  const { Resvg } = await import('@resvg/resvg-js')
  const image = new Resvg(svg, {
    background: 'white',
    fitTo: { mode: 'zoom', value: scale },
    font: { loadSystemFonts: true, defaultFontFamily: 'DejaVu Sans' },
  })
  return new Uint8Array(image.render().asPng())
}
