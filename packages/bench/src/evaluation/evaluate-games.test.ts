import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { InvalidArgumentError, ParseError, turnContextOf, type TurnView } from '@ludic/core'
import { createModel, saveModel } from '@ludic/model'
import { initTensors } from '@ludic/tensors'
import { trainBpe } from '@ludic/tokenizer'
import * as tf from '@tensorflow/tfjs-core'
import { createTicTacToeMinimaxPolicy, createRandomPolicy, gameIds, kuhnTerseObservation } from '@ludic/games'
import { evaluateAgainst } from '@ludic/trainer'
import { describe, expect, it } from 'vitest'
import { createGame } from '@ludic/games'
import { runBenchSuite } from '../bench-suites.js'
import { benchReportMarkdown } from '../report-markdown.js'
import { evaluateGames, gameEvaluationTable } from './evaluate-games.js'

describe('evaluateGames', () => {
  it('plays a policy against each opponent in the games it plays, with rates whose Wilson intervals contain them', async () => {
    const evaluation = await evaluateGames({
      policy: createRandomPolicy({ seed: 5, id: 'scripted' }),
      games: ['tictactoe-v0', 'kuhn-poker-v1'],
      opponents: ['random', 'minimax', 'nash'],
      episodes: 12,
      seed: 3,
    })
    expect(evaluation.policy).toBe('scripted')
    expect(evaluation.rows.map((row) => `${row.game}/${row.opponent}`).sort()).toEqual(
      ['kuhn-poker-v1/nash', 'kuhn-poker-v1/random', 'tictactoe-v0/minimax', 'tictactoe-v0/random'].sort(),
    )
    expect(evaluation.skipped).toEqual(['minimax does not play kuhn-poker-v1', 'nash does not play tictactoe-v0'])
    for (const row of evaluation.rows) {
      expect(row.episodes).toBe(12)
      expect(row.winRate + row.drawRate + row.lossRate).toBeCloseTo(1, 10)
      for (const [rate, [low, high]] of [
        [row.winRate, row.winRateInterval],
        [row.drawRate, row.drawRateInterval],
        [row.lossRate, row.lossRateInterval],
      ] as const) {
        expect(low).toBeLessThanOrEqual(rate)
        expect(rate).toBeLessThanOrEqual(high)
        expect(high - low).toBeGreaterThan(0)
      }
    }
    // A perfect player never loses TicTacToe.
    const minimax = evaluation.rows.find((row) => row.opponent === 'minimax')!
    expect(minimax.winRate).toBe(0)
    // TicTacToe ends within 9 moves: never cut at a turn limit.
    expect(minimax.truncatedRate).toBe(0)
    const table = gameEvaluationTable(evaluation)
    expect(table.rows).toHaveLength(4)
    expect(table.columns).toContain('win 95% interval')
    expect(table.columns).toContain('truncated')
    expect(table.notes?.join(' ')).toContain('Not played')
  })

  it('is reproducible by seed', async () => {
    const run = () =>
      evaluateGames({ policy: createRandomPolicy({ seed: 1, id: 'scripted' }), games: ['kuhn-poker-v1'], opponents: ['random'], episodes: 10, seed: 4 })
    expect((await run()).rows).toEqual((await run()).rows)
  })

  it('takes any PolicyV1 as an opponent and refuses bad input by name', async () => {
    const evaluation = await evaluateGames({
      games: ['tictactoe-v0'],
      opponents: [{ name: 'perfect', policy: createTicTacToeMinimaxPolicy({ id: 'perfect' }) }],
      episodes: 4,
    })
    expect(evaluation.policy).toMatch(/random/)
    expect(evaluation.rows[0]!.opponent).toBe('perfect')
    await expect(evaluateGames({ games: ['chess-v9'], episodes: 2 })).rejects.toSatisfy(InvalidArgumentError.isInstance)
    await expect(evaluateGames({ games: ['game-of-24-v1'], episodes: 2 })).rejects.toThrow(/one role/)
    await expect(evaluateGames({ episodes: 0 })).rejects.toThrow(/options\.episodes/)
    await expect(runBenchSuite('games', { episodes: 0, opponents: ['grandmaster'] })).rejects.toThrow(/opponents\[0\][\s\S]*episodes/)
    await expect(evaluateGames({ checkpoint: '/nowhere', policy: createRandomPolicy() })).rejects.toThrow(/one of checkpoint/)
  })

  it('runs as the games suite: a table with intervals, a chart, the Markdown', async () => {
    const report = await runBenchSuite('games', { games: ['kuhn-poker-v1'], opponents: ['nash'], episodes: 6 })
    expect(report.suite).toBe('games')
    expect(report.tables[0]!.rows).toHaveLength(1)
    expect(report.chart).toBeDefined()
    expect(benchReportMarkdown(report)).toMatch(/\| kuhn-poker-v1 \| nash \| 6 \|/)
    await expect(runBenchSuite('games', { episodes: -1 })).rejects.toSatisfy(ParseError.isInstance)
  })
})

