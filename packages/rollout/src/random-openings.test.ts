import { InvalidArgumentError, type EnvironmentV1, type StepOutcome, type TurnView } from '@ludic/core'
import { createKuhnPoker, createSimpleNegotiation, createTicTacToe, ticTacToeWinner, type TicTacToeBoard } from '@ludic/games'
import { describe, expect, it } from 'vitest'
import { withRandomOpenings } from './random-openings.js'

const boardOf = (view: TurnView) => (view.state as { board: TicTacToeBoard }).board
const marks = (board: TicTacToeBoard) => board.filter((mark) => mark !== '').length

/** Plays the first legal action at every turn to the end; the last outcome. */
function playOut(environment: EnvironmentV1, view: TurnView): StepOutcome {
  for (;;) {
    const outcome = environment.step(view.legalActions![0]!)
    if (outcome.done || outcome.truncated) return outcome
    view = outcome.next!
  }
}

describe('withRandomOpenings', () => {
  it('starts every episode after 1–4 random legal moves, the role to move after them first, the same opening for the same seed', () => {
    const environment = withRandomOpenings(createTicTacToe(), { share: 1, maxMoves: 4 })
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
    const environment = withRandomOpenings(createTicTacToe(), { share: 1, minMoves: 3, maxMoves: 3 })
    const view = environment.reset(5)
    expect(marks(boardOf(view))).toBe(3)
    const outcome = playOut(environment, view)
    expect(outcome.done).toBe(true)
    expect(Object.keys(outcome.rewards).sort()).toEqual(['player0', 'player1'])
    expect(outcome.rewards.player0! + outcome.rewards.player1!).toBe(0)
    expect(outcome.info.invalidAction).not.toBe(true)
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

  it('drops an opening that would end the game: that episode starts from the empty board and plays as the game does', () => {
    const environment = withRandomOpenings(createTicTacToe(), { share: 1, minMoves: 5, maxMoves: 5 })
    const plain = createTicTacToe()
    let dropped = 0
    for (let seed = 0; seed < 300; seed++) {
      const view = environment.reset(seed)
      const board = boardOf(view)
      if (marks(board) === 0) {
        dropped += 1
        // The game under the wrapper was reset again: it plays exactly as a fresh game.
        expect(view).toEqual(plain.reset(seed))
        expect(playOut(environment, view)).toEqual(playOut(plain, view))
      } else {
        expect(marks(board)).toBe(5)
        expect(ticTacToeWinner(board)).toBeUndefined()
      }
    }
    // Random play wins at the fifth move in 1,440 of the 15,120 five-move sequences (2/21): ≈ 28.6 of 300 expected,
    // standard deviation 5.1.
    expect(dropped).toBeGreaterThan(8)
    expect(dropped).toBeLessThan(50)
  })

  it('leaves the game’s own draws alone: the opened Kuhn hand is the plain deal after one of its legal moves', () => {
    const opened = withRandomOpenings(createKuhnPoker({ rounds: 1 }), { share: 1, maxMoves: 1 })
    const plain = createKuhnPoker({ rounds: 1 })
    for (let seed = 0; seed < 30; seed++) {
      const view = opened.reset(seed)
      // The state key names the player's card: a deal drawn differently would match none of these.
      const start = plain.reset(seed)
      const reachable = start.legalActions!.map((action) => {
        plain.reset(seed)
        return plain.step(action).next!
      })
      expect(reachable).toContainEqual(view)
      expect(view.role).not.toBe(start.role)
    }
  })

  it('refuses bad options when built and a game without listed moves when it opens, naming them', () => {
    const game = createTicTacToe()
    expect(() => withRandomOpenings(game, { share: 1, minMoves: 5, maxMoves: 4 })).toThrow(/options\.minMoves/)
    expect(() => withRandomOpenings(game, { share: 1.5, maxMoves: 4 })).toThrow(/options\.share/)
    expect(() => withRandomOpenings(game, { share: 1, maxMoves: 1001 })).toThrow(/options\.maxMoves/)
    expect(() => withRandomOpenings(game, { share: 1, maxMoves: 0 })).toThrow(/options\.maxMoves/)
    expect(() => withRandomOpenings(game, { maxMoves: 4 } as never)).toThrow(/options\.share/)
    const negotiation = withRandomOpenings(createSimpleNegotiation(), { share: 1, maxMoves: 2 })
    expect(() => negotiation.reset(0)).toThrow(InvalidArgumentError)
    expect(() => negotiation.reset(0)).toThrow(/environment/)
  })
})
