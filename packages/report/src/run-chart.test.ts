import { describe, expect, it } from 'vitest'
import { renderRunChart, runChartSpecification } from './run-chart.js'
import { unbalancedTag } from './test/markup.js'

const series = [
  {
    name: 'exploitability',
    color: '#1f77b4',
    points: [
      { step: 0, value: 0.46 },
      { step: 10, value: 0.2 },
      { step: 20, value: 0.08 },
    ],
    reference: { value: 0.1, label: 'target 0.10' },
  },
  {
    name: 'win rate <vs random>',
    color: '#2ca02c',
    points: [
      { step: 0, value: 0.5 },
      { step: 20, value: 0.7 },
    ],
    range: [0, 1] as const,
  },
]

describe('renderRunChart', () => {
  it('draws one panel per series with its name, points and reference line as a standalone SVG document', async () => {
    const svg = await renderRunChart('a run', series)
    expect(svg).toMatch(/^<svg[^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/)
    expect(svg.trim().endsWith('</svg>')).toBe(true)
    expect(unbalancedTag(svg)).toBeUndefined()
    for (const text of ['a run', 'exploitability', 'win rate &lt;vs random&gt;', 'target 0.10', 'self-play step']) expect(svg).toContain(text)
    expect(svg).not.toMatch(/NaN|Infinity|undefined/)
    // One line per series and one dashed rule for the reference.
    expect(svg.match(/class="mark-line role-mark/g)).toHaveLength(2)
    expect(svg.match(/class="mark-rule role-mark/g)).toHaveLength(1)
  })

  it('handles a series with a single point, none, or non-finite values, and names the x axis as asked', async () => {
    const svg = await renderRunChart(
      'short',
      [
        { name: 'one', color: '#000', points: [{ step: 0, value: 1 }] },
        { name: 'none', color: '#000', points: [] },
        {
          name: 'gaps',
          color: '#000',
          points: [
            { step: 1, value: Number.NaN },
            { step: 2, value: 0.5 },
          ],
        },
      ],
      { xTitle: 'gradient steps' },
    )
    expect(svg).not.toMatch(/NaN|Infinity|undefined/)
    expect(svg).toContain('gradient steps')
    expect(svg).not.toContain('self-play step')
  })

  it('keeps the specification plain JSON, a fixed range as the y domain', () => {
    const spec = runChartSpecification('a run', series)
    expect(JSON.parse(JSON.stringify(spec))).toEqual(spec)
    expect(JSON.stringify(spec)).toContain('"domain":[0,1]')
  })
})
