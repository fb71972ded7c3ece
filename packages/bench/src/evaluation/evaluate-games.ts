import { InvalidArgumentError, parseArgument, policySchema, type PolicyV1 } from '@ludic/core'
import {
  createGame,
  createKuhnNashPolicy,
  createNegotiationHeuristicPolicy,
  createRandomPolicy,
  createTicTacToeMinimaxPolicy,
  evaluationInvalidRewards,
  gameIds,
  gamePrompts,
  games,
} from '@ludic/games'
import type { PromptFunction } from '@ludic/rollout'
import { evaluateAgainst, wilsonInterval, type MatchFigures } from '@ludic/trainer'
import type { TopLevelSpec } from 'vega-lite'
import { z } from 'zod'
import { numberCell, type BenchTable } from '../bench-report.js'
import { checkPolicySource, policySourceShape, resolvePolicy } from './policy-source.js'

/**
 * The built-in opponents: `random` (uniform over the legal moves, every game), `minimax` (perfect TicTacToe),
 * `nash` (a Kuhn Poker Nash equilibrium, OpenSpiel's α, default 0), `heuristic` (Simple Negotiation's
 * value-raising trader). An opponent that does not play a game is left out of that game's rows.
 */
export const builtInOpponentNames = ['random', 'minimax', 'nash', 'heuristic'] as const
export type BuiltInOpponentName = (typeof builtInOpponentNames)[number]

/** The games each built-in opponent plays (`undefined`: every game). */
const opponentGames: Readonly<Record<BuiltInOpponentName, readonly string[] | undefined>> = {
  random: undefined,
  minimax: ['tictactoe-v0'],
  nash: ['kuhn-poker-v1'],
  heuristic: ['simple-negotiation-v1'],
}

const promptTemplateSchema = z.union([
  z.enum(['terse', 'spiral']),
  z.custom<PromptFunction>((value) => typeof value === 'function', 'must be a prompt function (view, history, context) => messages'),
])

export const evaluateGamesOptionsSchema = z
  .strictObject({
    ...policySourceShape,
    /** The games played, by registry id (`@ludic/games`' `createGame`). Default: every two-player game (`gameIds`). */
    games: z
      .array(z.string().min(1))
      .min(1)
      .default(() => [...gameIds]),
    /** Options of each game by id (merged over `evaluationInvalidRewards`: an invalid move loses, −1 / +1). */
    gameOptions: z.record(z.string(), z.record(z.string(), z.unknown())).default({}),
    /** Opponents: built-in names, or `{ name, policy }` for any `PolicyV1` (it plays every game). Default: random, minimax, nash. */
    opponents: z
      .array(z.union([z.enum(builtInOpponentNames), z.strictObject({ name: z.string().min(1), policy: policySchema })]))
      .min(1)
      .default(['random', 'minimax', 'nash']),
    /** Episodes per game and opponent, seats alternating. Default 100. */
    episodes: z.number().int().positive().max(100_000).default(100),
    /** Seeds the episodes, the sampling and the random opponent. Default 0. */
    seed: z.number().int().default(0),
    /** α of the `nash` opponent, in [0, 1/3]. Default 0. */
    nashAlpha: z
      .number()
      .min(0)
      .max(1 / 3)
      .default(0),
    /** The evaluated policy's prompt: `terse` (the observation alone), `spiral` (SPIRAL's), or a prompt function. Default `terse`. */
    prompt: promptTemplateSchema.default('terse'),
    /** Most tokens per move. Default 32. */
    maxTokens: z.number().int().positive().max(32_768).default(32),
    /** Sampling temperature of the evaluated policy. Default 1. */
    temperature: z.number().min(0).max(100).default(1),
  })
  .superRefine(checkPolicySource)
export type EvaluateGamesOptions = z.input<typeof evaluateGamesOptionsSchema>

/** One game against one opponent: the evaluated policy's results with 95% Wilson intervals. */
export interface GameEvaluationRow extends Omit<MatchFigures, 'winRateBySeat'> {
  game: string
  opponent: string
  drawRateInterval: [number, number]
  lossRateInterval: [number, number]
  winRateBySeat: Record<string, number>
  /** Share of episodes cut at a turn limit (the game's `maxTurns` or the rollout's): they count as draws. */
  truncatedRate: number
}

