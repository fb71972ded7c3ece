import { InvalidArgumentError, type TurnView } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { createSimpleNegotiation, createTicTacToe, ticTacToeWinner, type TicTacToeBoard } from '@ludic/games'
import { withRandomOpenings } from './random-openings.js'

const boardOf = (view: TurnView) => (view.state as { board: TicTacToeBoard }).board
const marks = (board: TicTacToeBoard) => board.filter((mark) => mark !== '').length

describe('withRandomOpenings', () => {
  it('starts every episode after 1–4 random legal moves, the role to move after them first, the same opening for the same seed', () => {
    const environment = withRandomOpenings(createTicTacToe(), { maxMoves: 4 })
    const counts = [0, 0, 0, 0, 0]
    for (let seed = 0; seed < 400; seed++) {
      const view = environment.reset(seed)
      const moves = marks(boardOf(view))
      counts[moves]! += 1
      expect(view.role).toBe(moves % 2 === 0 ? 'player0' : 'player1')
      expect(view.legalActions).toHaveLength(9 - moves)
      expect(environment.reset(seed)).toEqual(view)
    }
    expect(counts[0]).toBe(0)
    // Uniform over 1…4: 100 each expected; 400 draws put each count within ±40 of it (more than 4.6 standard deviations).
    for (const count of counts.slice(1)) expect(Math.abs(count - 100)).toBeLessThan(40)
  })

  it('plays on to the game’s end from the opening, with the game’s rewards', () => {
    const environment = withRandomOpenings(createTicTacToe(), { minMoves: 3, maxMoves: 3 })
    let view = environment.reset(5)
    expect(marks(boardOf(view))).toBe(3)
    for (;;) {
      const outcome = environment.step(view.legalActions![0]!)
      if (outcome.done) {
        expect(Object.keys(outcome.rewards).sort()).toEqual(['player0', 'player1'])
        expect(outcome.rewards.player0! + outcome.rewards.player1!).toBe(0)
        expect(outcome.info.invalidAction).not.toBe(true)
        break
      }
      view = outcome.next!
    }
  })

  it('with share 0 is the game itself; with share 0.5 opens about half of the episodes', () => {
    const plain = createTicTacToe()
    const none = withRandomOpenings(createTicTacToe(), { share: 0, maxMoves: 4 })
    for (let seed = 0; seed < 20; seed++) expect(none.reset(seed)).toEqual(plain.reset(seed))
    const half = withRandomOpenings(createTicTacToe(), { share: 0.5, maxMoves: 4 })
    let opened = 0
    for (let seed = 0; seed < 1000; seed++) opened += marks(boardOf(half.reset(seed))) > 0 ? 1 : 0
    // Binomial(1000, 0.5): standard deviation 15.8; ±80 is more than 5 of them.
    expect(Math.abs(opened - 500)).toBeLessThan(80)
  })

  it('drops an opening that would end the game, and that episode starts from the empty board', () => {
    const environment = withRandomOpenings(createTicTacToe(), { minMoves: 5, maxMoves: 5 })
    let dropped = 0
    for (let seed = 0; seed < 300; seed++) {
      const board = boardOf(environment.reset(seed))
      if (marks(board) === 0) dropped += 1
      else {
        expect(marks(board)).toBe(5)
        expect(ticTacToeWinner(board)).toBeUndefined()
      }
    }
    // Random play wins at the fifth move in 1,440 of the 15,120 five-move sequences (2/21): ≈ 28.6 of 300 expected,
    // standard deviation 5.1.
    expect(dropped).toBeGreaterThan(8)
    expect(dropped).toBeLessThan(50)
  })

  it('refuses bad options when built and a game without listed moves when it opens, naming them', () => {
    const game = createTicTacToe()
    expect(() => withRandomOpenings(game, { minMoves: 5, maxMoves: 4 })).toThrow(/options\.minMoves/)
    expect(() => withRandomOpenings(game, { share: 1.5, maxMoves: 4 })).toThrow(/options\.share/)
    expect(() => withRandomOpenings(game, { maxMoves: 1001 })).toThrow(/options\.maxMoves/)
    const negotiation = withRandomOpenings(createSimpleNegotiation(), { maxMoves: 2 })
    expect(() => negotiation.reset(0)).toThrow(InvalidArgumentError)
    expect(() => negotiation.reset(0)).toThrow(/environment/)
  })
})
