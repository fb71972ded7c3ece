import { describeMachine } from '../machine.js'
import type { BenchReport } from '../bench-report.js'
import { defineBenchSuite, startClock, type BenchContext } from '../bench-suite.js'
import { currentRuntime } from '@ludic/tensors'
import { evaluateGames, evaluateGamesOptionsSchema, gameEvaluationChart, gameEvaluationTable } from './evaluate-games.js'
import { evaluateKuhn, evaluateKuhnOptionsSchema, kuhnEvaluationChart, kuhnEvaluationTable } from './kuhn-evaluation.js'
import { runTransfer, transferChart, transferOptionsSchema, transferTable } from './transfer.js'

/** The backend a suite ran on: the one started in this process, if any. */
function activeBackend(): string {
  return currentRuntime()?.backend ?? 'none'
}

/**
 * `games`: a policy (a checkpoint, a model with its tokenizer, or any `PolicyV1`) against the random player,
 * TicTacToe minimax and Kuhn Poker's Nash equilibrium (or given opponents) in every chosen game: win, draw and loss
 * rates with 95% Wilson intervals.
 */
export const gamesSuite = defineBenchSuite({
  name: 'games',
  description: 'A checkpoint or any PolicyV1 against random, minimax, Nash or given opponents in the games: win/draw/loss rates with 95% Wilson intervals.',
  optionsSchema: evaluateGamesOptionsSchema,
  async run(options, context: BenchContext): Promise<BenchReport> {
    const clock = startClock()
    const evaluation = await evaluateGames(options, context)
    return {
      suite: 'games',
      title: `Games: ${evaluation.policy}`,
      startedAt: clock.startedAt,
      durationSeconds: clock.seconds(),
      machine: describeMachine(activeBackend()),
      peers: {},
      tables: [gameEvaluationTable(evaluation)],
      chart: gameEvaluationChart(evaluation),
      raw: evaluation,
    }
  },
})

/** `kuhn`: exact Kuhn Poker exploitability of reference policies and, when given, a model or a policy. */
export const kuhnSuite = defineBenchSuite({
  name: 'kuhn',
  description: 'Exact Kuhn Poker exploitability (NashConv / 2) of reference policies and of a checkpoint, model or PolicyV1.',
  optionsSchema: evaluateKuhnOptionsSchema,
  async run(options, context: BenchContext): Promise<BenchReport> {
    const clock = startClock()
    const rows = await evaluateKuhn(options, context)
    return {
      suite: 'kuhn',
      title: 'Kuhn Poker exploitability',
      startedAt: clock.startedAt,
      durationSeconds: clock.seconds(),
      machine: describeMachine(activeBackend()),
      peers: {},
      tables: [kuhnEvaluationTable(rows)],
      chart: kuhnEvaluationChart(rows),
      raw: rows,
    }
  },
})

/** `transfer`: SPIRAL's transfer table on a tiny model from scratch. */
export const transferSuite = defineBenchSuite({
  name: 'transfer',
  description: "SPIRAL's transfer table: self-play on some games, win rates against random on every game beside the model before self-play.",
  optionsSchema: transferOptionsSchema,
  async run(options, context: BenchContext): Promise<BenchReport> {
    const clock = startClock()
    const result = await runTransfer(options, context)
    return {
      suite: 'transfer',
      title: 'Transfer of self-play across games (SPIRAL)',
      startedAt: clock.startedAt,
      durationSeconds: clock.seconds(),
      machine: describeMachine(result.backend),
      peers: {},
      tables: [transferTable(result)],
      chart: transferChart(result),
      raw: { rows: result.rows, warmUpNll: result.warmUpNll, trainingInvalidRate: result.trainingInvalidRate, options: result.options },
    }
  },
})
