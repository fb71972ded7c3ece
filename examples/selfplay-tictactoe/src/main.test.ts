import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createRandom, InvalidArgumentError } from '@ludic/core'
import { parseCommandLineOptions } from '@ludic/report'
import { initTensors } from '@ludic/tensors'
import * as tf from '@tensorflow/tfjs-core'
import { afterAll, describe, expect, it } from 'vitest'
import { fitProbe } from './fit-probe.js'
import { whereLost } from './where-lost.js'
import { main, mainOptionsSchema, type MainOptions } from './main.js'
import {
  bestRepliesToRandom,
  chatTemplate,
  createOpportunistPolicy,
  createTacticalPolicy,
  nonTerminalPositions,
  opportunistMove,
  randomPlayExamples,
  tacticalMove,
  terseBoard,
  trainTicTacToeTokenizer,
} from './tictactoe-setup.js'

const directories: string[] = []
afterAll(async () => {
  for (const directory of directories) await rm(directory, { recursive: true, force: true, maxRetries: 5 })
})

/** A board from nine characters, `O`, `X` or anything else for an empty cell: `board('OO.XX....')`. */
function board(text: string): ('O' | 'X' | '')[] {
  return [...text].map((cell) => (cell === 'O' || cell === 'X' ? cell : ''))
}

describe('selfplay-tictactoe setup', () => {
  it('the tactical player wins when it can, else blocks, else moves at random among the empty cells', async () => {
    const random = createRandom(1)
    // O to move with O0 O1: it wins at 2 (though X also threatens 3-4-5).
    expect(tacticalMove(board('OO.XX....'), random)).toBe(2)
    // O to move, no win, X threatens 3-4-5: it blocks at 5.
    expect(tacticalMove(board('O..XX...O'), random)).toBe(5)
    // Nothing to win or block: a random empty cell, every one of them over many draws.
    const seen = new Set(Array.from({ length: 200 }, () => tacticalMove(board('O...X....'), random)))
    expect(seen).toEqual(new Set([1, 2, 3, 5, 6, 7, 8]))
    const policy = createTacticalPolicy({ seed: 3, id: 'tactical' })
    const [completion] = await policy.generate([{ messages: [{ role: 'user', content: 'board' }], turn: { state: { board: board('O..XX...O') } } } as never])
    expect(completion!.text).toBe('[5]')
  })

  it('the opportunist player wins when it can and otherwise moves at random, never blocking', async () => {
    const random = createRandom(2)
    // O to move with O0 O1: it wins at 2.
    expect(opportunistMove(board('OO.XX....'), random)).toBe(2)
    // O to move, no win, X threatens 3-4-5: no block — every empty cell over many draws, 5 among them.
    const seen = new Set(Array.from({ length: 300 }, () => opportunistMove(board('O..XX...O'), random)))
    expect(seen).toEqual(new Set([1, 2, 5, 6, 7]))
    const policy = createOpportunistPolicy({ seed: 3, id: 'opportunist' })
    const [completion] = await policy.generate([{ messages: [{ role: 'user', content: 'board' }], turn: { state: { board: board('OO.XX....') } } } as never])
    expect(completion!.text).toBe('[2]')
  })

  it('renders the terse prompt, makes each move one token, and lists every position with each legal move', () => {
    expect(terseBoard(['O', '', 'X', '', 'O', '', '', '', ''])).toBe('O01X2\n3O45\n678\nX')
    const observation = "Current Board:\n\n O | 1 | X \n---+---+---\n 3 | O | 5 \n---+---+---\n 6 | 7 | 8 \n\nAvailable Moves: '[1]'"
    expect(chatTemplate([{ role: 'user', content: observation }])).toBe('O01X2\n3O45\n678\nX>')
    const tokenizer = trainTicTacToeTokenizer(300)
    for (let cell = 0; cell < 9; cell++) expect(tokenizer.encode(`[${cell}]`, { addSpecialTokens: false })).toHaveLength(1)
    expect(tokenizer.encode('O01X2\n3O45\n678\nX>', { addSpecialTokens: false })).toHaveLength(14) // 9 cells, 3 newlines, the mark, '>'
    expect(nonTerminalPositions()).toHaveLength(4520)
    expect(randomPlayExamples()[0]).toEqual({ prompt: '012\n345\n678\nO>', response: '[0]' })
  })
})