export interface GameEvaluation {
  /** What was evaluated (`checkpoint <path>`, a policy's id…). */
  policy: string
  rows: GameEvaluationRow[]
  /** Opponent and game pairs not played (the opponent does not play that game). */
  skipped: string[]
  episodes: number
  seed: number
}

/**
 * A policy's results in games against opponents: for every game and every opponent that
 * plays it, `episodes` seeded episodes through `@ludic/trainer`'s `evaluateAgainst` (seats alternating, an invalid
 * move loses), with win, draw and loss rates and their 95% Wilson intervals. Without a policy source the uniform
 * random player is evaluated (a calibration: against `random` it wins about as often as it loses).
 */
export async function evaluateGames(
  options: EvaluateGamesOptions,
  context: { signal?: AbortSignal; log?(line: string): void; onProgress?(done: number, total: number, label?: string): void } = {},
): Promise<GameEvaluation> {
  const parsed = parseArgument(evaluateGamesOptionsSchema, options, 'options')
  checkTwoPlayerGames(parsed.games)
  const resolved = (await resolvePolicy(parsed, parsed.seed)) ?? {
    policy: createRandomPolicy({ seed: parsed.seed + 7, id: 'evaluated-random' }),
    label: 'uniform random player (no policy given)',
    dispose: () => {},
  }
  const learnerPrompt = parsed.prompt === 'terse' ? gamePrompts.terse : parsed.prompt === 'spiral' ? gamePrompts.spiral : parsed.prompt
  const rows: GameEvaluationRow[] = []
  const skipped: string[] = []
  try {
    for (const [index, opponent] of parsed.opponents.entries()) {
      context.signal?.throwIfAborted()
      const name = typeof opponent === 'string' ? opponent : opponent.name
      context.onProgress?.(index, parsed.opponents.length, name)
      const plays = typeof opponent === 'string' ? opponentGames[opponent] : undefined
      const played = parsed.games.filter((game) => plays === undefined || plays.includes(game))
      for (const game of parsed.games) if (!played.includes(game)) skipped.push(`${name} does not play ${game}`)
      if (played.length === 0) continue
      const policy = typeof opponent === 'string' ? builtInOpponent(opponent, parsed.seed, parsed.nashAlpha) : opponent.policy
      if (policy.id === resolved.policy.id) {
        throw new InvalidArgumentError({
          argument: 'options.opponents',
          value: name,
          message: `has the evaluated policy's id '${policy.id}'; give it another id`,
        })
      }
      context.log?.(`${resolved.label} against ${name}: ${played.join(', ')}, ${parsed.episodes} episodes each`)
      const match = await evaluateAgainst({
        learner: resolved.policy,
        opponent: policy,
        environments: played.map((game) => () => createGame(game, { ...evaluationInvalidRewards, ...(parsed.gameOptions[game] ?? {}) })),
        episodes: parsed.episodes,
        seed: parsed.seed,
        prompt: learnerPrompt,
        generation: { maxTokens: parsed.maxTokens, temperature: parsed.temperature },
      })
      for (const game of played) {
        const figures = match.byEnvironment[game]
        if (figures === undefined) continue
        const episodes = match.trajectories.filter((trajectory) => trajectory.environmentId === game)
        const truncatedRate = episodes.length === 0 ? 0 : episodes.filter((trajectory) => trajectory.truncated).length / episodes.length
        rows.push({ ...gameRow(game, name, figures), truncatedRate })
      }
    }
    context.onProgress?.(parsed.opponents.length, parsed.opponents.length)
  } finally {
    resolved.dispose()
  }
  return { policy: resolved.label, rows, skipped, episodes: parsed.episodes, seed: parsed.seed }
}

