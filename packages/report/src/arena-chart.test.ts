import { arenaReport } from '@ludic/roleplay'
import { describe, expect, it } from 'vitest'
import { renderArenaChart } from './arena-chart.js'
import { unbalancedTag } from './test/markup.js'

const report = arenaReport(
  [
    ...Array.from({ length: 6 }, () => ({ a: 'Aria <v2>', b: 'baseline', outcome: 'a' as const })),
    ...Array.from({ length: 3 }, () => ({ a: 'baseline', b: 'Aria <v2>', outcome: 'a' as const })),
    ...Array.from({ length: 4 }, () => ({ a: 'baseline', b: 'tiny-1b', outcome: 'a' as const })),
    ...Array.from({ length: 2 }, () => ({ a: 'tiny-1b', b: 'Aria <v2>', outcome: 'tie' as const })),
  ],
  { samples: 100, seed: 2 },
)

describe('renderArenaChart', () => {
  it('draws every competitor with one error bar and one point, as an SVG document', async () => {
    const svg = await renderArenaChart(report)
    expect(svg.startsWith('<svg')).toBe(true)
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true)
    expect(unbalancedTag(svg)).toBeUndefined()
    for (const standing of report.standings) expect(svg).toContain(standing.player.replace('<', '&lt;').replace('>', '&gt;'))
    const group = (role: string) => svg.match(new RegExp(`<g class="mark-${role} role-mark[^"]*"[^>]*>(.*?)</g>`, 's'))?.[1] ?? ''
    expect(group('rule').match(/<line /g)).toHaveLength(report.standings.length)
    expect(group('symbol').match(/<path /g)).toHaveLength(report.standings.length)
    expect(svg).toContain('CharacterArena ratings')
  })
})
