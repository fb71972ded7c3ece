import type { TopLevelSpec } from 'vega-lite'
import { renderVegaLite } from './vega-chart.js'

/**
 * What the arena chart draws of a ratings report: `ArenaReport` of `@ludic/roleplay` (CharacterArena's result) is
 * one; written here as plain data, so this package needs nothing of the package that computes the ratings.
 */
export interface ArenaRatings {
  /** Best first. */
  readonly standings: readonly {
    readonly player: string
    readonly rank: number
    readonly rating: number
    /** The bootstrap interval of the rating, low to high. */
    readonly interval: readonly [number, number]
    readonly games: number
  }[]
  /** Comparisons rated. */
  readonly comparisons: number
  /** The intervals' confidence level, e.g. 0.95. */
  readonly confidence: number
}

/**
 * The Vega-Lite specification of the arena chart: one row per competitor (best at the top), its rating as a
 * point and its bootstrap interval as an error bar, on the Elo scale. Plain JSON: paste it into the Vega
 * editor, or render it with `renderArenaChart`.
 */
export function arenaChartSpecification(report: ArenaRatings, title = 'CharacterArena ratings'): TopLevelSpec {
  const level = `${Number((100 * report.confidence).toFixed(2))}%`
  const values = report.standings.map((standing) => ({
    player: standing.player,
    rank: standing.rank,
    rating: standing.rating,
    lower: standing.interval[0],
    upper: standing.interval[1],
    games: standing.games,
  }))
  const y = { field: 'player', type: 'nominal', sort: { field: 'rank', order: 'ascending' }, title: null } as const
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: title, subtitle: `Bradley–Terry ratings (Elo scale) with ${level} bootstrap intervals, ${report.comparisons} comparisons` },
    width: 480,
    height: { step: 28 },
    background: 'white',
    data: { values },
    encoding: { y },
    layer: [
      {
        mark: { type: 'rule', strokeWidth: 2, color: '#4c78a8' },
        encoding: {
          x: { field: 'lower', type: 'quantitative', scale: { zero: false }, title: 'Elo rating' },
          x2: { field: 'upper' },
        },
      },
      {
        mark: { type: 'point', filled: true, size: 70, color: '#e45756' },
        encoding: {
          x: { field: 'rating', type: 'quantitative' },
          tooltip: [
            { field: 'player' },
            { field: 'rating', format: '.0f' },
            { field: 'lower', format: '.0f' },
            { field: 'upper', format: '.0f' },
            { field: 'games' },
          ],
        },
      },
    ],
  }
}

/**
 * The arena's ratings as an SVG chart, drawn by Vega-Lite (`renderVegaLite`: compiled to Vega and rendered
 * headless in Node, no canvas needed): points at the ratings, error bars over the bootstrap intervals, one row
 * per competitor.
 */
export function renderArenaChart(report: ArenaRatings, title?: string): Promise<string> {
  return renderVegaLite(arenaChartSpecification(report, title))
}
