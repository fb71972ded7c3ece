import { describeMachine } from '../machine.js'
import type { BenchReport, BenchTable } from '../bench-report.js'
import { defineBenchSuite, startClock, type BenchContext } from '../bench-suite.js'
import { currentRuntime } from '@ludic/tensors'
import { evaluateGames, evaluateGamesOptionsSchema, gameEvaluationChart, gameEvaluationTable } from './evaluate-games.js'
import { evaluateKuhn, evaluateKuhnOptionsSchema, kuhnEvaluationChart, kuhnEvaluationTable } from './kuhn-evaluation.js'
import { runTransfer, transferChart, transferOptionsSchema, transferTable } from './transfer.js'

/** The backend a suite ran on: the one started in this process, if any. */
function activeBackend(): string {
  return currentRuntime()?.backend ?? 'none'
}

/** An evaluation suite's report: one table and its chart, no peers. */
function evaluationReport(
  suite: string,
  title: string,
  clock: ReturnType<typeof startClock>,
  backend: string,
  content: { table: BenchTable; chart: NonNullable<BenchReport['chart']>; raw: unknown },
): BenchReport {
  return {
    suite,
    title,
    startedAt: clock.startedAt,
    durationSeconds: clock.seconds(),
    machine: describeMachine(backend),
    peers: {},
    tables: [content.table],
    chart: content.chart,
    raw: content.raw,
  }
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
    return evaluationReport('games', `Games: ${evaluation.policy}`, clock, activeBackend(), {
      table: gameEvaluationTable(evaluation),
      chart: gameEvaluationChart(evaluation),
      raw: evaluation,
    })
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
    return evaluationReport('kuhn', 'Kuhn Poker exploitability', clock, activeBackend(), {
      table: kuhnEvaluationTable(rows),
      chart: kuhnEvaluationChart(rows),
      raw: rows,
    })
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
    return evaluationReport('transfer', 'Transfer of self-play across games (SPIRAL)', clock, result.backend, {
      table: transferTable(result),
      chart: transferChart(result),
      raw: { rows: result.rows, warmUpNll: result.warmUpNll, trainingInvalidRate: result.trainingInvalidRate, options: result.options },
    })
  },
})
