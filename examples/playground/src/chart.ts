/** A small SVG line chart: series of (x, y) points over shared axes, a legend, and optional dashed reference lines. */
export interface ChartSeries {
  name: string
  color: string
  points: readonly { x: number; y: number }[]
}

export interface ChartOptions {
  title: string
  yRange?: readonly [number, number]
  references?: readonly { y: number; label: string }[]
}

const width = 420
const height = 200
const margin = { left: 40, right: 12, top: 24, bottom: 26 }
const svgNamespace = 'http://www.w3.org/2000/svg'

function element<K extends keyof SVGElementTagNameMap>(name: K, attributes: Record<string, string | number>, text?: string): SVGElementTagNameMap[K] {
  const node = document.createElementNS(svgNamespace, name)
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value))
  if (text !== undefined) node.textContent = text
  return node
}

/** Draws the chart into `container` (replacing what was there). */
export function drawChart(container: HTMLElement, series: readonly ChartSeries[], options: ChartOptions): void {
  const svg = element('svg', { viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': options.title })
  svg.append(element('text', { x: margin.left, y: 15, class: 'chart-title' }, options.title))
  const points = series.flatMap((entry) => entry.points)
  const xs = points.map((point) => point.x)
  const ys = [...points.map((point) => point.y), ...(options.references ?? []).map((reference) => reference.y)]
  const xMin = Math.min(0, ...xs)
  const xMax = Math.max(1, ...xs)
  const [yMin, yMax] = options.yRange ?? [Math.min(0, ...ys), Math.max(1e-9, ...ys)]
  const x = (value: number) => margin.left + ((value - xMin) / (xMax - xMin || 1)) * (width - margin.left - margin.right)
  const y = (value: number) => height - margin.bottom - ((value - yMin) / (yMax - yMin || 1)) * (height - margin.top - margin.bottom)
  svg.append(element('line', { x1: margin.left, x2: width - margin.right, y1: y(yMin), y2: y(yMin), class: 'axis' }))
  svg.append(element('line', { x1: margin.left, x2: margin.left, y1: y(yMin), y2: y(yMax), class: 'axis' }))
  for (const value of [yMin, (yMin + yMax) / 2, yMax]) {
    svg.append(element('text', { x: margin.left - 4, y: y(value) + 4, class: 'tick', 'text-anchor': 'end' }, formatTick(value)))
  }
  svg.append(element('text', { x: width - margin.right, y: height - 6, class: 'tick', 'text-anchor': 'end' }, `step ${xMax}`))
  for (const reference of options.references ?? []) {
    svg.append(element('line', { x1: margin.left, x2: width - margin.right, y1: y(reference.y), y2: y(reference.y), class: 'reference' }))
    svg.append(element('text', { x: width - margin.right, y: y(reference.y) - 3, class: 'tick', 'text-anchor': 'end' }, reference.label))
  }
  series.forEach((entry, index) => {
    if (entry.points.length > 0) {
      const path = entry.points.map((point) => `${x(point.x).toFixed(1)},${y(point.y).toFixed(1)}`).join(' ')
      svg.append(element('polyline', { points: path, fill: 'none', stroke: entry.color, 'stroke-width': 2 }))
    }
    const legendX = margin.left + 8 + index * 130
    svg.append(element('rect', { x: legendX, y: margin.top - 4, width: 10, height: 3, fill: entry.color }))
    svg.append(element('text', { x: legendX + 14, y: margin.top, class: 'legend' }, entry.name))
  })
  container.replaceChildren(svg)
}

function formatTick(value: number): string {
  return Math.abs(value) >= 100 ? value.toFixed(0) : Math.abs(value) >= 1 ? value.toFixed(1) : value.toFixed(2)
}
