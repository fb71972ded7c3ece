/**
 * Self-play on Simple Negotiation (SPIRAL's negotiation game, on a model made from scratch): train a
 * byte-level BPE on the game's terse text, create a `tiny` transformer, warm it up on random legal play
 * (SFT) so it writes well-formed offers, `[Accept]` and `[Deny]`, then let it play against itself with
 * role-conditioned advantages (RAE) and PPO. Before and after: games against the heuristic trader
 * (`createNegotiationHeuristicPolicy`) and against a random legal player — mean change in inventory value,
 * win rate, deal rate, invalid rate. Optionally the heuristic, the random player or the model's own past snapshots
 * (the trainer's league) sit in one seat of a share of the training games.
 */
import { createRae } from '@ludic/advantages'
import { parseArgument } from '@ludic/core'
import { createNegotiationHeuristicPolicy, createRandomPolicy, createSimpleNegotiation } from '@ludic/games'
import { createLocalPolicy, createModel } from '@ludic/model'
import { runExampleMain, type EvaluationSeries, type ExampleReport } from '@ludic/report'
import { createRlTrainer } from '@ludic/trainer'
import {
  exampleLeagueOptions,
  exampleOptionsSchema,
  leagueOpponents,
  leagueRatingsOf,
  opponentSharesAtMostOne,
  startExampleRun,
  writeLeagueRatingsChart,
  type LeagueRatings,
} from '@ludic/trainer/example'
import { z } from 'zod'
import {
  chatTemplate,
  opponents,
  playAgainst,
  promptOf,
  randomPlayExamples,
  randomPlayObservations,
  trainNegotiationTokenizer,
  type MatchFigures,
} from './negotiation-setup.js'

/**
 * The shared example options (`exampleOptionsSchema`: steps, warm-up, batch, learning rates, KL, evaluations, run)
 * with this example's defaults, and its own.
 */
export const mainOptionsSchema = exampleOptionsSchema({ sftSteps: 150, episodesPerStep: 32, learningRate: 1e-3, evaluateEvery: 20 })
  .extend({
    /** Random games whose states make the warm-up's prompts (and the tokenizer's corpus). */
    warmupGames: z.number().int().positive().default(64),
    /** `[Accept]` and `[Deny]` appear this many times per state in the warm-up, each offer once. */
    answerWeight: z.number().int().positive().default(4),
    /** Actions per game (alternating, player0 first; SPIRAL plays 10). */
    turns: z.number().int().positive().default(6),
    /** The training game's reward for an invalid move (the opponent gets +0.5); below −1, the worst win/loss outcome. */
    invalidPenalty: z.number().max(0).default(-1.5),
    /** Most tokens per move. */
    maxTokens: z.number().int().positive().default(16),
    /**
     * Share of the training games in which one seat (drawn per game) is the heuristic trader
     * (`createNegotiationHeuristicPolicy`, a scripted opponent in the trainer's `opponents`; only the model's moves are
     * trained on). It decides from the turn's structured state, so the terse prompt does not hinder it. 0 (the default):
     * none. With the other shares at most 1 in all.
     */
    heuristicOpponentShare: z.number().min(0).max(1).default(0),
    /** Share of the training games in which one seat is the uniform random legal player. 0 (the default): none. */
    randomOpponentShare: z.number().min(0).max(1).default(0),
    /** The league (`exampleLeagueOptions`): its Bradley–Terry ratings end in `report.json`'s `leagueRatings` and `league-ratings.svg`. */
    ...exampleLeagueOptions,
  })
  // Refused when parsed, before the warm-up: the shares of one game's seat add up to at most 1 (the rest is self-play).
  .superRefine(opponentSharesAtMostOne(['heuristicOpponentShare', 'randomOpponentShare', 'leagueShare']))
export type MainOptions = z.input<typeof mainOptionsSchema>

const opponentNames = ['heuristic', 'random'] as const
/** The figures against each opponent at a step. */
export type Evaluation = { step: number } & Record<(typeof opponentNames)[number], MatchFigures>
/** `report.json`: the options, every evaluation, the time taken, and with the league its ratings at the end. */
export type Report = ExampleReport<Evaluation> & {
  /**
   * With the league (`leagueShare` > 0): the pool's Bradley–Terry ratings at the end of training (Elo scale, mean 1000),
   * each snapshot by the step it was taken after, the learner's, and the scripted opponents' that trained beside the
   * pool (`heuristic-opponent`, `random-opponent`); charted in `league-ratings.svg`.
   */
  leagueRatings?: LeagueRatings
}

/** The chart: the value change per game against each opponent, the win rate against the heuristic, the invalid rate. */
const chart: { title: string; series: EvaluationSeries<Evaluation>[] } = {
  title: 'Simple Negotiation self-play (RAE + PPO), tiny model from scratch',
  series: [
    {
      name: 'value change per game vs heuristic',
      color: '#1f77b4',
      value: (e) => e.heuristic.meanValueChange,
      range: [-60, 60],
      reference: { value: 0, label: 'no trade' },
    },
    {
      name: 'value change per game vs random',
      color: '#2ca02c',
      value: (e) => e.random.meanValueChange,
      range: [-60, 60],
      reference: { value: 0, label: 'no trade' },
    },
    { name: 'win rate vs heuristic', color: '#d62728', value: (e) => e.heuristic.winRate, range: [0, 1] },
    { name: 'invalid rate (both evaluations)', color: '#9467bd', value: (e) => (e.heuristic.invalidRate + e.random.invalidRate) / 2, range: [0, 1] },
  ],
}