/** The games a run logged (`trajectories.jsonl`), one object a line. */
async function trainingGames<T>(runDirectory: string): Promise<T[]> {
  return (await readFile(join(runDirectory, 'trajectories.jsonl'), 'utf8'))
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as T)
}

/** One self-play step with the smallest settings on WebAssembly (4 games, 2-step warm-up), `options` on top. */
async function oneStepRun(options: MainOptions) {
  const runDirectory = await mkdtemp(join(tmpdir(), 'ludic-selfplay-tictactoe-'))
  directories.push(runDirectory)
  const report = await main({
    steps: 1,
    sftSteps: 2,
    sftBatchSize: 16,
    episodesPerStep: 4,
    miniBatchSize: 32,
    evaluationEpisodes: 4,
    minimaxEpisodes: 2,
    checkpointEvery: 0,
    exactEvaluation: false,
    runDirectory,
    backend: 'wasm',
    progress: false,
    log: () => {},
    ...options,
  })
  return { report, runDirectory }
}

describe('the fit probe', () => {
  it('knows the best replies to the random player exactly', () => {
    const replies = bestRepliesToRandom()
    expect(replies).toHaveLength(4520)
    expect(replies.reduce((total, reply) => total + reply.moves.length, 0)).toBe(8130)
    // The empty board: a corner, winning 191/192 of the games as O.
    expect(replies[0]!.moves).toEqual([0, 2, 6, 8])
    expect(replies[0]!.winChance).toBeCloseTo(191 / 192, 12)
    // As X, after each of O's nine first moves (uniform): 93.9 %.
    const asX = replies.filter((reply) => reply.board.filter(Boolean).length === 1)
    expect(asX).toHaveLength(9)
    expect(asX.reduce((total, reply) => total + reply.winChance, 0) / 9).toBeCloseTo(0.9386, 4)
    // Where the mover can win at once, only winning moves are best: O0 O1 X3 X4, O to move wins at 2.
    const position = replies.find((reply) => reply.board.join(',') === 'O,O,,X,X,,,,')
    expect(position).toMatchObject({ moves: [2], winChance: 1 })
  })

  it('trains on them from scratch and plays the random player, refusing heads that do not split the width', async () => {
    const lines: string[] = []
    await initTensors({ backend: 'wasm', verbose: false })
    const tensorsBefore = tf.memory().numTensors
    const points = await fitProbe({ steps: 2, evaluateEvery: 1, evaluationEpisodes: 4, attentionHeads: 32, backend: 'wasm', log: (line) => lines.push(line) })
    expect(points.map((point) => point.step)).toEqual([1, 2])
    for (const point of points) {
      expect(point.loss).toBeGreaterThan(0)
      for (const rate of [point.sampledWinRate, point.greedyWinRate, point.greedyLossRate]) expect(rate).toBeGreaterThanOrEqual(0)
      expect(point.greedyWinRate + point.greedyLossRate).toBeLessThanOrEqual(1)
    }
    expect(lines).toHaveLength(2)
    expect(tf.memory().numTensors).toBe(tensorsBefore) // the model and the optimizer freed
    const refused = await fitProbe({ attentionHeads: 5, backend: 'wasm' }).catch((error: unknown) => error)
    expect(InvalidArgumentError.isInstance(refused) && refused.argument).toBe('options.attentionHeads')
  })
})

