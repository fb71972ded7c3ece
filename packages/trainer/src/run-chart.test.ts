import { describe, expect, it } from 'vitest'
import { renderRunChart } from './run-chart.js'

describe('renderRunChart', () => {
  it('draws one panel per series with its name, points and reference line as standalone SVG', () => {
    const svg = renderRunChart('a run', [
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
        name: 'win rate',
        color: '#2ca02c',
        points: [
          { step: 0, value: 0.5 },
          { step: 20, value: 0.7 },
        ],
        range: [0, 1],
      },
    ])
    expect(svg).toMatch(/^<svg[^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/)
    expect(svg.trim().endsWith('</svg>')).toBe(true)
    for (const text of ['a run', 'exploitability', 'win rate', 'target 0.10']) expect(svg).toContain(text)
    expect(svg).not.toMatch(/NaN|Infinity|undefined/)
  })

  it('handles a series with a single point or none', () => {
    const svg = renderRunChart('short', [
      { name: 'one', color: '#000', points: [{ step: 0, value: 1 }] },
      { name: 'none', color: '#000', points: [] },
    ])
    expect(svg).not.toMatch(/NaN|Infinity|undefined/)
  })
})
