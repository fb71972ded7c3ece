import { describe, expect, it } from 'vitest'
import { playEpisode } from './play-episode.js'
import { createRandomPolicy } from './random-policy.js'
import { createTicTacToe, ticTacToeEmptyCells, ticTacToeWinner, type TicTacToeBoard, type TicTacToeMark } from './tic-tac-toe.js'
import { createTicTacToeMinimaxPolicy, ticTacToeMinimaxMove, ticTacToeValue } from './tic-tac-toe-minimax.js'

const board = (text: string): TicTacToeBoard => [...text].map((cell) => (cell === 'O' || cell === 'X' ? cell : ''))
const other = (mark: TicTacToeMark): TicTacToeMark => (mark === 'O' ? 'X' : 'O')

describe('TicTacToe ground truth', () => {
  it('has 5,478 reachable positions and 255,168 games (131,184 / 77,904 / 46,080)', () => {
    const positions = new Set<string>()
    const games = { total: 0, first: 0, second: 0, draws: 0 }
    const cells: ('O' | 'X' | '')[] = new Array(9).fill('')
    const visit = (mark: TicTacToeMark) => {
      positions.add(cells.join(','))
      const winner = ticTacToeWinner(cells)
      const empty = ticTacToeEmptyCells(cells)
      if (winner !== undefined || empty.length === 0) {
        games.total++
        if (winner === 'O') games.first++
        else if (winner === 'X') games.second++
        else games.draws++
        return
      }
      for (const cell of empty) {
        cells[cell] = mark
        visit(other(mark))
        cells[cell] = ''
      }
    }
    visit('O')
    expect(positions.size).toBe(5478)
    expect(games).toEqual({ total: 255_168, first: 131_184, second: 77_904, draws: 46_080 })
  })

  it('has minimax value 0 (perfect play draws), and minimax against itself draws', async () => {
    expect(ticTacToeValue(board('.........'))).toBe(0)
    const minimax = createTicTacToeMinimaxPolicy()
    const result = await playEpisode(createTicTacToe(), { player0: minimax, player1: minimax }, { seed: 0 })
    expect(result.rewards).toEqual({ player0: 0, player1: 0 })
    expect(result.turns).toBe(9)
  })

  it('finds wins, blocks, and breaks ties by the quickest win then the lowest cell', () => {
    expect(ticTacToeMinimaxMove(board('OO.XX....'))).toBe(2) // O wins now rather than block
    expect(ticTacToeMinimaxMove(board('OO..X....'))).toBe(2) // X must block
    expect(ticTacToeValue(board('OO.XX....'))).toBe(1)
    expect(ticTacToeValue(board('O...X...O'))).toBe(0) // X to move: an edge holds the draw
    expect(ticTacToeMinimaxMove(board('O...X...O'))).toBe(1)
    expect(ticTacToeMinimaxMove(board('.........'))).toBe(0) // every first move draws: the lowest cell
    expect(ticTacToeValue(board('XXXOO.O..'))).toBe(-1)
    expect(() => ticTacToeMinimaxMove(board('XXXOO.O..'))).toThrow(/over/)
  })

  it('never loses to a random player, as either side, over 300 seeded games', async () => {
    const environment = createTicTacToe()
    const minimax = createTicTacToeMinimaxPolicy()
    let minimaxWins = 0
    for (let game = 0; game < 300; game++) {
      const random = createRandomPolicy({ seed: game })
      const minimaxRole = game % 2 === 0 ? 'player0' : 'player1'
      const players = minimaxRole === 'player0' ? { player0: minimax, player1: random } : { player0: random, player1: minimax }
      const result = await playEpisode(environment, players, { seed: game })
      expect(result.invalidAction).toBe(false)
      expect(result.rewards[minimaxRole]).toBeGreaterThanOrEqual(0)
      if (result.rewards[minimaxRole] === 1) minimaxWins++
    }
    expect(minimaxWins).toBeGreaterThan(200)
  })

  it('random against random matches the exact outcome probabilities (737/1260, 121/420, 8/63)', async () => {
    // Exact probabilities of uniformly random play, by enumeration.
    const exact = { first: 0, second: 0, draws: 0 }
    const cells: ('O' | 'X' | '')[] = new Array(9).fill('')
    const visit = (mark: TicTacToeMark, probability: number) => {
      const winner = ticTacToeWinner(cells)
      const empty = ticTacToeEmptyCells(cells)
      if (winner !== undefined || empty.length === 0) {
        exact[winner === 'O' ? 'first' : winner === 'X' ? 'second' : 'draws'] += probability
        return
      }
      for (const cell of empty) {
        cells[cell] = mark
        visit(other(mark), probability / empty.length)
        cells[cell] = ''
      }
    }
    visit('O', 1)
    expect(exact.first).toBeCloseTo(737 / 1260, 10) // 0.5849
    expect(exact.second).toBeCloseTo(121 / 420, 10) // 0.2881
    expect(exact.draws).toBeCloseTo(8 / 63, 10) // 0.1270

    const environment = createTicTacToe()
    const players = { player0: createRandomPolicy({ seed: 1 }), player1: createRandomPolicy({ seed: 2 }) }
    const games = 2000
    const counts = { first: 0, second: 0, draws: 0 }
    for (let game = 0; game < games; game++) {
      const { rewards, invalidAction } = await playEpisode(environment, players, { seed: game })
      expect(invalidAction).toBe(false)
      counts[rewards.player0 === 1 ? 'first' : rewards.player0 === -1 ? 'second' : 'draws']++
    }
    for (const outcome of ['first', 'second', 'draws'] as const) {
      const standardError = Math.sqrt((exact[outcome] * (1 - exact[outcome])) / games)
      expect(Math.abs(counts[outcome] / games - exact[outcome])).toBeLessThan(4 * standardError)
    }
  })
})