describe('evaluateGames on a checkpoint directory', () => {
  it('loads config.json, model.safetensors and tokenizer.json, plays, and frees the model it loaded', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'ludic-bench-checkpoint-'))
    try {
      await initTensors({ backend: 'wasm', verbose: false })
      const tokenizerJson = trainBpe(['[check] [bet] [fold] [call] Your card is: K'], { vocabSize: 270, specialTokens: ['<|end|>'] })
      await writeFile(join(directory, 'tokenizer.json'), JSON.stringify(tokenizerJson))
      await writeFile(join(directory, 'tokenizer_config.json'), JSON.stringify({ eos_token: '<|end|>' }))
      const model = createModel('tiny', { vocabSize: 270, seed: 2 })
      await saveModel(model, directory)
      model.dispose()
      const before = tf.memory().numTensors
      const evaluation = await evaluateGames({
        checkpoint: directory,
        games: ['kuhn-poker-v1'],
        opponents: ['nash'],
        episodes: 4,
        maxTokens: 4,
        backend: 'wasm',
      })
      expect(evaluation.policy).toBe(`checkpoint ${directory}`)
      expect(evaluation.rows).toHaveLength(1)
      // An untrained model's moves are invalid: it loses them.
      expect(evaluation.rows[0]!.invalidRate).toBeGreaterThan(0)
      expect(tf.memory().numTensors).toBe(before)
      await expect(evaluateGames({ checkpoint: join(directory, 'missing'), episodes: 1 })).rejects.toThrow(/tokenizer\.json|config\.json/)
    } finally {
      await rm(directory, { recursive: true, force: true, maxRetries: 5 })
    }
  })
})

describe('the random opponent', () => {
  it("plays only the environment's legal actions in every game, read from the turn view", async () => {
    // Random against random: every move of the opponent seat is one of the legal actions the view listed.
    for (const game of gameIds) {
      const match = await evaluateAgainst({
        learner: createRandomPolicy({ seed: 1, id: 'first' }),
        opponent: createRandomPolicy({ seed: 2, id: 'random' }),
        environments: [() => createGame(game)],
        episodes: 6,
        seed: 0,
      })
      for (const trajectory of match.trajectories) {
        for (const turn of trajectory.turns) {
          expect(turn.invalidAction).toBe(false)
          if (turn.legalActions !== undefined) expect(turn.legalActions).toContain(turn.action)
        }
      }
    }
  })

  it('reads the legal actions the turn view gives even when the prompt it is shown does not list them', async () => {
    // A terse Kuhn Poker prompt lists the moves without "available actions": the request's turn gives them.
    const environment = createGame('kuhn-poker-v1')
    const view: TurnView = environment.reset(0)
    const messages = [{ role: 'user' as const, content: kuhnTerseObservation(view.observation) }]
    const policy = createRandomPolicy({ seed: 3 })
    const turn = turnContextOf('kuhn-poker-v1', view)
    const completions = await policy.generate(Array.from({ length: 20 }, (_, seed) => ({ messages, maxTokens: 8, seed, turn })))
    for (const completion of completions) expect(view.legalActions).toContain(completion.text)
    expect(new Set(completions.map((completion) => completion.text)).size).toBe(view.legalActions!.length)
  })
})
