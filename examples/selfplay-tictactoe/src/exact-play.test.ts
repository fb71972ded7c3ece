import { ticTacToeEmptyCells, ticTacToeMarkToMove, ticTacToeWinner } from '@ludic/games'
import { createModel } from '@ludic/model'
import * as tf from '@tensorflow/tfjs-core'
import { initTensors } from '@ludic/tensors'
import { describe, expect, it } from 'vitest'
import { bestMassBins, exactPlayAgainstRandom, lostByConfidence, modelMoveProbabilities } from './exact-play.js'
import { bestRepliesToRandom, nonTerminalPositions, trainTicTacToeTokenizer, withMove } from './tictactoe-setup.js'

const uniform = (board: readonly string[]) => ticTacToeEmptyCells(board as never).map((_, _index, cells) => 1 / cells.length)

describe('exactPlayAgainstRandom', () => {
  it('gives random play its known outcome: the first mover wins 58.5 %, the second 28.8 %, 12.7 % drawn', () => {
    const play = exactPlayAgainstRandom(uniform)
    expect(play.asO.win).toBeCloseTo(0.58492, 4)
    expect(play.asO.loss).toBeCloseTo(0.2881, 4)
    expect(play.asO.draw).toBeCloseTo(0.12698, 4)
    expect(play.asX.win).toBeCloseTo(play.asO.loss, 12)
    expect(play.winRate).toBeCloseTo((0.58492 + 0.2881) / 2, 4)
    for (const seat of [play.asO, play.asX]) expect(seat.win + seat.draw + seat.loss).toBeCloseTo(1, 12)
  })

  it('gives the best replies their 99.5 % / 93.9 % and nothing lost; the lost win chance adds up to the gap', () => {
    const best = new Map(bestRepliesToRandom().map(({ board, moves }) => [board.join(','), moves]))
    const bestPlay = exactPlayAgainstRandom((board) => {
      const moves = best.get(board.join(','))!
      return ticTacToeEmptyCells(board).map((cell) => (moves.includes(cell) ? 1 / moves.length : 0))
    })
    expect(bestPlay.asO.win).toBeCloseTo(0.995, 3)
    expect(bestPlay.asX.win).toBeCloseTo(0.939, 3)
    expect(bestPlay.winRate).toBeCloseTo(0.967, 3)
    for (const seat of [bestPlay.asO, bestPlay.asX]) for (const lost of Object.values(seat.lostWinChance)) expect(Math.abs(lost)).toBeLessThan(1e-12)
    // Random play loses its win chance in every category, and exactly the gap in all.
    const random = exactPlayAgainstRandom(uniform)
    for (const [seat, bestSeat] of [
      [random.asO, bestPlay.asO],
      [random.asX, bestPlay.asX],
    ] as const) {
      const { canWin, mustBlock, other } = seat.lostWinChance
      expect(Math.min(canWin, mustBlock, other)).toBeGreaterThan(0.01)
      expect(canWin + mustBlock + other).toBeCloseTo(bestSeat.win - seat.win, 12)
    }
  })

  it('puts the win chance a policy loses where it loses it: one that misses only immediate wins loses it all there', () => {
    const best = new Map(bestRepliesToRandom().map(({ board, moves }) => [board.join(','), moves]))
    const missesWins = exactPlayAgainstRandom((board) => {
      const cells = ticTacToeEmptyCells(board)
      const mark = ticTacToeMarkToMove(board)
      const winning = cells.filter((cell) => ticTacToeWinner(withMove(board, cell, mark)) === mark)
      const others = cells.filter((cell) => !winning.includes(cell))
      // Where it can win at once (and has another move), any other move; elsewhere the best replies.
      const chosen = winning.length > 0 && others.length > 0 ? others : best.get(board.join(','))!
      return cells.map((cell) => (chosen.includes(cell) ? 1 / chosen.length : 0))
    })
    for (const seat of [missesWins.asO, missesWins.asX]) {
      expect(seat.lostWinChance.canWin).toBeGreaterThan(0.01)
      expect(Math.abs(seat.lostWinChance.mustBlock)).toBeLessThan(1e-12)
      expect(Math.abs(seat.lostWinChance.other)).toBeLessThan(1e-12)
    }
  })

  it('splits the lost win chance by how sure the policy was: a wrong move held at probability 1 loses in the first bin', () => {
    const best = new Map(bestRepliesToRandom().map(({ board, moves }) => [board.join(','), moves]))
    // The best replies everywhere but one must-block position of the second seat (O at 0 and 6, X in the centre: the
    // block is 3), where it plays 2 with probability 1, or with 0.95 (the block 0.05).
    const held = (blockProbability: number) => (board: readonly string[]) => {
      const cells = ticTacToeEmptyCells(board as never)
      if (board.join(',') === 'O,,,,X,,O,,') return cells.map((cell) => (cell === 3 ? blockProbability : cell === 2 ? 1 - blockProbability : 0))
      const moves = best.get(board.join(','))!
      return cells.map((cell) => (moves.includes(cell) ? 1 / moves.length : 0))
    }
    const sure = lostByConfidence(held(0), 3)
    const lost = sure.play.asX.lostWinChance.mustBlock
    expect(lost).toBeGreaterThan(0.001)
    expect(sure.asX.bins.mustBlock[0]).toBeCloseTo(lost, 12) // all of it at best-move mass < 1 %
    expect(sure.asX.bins.mustBlock.slice(1).every((value) => Math.abs(value) < 1e-12)).toBe(true)
    expect(sure.asX.worst[0]!.board.join(',')).toBe('O,,,,X,,O,,')
    expect(sure.asX.worst[0]!.bestMass).toBe(0)
    expect(Math.abs(sure.play.asO.lostWinChance.canWin + sure.play.asO.lostWinChance.mustBlock + sure.play.asO.lostWinChance.other)).toBeLessThan(1e-12)
    // At 5 % on the block the same loss, less of it, lands in the [0.01, 0.1) bin.
    const unsure = lostByConfidence(held(0.05), 3)
    expect(bestMassBins[1]).toBe(0.01)
    expect(unsure.asX.bins.mustBlock[0]).toBeCloseTo(0, 12)
    expect(unsure.asX.bins.mustBlock[1]).toBeCloseTo(0.95 * lost, 12)
    // Random play: the bins add up to each kind's lost win chance.
    const random = lostByConfidence(uniform)
    for (const [seat, exact] of [
      [random.asO, random.play.asO],
      [random.asX, random.play.asX],
    ] as const)
      for (const category of ['canWin', 'mustBlock', 'other'] as const)
        expect(seat.bins[category].reduce((total, value) => total + value, 0)).toBeCloseTo(exact.lostWinChance[category], 12)
  })

  it("reads a model's moves exactly: sampled probabilities sum to 1 over the legal moves, greedy ones are one-hot", async () => {
    await initTensors({ backend: 'wasm' })
    const tokenizer = trainTicTacToeTokenizer(300)
    const model = createModel('tiny', {
      vocabSize: tokenizer.vocabSize,
      seed: 3,
      overrides: { hiddenSize: 32, intermediateSize: 64, numAttentionHeads: 2, numKeyValueHeads: 2 },
    })
    const before = tf.memory().numTensors
    const { sampled, greedy } = await modelMoveProbabilities(model, tokenizer)
    expect(tf.memory().numTensors).toBe(before)
    for (const board of nonTerminalPositions().slice(0, 200)) {
      const probabilities = sampled(board)
      expect(probabilities).toHaveLength(ticTacToeEmptyCells(board).length)
      expect(probabilities.reduce((total, p) => total + p, 0)).toBeCloseTo(1, 9)
      const onehot = greedy(board)
      expect(onehot.filter((p) => p === 1)).toHaveLength(1)
      expect(onehot.indexOf(1)).toBe(probabilities.indexOf(Math.max(...probabilities)))
    }
    const play = exactPlayAgainstRandom(sampled)
    expect(play.winRate).toBeGreaterThan(0)
    expect(play.winRate).toBeLessThan(1)
    model.dispose()
  }, 120_000)
})