export async function main(options: MainOptions = {}): Promise<Report> {
  const parsed = parseArgument(mainOptionsSchema, options, 'options')
  const { log, seed, turns } = parsed
  const run = await startExampleRun(new URL('..', import.meta.url), parsed)

  // 1. A tokenizer trained on the game's terse text, and a tiny model from scratch.
  const observations = randomPlayObservations(parsed.warmupGames, turns, seed)
  const tokenizer = trainNegotiationTokenizer(observations, parsed.vocabSize)
  const model = createModel('tiny', { vocabSize: tokenizer.vocabSize, seed })
  const learner = createLocalPolicy({ model, tokenizer, chatTemplate, maxBatch: 256, seed, id: 'learner' })
  const evaluate = async (step: number): Promise<Evaluation> => {
    const match = { episodes: parsed.evaluationEpisodes, turns, seed: seed + 1 + step, maxTokens: parsed.maxTokens }
    const { heuristic, random } = opponents(seed + 1 + step)
    return { step, heuristic: await playAgainst(learner, heuristic, match), random: await playAgainst(learner, random, match) }
  }

  // 2. SFT warm-up on random legal play, so moves are well-formed; then "before" is measured.
  const before = await run.beforeTraining(async () => {
    const examples = randomPlayExamples(observations, parsed.answerWeight)
    const warmUp = await run.warmUp({ model, tokenizer, examples, batchSize: 32 })
    log(`sft: ${parsed.sftSteps} steps on ${examples.length} examples, nll ${warmUp.nll?.toFixed(3) ?? 'n/a'}`)
    return evaluate(0)
  })
  log(`before self-play: ${describeEvaluation(before)}`)

  // 3. Self-play with RAE and PPO (one seat of a share of the games played by the opponents asked for); evaluations every few steps.
  const trainingOpponents = [
    ...(parsed.heuristicOpponentShare > 0
      ? [{ policy: createNegotiationHeuristicPolicy({ seed: seed + 7, id: 'heuristic-opponent' }), share: parsed.heuristicOpponentShare }]
      : []),
    ...(parsed.randomOpponentShare > 0 ? [{ policy: createRandomPolicy({ seed: seed + 7, id: 'random-opponent' }), share: parsed.randomOpponentShare }] : []),
    ...leagueOpponents(parsed),
  ]
  const trainer = createRlTrainer({
    model,
    tokenizer,
    environments: [() => createSimpleNegotiation({ turns, invalidPenalty: parsed.invalidPenalty })],
    ...(trainingOpponents.length > 0 ? { opponents: trainingOpponents } : {}),
    prompt: (view) => promptOf(view),
    chatTemplate,
    ...run.trainerConfig({ maxTokens: parsed.maxTokens, evaluate }),
    advantage: createRae(),
  })
  await trainer.run({ steps: parsed.steps, progress: parsed.progress })
  const { evaluations, after } = await run.evaluations(before, trainer, evaluate)
  const leagueRatings = parsed.leagueShare > 0 ? leagueRatingsOf(trainer.history.at(-1)) : undefined
  trainer.dispose()
  model.dispose()

  // 4. The report: JSON and a chart (and the league's ratings).
  const report: Report = await run.writeReport(
    { options: parsed, before, after, evaluations, ...(leagueRatings === undefined ? {} : { leagueRatings }) },
    chart,
  )
  if (leagueRatings !== undefined) await writeLeagueRatingsChart(run.runDirectory, leagueRatings)
  log(`after ${trainer.stepCount} self-play steps: ${describeEvaluation(after)}`)
  log(`${report.seconds.toFixed(0)} s on ${run.backend}; report, metrics and chart in ${run.runDirectory}`)
  return report
}

const pct = (value: number) => `${(100 * value).toFixed(1)}%`
const signed = (value: number) => `${value >= 0 ? '+' : ''}${value.toFixed(1)}`

/** An evaluation's line in the log: against each opponent, the value changes, the win rate with its interval, deals and invalid moves. */
export function describeEvaluation(evaluation: Evaluation): string {
  return opponentNames
    .map((name) => {
      const figures = evaluation[name]
      // A run resumed from a before.json written before the intervals were recorded has none: the rate alone.
      const interval = (figures as Partial<typeof figures>).winRateInterval
      const bounds = interval === undefined ? '' : ` [${pct(interval.low)}, ${pct(interval.high)}]`
      return `vs ${name}: value ${signed(figures.meanValueChange)} (opponent ${signed(figures.opponentValueChange)}), win ${pct(figures.winRate)}${bounds}, deals ${pct(figures.dealRate)}, invalid ${pct(figures.invalidRate)}`
    })
    .join('; ')
}

runExampleMain(import.meta.url, main)
