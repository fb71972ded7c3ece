/** A line chart as a self-contained SVG (no dependencies): one panel per series, steps on the x axis. */
export interface ChartSeries {
  name: string
  color: string
  points: readonly { step: number; value: number }[]
  /** Fixed y range; default [0, max]. */
  range?: readonly [number, number]
  /** A dashed horizontal reference line, e.g. a target. */
  reference?: { value: number; label: string }
}

export function renderRunChart(title: string, series: readonly ChartSeries[]): string {
  const width = 720
  const panelHeight = 220
  const margin = { left: 60, right: 20, top: 40, bottom: 40 }
  const height = margin.top + series.length * (panelHeight + margin.bottom) + 10
  const plotWidth = width - margin.left - margin.right
  const allSteps = series.flatMap((item) => item.points.map((point) => point.step))
  const maxStep = Math.max(1, ...allSteps)
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${width / 2}" y="22" text-anchor="middle" font-size="15">${escapeXml(title)}</text>`,
  ]
  series.forEach((item, index) => {
    const top = margin.top + index * (panelHeight + margin.bottom)
    const values = item.points.map((point) => point.value)
    const [low, high] = item.range ?? [0, Math.max(1e-9, ...values, item.reference?.value ?? 0) * 1.1]
    const x = (step: number) => margin.left + (step / maxStep) * plotWidth
    const y = (value: number) => top + panelHeight - ((value - low) / (high - low || 1)) * panelHeight
    parts.push(`<rect x="${margin.left}" y="${top}" width="${plotWidth}" height="${panelHeight}" fill="none" stroke="#999"/>`)
    for (let tick = 0; tick <= 4; tick++) {
      const value = low + ((high - low) * tick) / 4
      parts.push(`<line x1="${margin.left}" x2="${margin.left + plotWidth}" y1="${y(value)}" y2="${y(value)}" stroke="#eee"/>`)
      parts.push(`<text x="${margin.left - 6}" y="${y(value) + 4}" text-anchor="end">${format(value)}</text>`)
    }
    for (let tick = 0; tick <= 5; tick++) {
      const step = Math.round((maxStep * tick) / 5)
      parts.push(`<text x="${x(step)}" y="${top + panelHeight + 16}" text-anchor="middle">${step}</text>`)
    }
    parts.push(`<text x="${margin.left + 8}" y="${top + 16}" fill="${item.color}" font-weight="bold">${escapeXml(item.name)}</text>`)
    if (item.reference !== undefined) {
      parts.push(
        `<line x1="${margin.left}" x2="${margin.left + plotWidth}" y1="${y(item.reference.value)}" y2="${y(item.reference.value)}" stroke="#c00" stroke-dasharray="5,4"/>`,
      )
      parts.push(
        `<text x="${margin.left + plotWidth - 4}" y="${y(item.reference.value) - 4}" text-anchor="end" fill="#c00">${escapeXml(item.reference.label)}</text>`,
      )
    }
    if (item.points.length > 0) {
      const path = item.points.map((point, position) => `${position === 0 ? 'M' : 'L'}${x(point.step).toFixed(1)},${y(point.value).toFixed(1)}`).join(' ')
      parts.push(`<path d="${path}" fill="none" stroke="${item.color}" stroke-width="2"/>`)
      for (const point of item.points) parts.push(`<circle cx="${x(point.step).toFixed(1)}" cy="${y(point.value).toFixed(1)}" r="2.5" fill="${item.color}"/>`)
    }
    parts.push(`<text x="${margin.left + plotWidth / 2}" y="${top + panelHeight + 32}" text-anchor="middle" fill="#555">self-play step</text>`)
  })
  parts.push('</svg>')
  return `${parts.join('\n')}\n`
}

const escapeXml = (text: string) => text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;')
const format = (value: number) => (Math.abs(value) >= 10 ? value.toFixed(0) : value.toFixed(2))