/** Every id must name a registered game with two or more roles (an `InvalidArgumentError` naming the first that does not). */
export function checkTwoPlayerGames(ids: readonly string[], argument = 'options.games'): void {
  const known = games.names()
  for (const id of ids) {
    if (!known.includes(id)) throw new InvalidArgumentError({ argument, value: id, message: `is not a registered game (${known.join(', ')})` })
    if (createGame(id).roles.length < 2) throw new InvalidArgumentError({ argument, value: id, message: 'has one role; games are played against an opponent' })
  }
}

function builtInOpponent(name: BuiltInOpponentName, seed: number, nashAlpha: number): PolicyV1 {
  switch (name) {
    case 'random':
      return createRandomPolicy({ seed: seed + 1, id: 'random' })
    case 'minimax':
      return createTicTacToeMinimaxPolicy({ id: 'minimax' })
    case 'nash':
      return createKuhnNashPolicy({ alpha: nashAlpha, seed: seed + 2, id: 'nash' })
    case 'heuristic':
      return createNegotiationHeuristicPolicy({ seed: seed + 3, id: 'heuristic' })
  }
}

function gameRow(game: string, opponent: string, figures: MatchFigures): Omit<GameEvaluationRow, 'truncatedRate'> {
  const { episodes } = figures
  return {
    game,
    opponent,
    ...figures,
    drawRateInterval: wilsonInterval(Math.round(figures.drawRate * episodes), episodes),
    lossRateInterval: wilsonInterval(Math.round(figures.lossRate * episodes), episodes),
  }
}

const interval = ([low, high]: readonly [number, number]) => `[${low.toFixed(3)}, ${high.toFixed(3)}]`

/** The evaluation as a report table: one row per game and opponent. */
export function gameEvaluationTable(evaluation: GameEvaluation): BenchTable {
  return {
    title: `${evaluation.policy} against opponents (${evaluation.episodes} episodes each, seed ${evaluation.seed})`,
    columns: [
      'game',
      'opponent',
      'episodes',
      'win rate',
      'win 95% interval',
      'draw rate',
      'draw 95% interval',
      'loss rate',
      'loss 95% interval',
      'mean reward',
      'invalid moves',
      'truncated',
    ],
    rows: evaluation.rows.map((row) => [
      row.game,
      row.opponent,
      row.episodes,
      numberCell(row.winRate, 3),
      interval(row.winRateInterval),
      numberCell(row.drawRate, 3),
      interval(row.drawRateInterval),
      numberCell(row.lossRate, 3),
      interval(row.lossRateInterval),
      numberCell(row.meanReward, 3),
      numberCell(row.invalidRate, 3),
      numberCell(row.truncatedRate, 3),
    ]),
    notes: [
      'Seats alternate episode by episode; an invalid move loses the episode (−1 / +1); an episode cut at a turn limit (truncated) is a draw. Intervals: Wilson score, 95%.',
      ...(evaluation.skipped.length === 0 ? [] : [`Not played: ${evaluation.skipped.join('; ')}.`]),
    ],
  }
}

/** The chart: win rate per game and opponent, a point with its 95% interval as an error bar. */
export function gameEvaluationChart(evaluation: GameEvaluation): TopLevelSpec {
  const values = evaluation.rows.map((row) => ({
    match: `${row.game} vs ${row.opponent}`,
    winRate: row.winRate,
    low: row.winRateInterval[0],
    high: row.winRateInterval[1],
    opponent: row.opponent,
  }))
  const y = { field: 'match', type: 'nominal', title: null, sort: null, axis: { labelLimit: 360 } } as const
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: `Win rate: ${evaluation.policy}`, subtitle: `${evaluation.episodes} episodes per game and opponent, 95% Wilson intervals` },
    background: 'white',
    width: 480,
    height: { step: 24 },
    data: { values },
    encoding: { y },
    layer: [
      {
        mark: { type: 'rule', strokeWidth: 2 },
        encoding: {
          x: { field: 'low', type: 'quantitative', scale: { domain: [0, 1] }, title: 'win rate' },
          x2: { field: 'high' },
          color: { field: 'opponent' },
        },
      },
      { mark: { type: 'point', filled: true, size: 60 }, encoding: { x: { field: 'winRate', type: 'quantitative' }, color: { field: 'opponent' } } },
    ],
  }
}