describe('selfplay-tictactoe', () => {
  it('runs with tiny settings and writes the report, the metrics and the chart', async () => {
    const runDirectory = await mkdtemp(join(tmpdir(), 'ludic-selfplay-tictactoe-'))
    directories.push(runDirectory)
    const lines: string[] = []
    const report = await main({
      steps: 2,
      sftSteps: 5,
      sftBatchSize: 16,
      episodesPerStep: 8,
      miniBatchSize: 32,
      evaluateEvery: 1,
      evaluationEpisodes: 8,
      minimaxEpisodes: 4,
      leagueShare: 0.25,
      leagueEvery: 1,
      checkpointEvery: 1,
      runDirectory,
      backend: 'wasm',
      progress: false,
      log: (line) => lines.push(line),
    })
    expect(report.evaluations.map((evaluation) => evaluation.step)).toEqual([0, 1, 2])
    for (const evaluation of report.evaluations) {
      for (const rate of [
        evaluation.winRate,
        evaluation.drawRate,
        evaluation.lossRate,
        evaluation.invalidRate,
        evaluation.greedyWinRate,
        evaluation.greedyInvalidRate,
      ]) {
        expect(rate).toBeGreaterThanOrEqual(0)
        expect(rate).toBeLessThanOrEqual(1)
      }
      expect(evaluation.winRate + evaluation.drawRate + evaluation.lossRate).toBeCloseTo(1, 9)
      // The 95% Wilson interval of the win rate (400 games would give ±~4.5 points).
      expect(evaluation.winRateInterval.low).toBeLessThanOrEqual(evaluation.winRate)
      expect(evaluation.winRateInterval.high).toBeGreaterThanOrEqual(evaluation.winRate)
      expect(evaluation.winRateInterval.high - evaluation.winRateInterval.low).toBeGreaterThan(0)
    }
    for (const play of [report.minimaxAfter.sampled, report.minimaxAfter.greedy]) expect(play.winRate + play.drawRate + play.lossRate).toBeCloseTo(1, 9)
    // Exactly against the random player: each seat's outcomes add up to 1, and its win and the win chance it lost to the
    // best replies' (99.48 % as O, 93.86 % as X).
    for (const play of [report.exactAfter!.sampled, report.exactAfter!.greedy]) {
      for (const [seat, best] of [
        [play.asO, 0.99479],
        [play.asX, 0.93862],
      ] as const) {
        expect(seat.win + seat.draw + seat.loss).toBeCloseTo(1, 9)
        expect(seat.win + seat.lostWinChance.canWin + seat.lostWinChance.mustBlock + seat.lostWinChance.other).toBeCloseTo(best, 4)
      }
    }
    expect(lines.at(-2)).toMatch(/^exactly, vs random: sampled win [\d.]+ % \(as O/)
    // The diagnostic of where the win chance goes, from the run's last checkpoint: the same exact figures, split by bins.
    const whereLines: string[] = []
    const where = await whereLost({ runDirectory, backend: 'wasm', top: 2, log: (line) => whereLines.push(line) })
    expect(where.step).toBe(2)
    expect(where.play.winRate).toBeCloseTo(report.exactAfter!.sampled.winRate, 6)
    for (const [seat, exact] of [
      [where.asO, report.exactAfter!.sampled.asO],
      [where.asX, report.exactAfter!.sampled.asX],
    ] as const) {
      for (const category of ['canWin', 'mustBlock', 'other'] as const)
        expect(seat.bins[category].reduce((total, value) => total + value, 0)).toBeCloseTo(exact.lostWinChance[category], 6)
      expect(seat.worst).toHaveLength(2)
    }
    expect(whereLines[0]).toMatch(/^checkpoint 2: exactly [\d.]+ % against random/)
    await expect(whereLost({ runDirectory, step: 7, backend: 'wasm' })).rejects.toThrow(/options\.step.*the run's: 1, 2/)
    const saved = JSON.parse(await readFile(join(runDirectory, 'report.json'), 'utf8')) as { after: { step: number }; backend: string }
    expect(saved.after.step).toBe(2)
    expect(saved.backend).toBe('wasm')
    const metrics = (await readFile(join(runDirectory, 'metrics.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, number>)
    expect(metrics.map((record) => record.step)).toEqual([1, 2])
    expect(metrics[0]!['eval/winRate']).toBeTypeOf('number')
    expect(metrics[0]!['eval/greedyWinRate']).toBeTypeOf('number')
    expect(metrics.map((record) => record['league/members'])).toEqual([1, 2]) // the league: a snapshot at the start and after step 1
    const chart = await readFile(join(runDirectory, 'chart.svg'), 'utf8')
    expect(chart).toMatch(/^<svg[^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/)
    expect(chart).toContain('win rate vs random')
    expect(chart).toContain('invalid')
    expect(lines.at(-3)).toMatch(/^after 2 self-play steps: vs random win [\d.]+% \[[\d.]+%, [\d.]+%\]/)
    // The pool's ratings at the end: as the last step's metrics have them, snapshots by step, and charted.
    const last = metrics.at(-1)!
    const rated = Object.keys(last).filter((key) => /^league\/rating\/snapshot-\d+$/.test(key))
    expect(rated.length).toBeGreaterThan(0)
    expect(report.leagueRatings!.snapshots).toEqual(
      rated.map((key) => ({ step: Number(key.slice('league/rating/snapshot-'.length)), rating: last[key] })).sort((a, b) => a.step - b.step),
    )
    expect(report.leagueRatings!.learner).toBeTypeOf('number')
    expect(report.leagueRatings!.learner).toBe(last['league/rating/learner'])
    const ratingsChart = await readFile(join(runDirectory, 'league-ratings.svg'), 'utf8')
    expect(ratingsChart).toMatch(/^<svg/)
    expect(ratingsChart).toContain('snapshot taken after step')
  })

  it('collects on the generation engine, trains with GAE and a critic, and plays the minimax opponent when asked', async () => {
    const { report, runDirectory } = await oneStepRun({
      engine: true,
      advantage: 'gae',
      critic: 'shared',
      gaeLambda: 0.9,
      randomOpponentShare: 0,
      minimaxOpponentShare: 1,
    })
    expect(report.options).toMatchObject({ engine: true, advantage: 'gae', critic: 'shared', gaeLambda: 0.9, minimaxOpponentShare: 1 })
    const [metrics] = (await readFile(join(runDirectory, 'metrics.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, number>)
    expect(metrics!.valueLoss).toBeTypeOf('number') // the critic was trained
    expect(await readFile(join(runDirectory, 'chart.svg'), 'utf8')).toContain('GAE + critic + PPO')
    const games = await trainingGames<{ turns: { policyId: string }[] }>(runDirectory)
    expect(games).toHaveLength(4)
    // Minimax in one seat of every training game (the learner's first move may end a game before minimax moves).
    expect(new Set(games.flatMap((game) => game.turns.map((turn) => turn.policyId)))).toEqual(new Set(['learner', 'minimax-opponent']))
  })

  it('refuses critic options with RAE, naming them', async () => {
    for (const [name, value] of [
      ['critic', 'separate'],
      ['gaeLambda', 0.5],
    ] as const) {
      const refused = main({ [name]: value, backend: 'wasm', progress: false, log: () => {} }).catch((error: unknown) => error)
      const error = await refused
      expect(InvalidArgumentError.isInstance(error) && error.argument).toBe(`options.${name}`)
    }
    const refused = await main({ advantage: 'gae', raePerOpponent: true, backend: 'wasm', progress: false, log: () => {} }).catch((error: unknown) => error)
    expect(InvalidArgumentError.isInstance(refused) && refused.argument).toBe('options.raePerOpponent')
  })

  it('trains against the tactical player when asked', async () => {
    const { report, runDirectory } = await oneStepRun({ randomOpponentShare: 0, tacticalOpponentShare: 1 })
    expect(report.options).toMatchObject({ tacticalOpponentShare: 1 })
    const games = await trainingGames<{ turns: { policyId: string }[] }>(runDirectory)
    expect(new Set(games.flatMap((game) => game.turns.map((turn) => turn.policyId)))).toEqual(new Set(['learner', 'tactical-opponent']))
  })

  it('trains against the opportunist player when asked', async () => {
    const { report, runDirectory } = await oneStepRun({ randomOpponentShare: 0, opportunistOpponentShare: 1 })
    expect(report.options).toMatchObject({ opportunistOpponentShare: 1 })
    const games = await trainingGames<{ turns: { policyId: string }[] }>(runDirectory)
    expect(new Set(games.flatMap((game) => game.turns.map((turn) => turn.policyId)))).toEqual(new Set(['learner', 'opportunist-opponent']))
  })

  it('seats the random player first in the share asked (--random-opponent-first-mover-share), refused without it', async () => {
    const { report, runDirectory } = await oneStepRun({ randomOpponentShare: 1, randomOpponentFirstMoverShare: 1, episodesPerStep: 8 })
    expect(report.options).toMatchObject({ randomOpponentFirstMoverShare: 1 })
    const games = await trainingGames<{ turns: { policyId: string }[] }>(runDirectory)
    expect(games.length).toBeGreaterThanOrEqual(4)
    // Every game against it, the random player always first (O), the learner always second.
    expect(games.map((game) => game.turns[0]!.policyId)).toEqual(games.map(() => 'random-opponent'))
    expect(games.every((game) => game.turns.slice(1).some((turn) => turn.policyId === 'learner'))).toBe(true)
    const refused = await main({ randomOpponentShare: 0, randomOpponentFirstMoverShare: 0.75, backend: 'wasm', progress: false, log: () => {} }).catch(
      (error: unknown) => error,
    )
    expect(InvalidArgumentError.isInstance(refused) && refused.argument).toBe('options.randomOpponentFirstMoverShare')
  })

  it('starts the training games from random openings when asked (1–4 moves before either seat plays)', async () => {
    const { report, runDirectory } = await oneStepRun({ randomOpeningShare: 1, episodesPerStep: 8 })
    expect(report.options).toMatchObject({ randomOpeningShare: 1 })
    const games = await trainingGames<{ turns: { observation: string; legalActions: string[] }[] }>(runDirectory)
    expect(games.length).toBeGreaterThanOrEqual(4)
    for (const game of games) {
      const openingMoves = 9 - game.turns[0]!.legalActions.length
      expect(openingMoves).toBeGreaterThanOrEqual(1)
      expect(openingMoves).toBeLessThanOrEqual(4)
    }
    const refused = await main({ randomOpeningMoves: 2, backend: 'wasm', progress: false, log: () => {} }).catch((error: unknown) => error)
    expect(InvalidArgumentError.isInstance(refused) && refused.argument).toBe('options.randomOpeningMoves')
  })

  it("keeps RAE's baselines per seat and opponent with --rae-per-opponent (as the checkpoint saves them)", async () => {
    const { report, runDirectory } = await oneStepRun({ raePerOpponent: true, randomOpponentShare: 0.5, episodesPerStep: 8, checkpointEvery: 1 })
    expect(report.options).toMatchObject({ raePerOpponent: true })
    const state = JSON.parse(await readFile(join(runDirectory, 'checkpoint-1', 'training-state.json'), 'utf8')) as {
      extra: { estimatorState: { baselines: { role: string; opponent: string }[] } }
    }
    const { baselines } = state.extra.estimatorState
    // Self-play games and games against the random player apart.
    expect(new Set(baselines.map((baseline) => baseline.opponent))).toEqual(new Set(['learner', 'random-opponent']))
    expect(baselines.every((baseline) => baseline.role === 'player0' || baseline.role === 'player1')).toBe(true)
  })

  it("keeps RAE's baselines per position too with --rae-per-state (keyed by the mark to move and the board); refused with GAE", async () => {
    const { report, runDirectory } = await oneStepRun({
      raePerOpponent: true,
      raePerState: true,
      randomOpponentShare: 0.5,
      episodesPerStep: 8,
      checkpointEvery: 1,
    })
    expect(report.options).toMatchObject({ raePerState: true })
    const state = JSON.parse(await readFile(join(runDirectory, 'checkpoint-1', 'training-state.json'), 'utf8')) as {
      extra: { estimatorState: { baselines: { role: string; opponent: string; state?: string }[] } }
    }
    const { baselines } = state.extra.estimatorState
    // One per seat and opponent, and one per position met besides: the first (O to move on the empty board) and later ones.
    const states = baselines.filter((baseline) => baseline.state !== undefined)
    expect(baselines.length - states.length).toBeGreaterThanOrEqual(2)
    expect(states.map((baseline) => baseline.state)).toContain('O to move|...|...|...')
    expect(states.every((baseline) => /^[OX] to move\|[OX.]{3}\|[OX.]{3}\|[OX.]{3}$/.test(baseline.state ?? ''))).toBe(true)
    expect(states.length).toBeGreaterThan(2)
    const refused = await main({ advantage: 'gae', raePerState: true, backend: 'wasm', progress: false, log: () => {} }).catch((error: unknown) => error)
    expect(InvalidArgumentError.isInstance(refused) && refused.argument).toBe('options.raePerState')
  })

  it('builds the model with the heads asked for, records them, and refuses to resume the run with others', async () => {
    const { report, runDirectory } = await oneStepRun({ attentionHeads: 32, checkpointEvery: 1 })
    expect(report.options).toMatchObject({ attentionHeads: 32 })
    expect(JSON.parse(await readFile(join(runDirectory, 'model.json'), 'utf8'))).toEqual({ modelSize: 'tiny', attentionHeads: 32, vocabSize: 300 })
    const quiet = { backend: 'wasm', progress: false, log: () => {} } as const
    const resumed = await main({ steps: 2, runDirectory, ...quiet }).catch((error: unknown) => error)
    expect(InvalidArgumentError.isInstance(resumed) && resumed.argument).toBe('options.attentionHeads')
    expect((resumed as Error).message).toContain('was trained with 32')
    // A run from before model.json was kept had the preset's 4 heads: resuming it with 32 is refused too.
    await rm(join(runDirectory, 'model.json'))
    const older = await main({ steps: 2, attentionHeads: 32, runDirectory, ...quiet }).catch((error: unknown) => error)
    expect(InvalidArgumentError.isInstance(older) && older.argument).toBe('options.attentionHeads')
    expect((older as Error).message).toContain('was trained with 4')
    for (const attentionHeads of [3, 128]) {
      const refused = await main({ attentionHeads, steps: 1, sftSteps: 1, ...quiet }).catch((error: unknown) => error)
      expect(InvalidArgumentError.isInstance(refused) && refused.argument).toBe('options.attentionHeads')
    }
  })

  it('starts afresh with other heads in a run directory that holds no checkpoint yet', async () => {
    const { runDirectory } = await oneStepRun({ attentionHeads: 32 }) // checkpointEvery 0: nothing to resume
    const { report } = await oneStepRun({ runDirectory })
    expect(report.after.step).toBe(1)
    expect(JSON.parse(await readFile(join(runDirectory, 'model.json'), 'utf8'))).toMatchObject({ attentionHeads: 4 })
  })

  it('refuses opponent shares that add up to more than 1 when the options are parsed, before anything runs', async () => {
    const lines: string[] = []
    const error = await main({
      randomOpponentShare: 0.5,
      minimaxOpponentShare: 0.4,
      leagueShare: 0.2,
      backend: 'wasm',
      progress: false,
      log: (line) => lines.push(line),
    }).catch((caught: unknown) => caught)
    expect(InvalidArgumentError.isInstance(error) && error.argument).toBe('options.leagueShare')
    expect((error as Error).message).toContain('randomOpponentShare + minimaxOpponentShare + leagueShare add up to 1.1')
    expect(lines).toEqual([]) // no backend started, no run directory made
  })
})

describe('selfplay-tictactoe near-perfect script', () => {
  it("runs the README's best recipe: 32 heads, r5's opponents, the exact forward KL annealed to 0", async () => {
    const manifest = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8')) as { scripts: Record<string, string> }
    const [command, ...argv] = manifest.scripts['near-perfect']!.split(' ')
    expect([command, argv[0]]).toEqual(['tsx', 'src/main.ts'])
    const options = mainOptionsSchema.parse(parseCommandLineOptions(argv.slice(1)))
    expect(options).toMatchObject({
      attentionHeads: 32,
      steps: 600,
      randomOpponentShare: 0.6,
      minimaxOpponentShare: 0.3,
      raePerOpponent: true,
      klEstimator: 'full-forward',
      klFinalRatio: 0,
      klCoefficient: 0.05,
      episodesPerStep: 128,
    })
    const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8')
    expect(readme).toContain(`# = npx ${manifest.scripts['near-perfect']}`)
  })
})
