import { stepOutcomeSchema } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { createTicTacToe, renderTicTacToeBoard, ticTacToeWinner, type TicTacToeBoard } from './tic-tac-toe.js'
import { parseTicTacToeBoard } from './tic-tac-toe-minimax.js'

// games.md, verbatim (rows keep their trailing space).
const firstObservation = `You are Player 0 in Tic Tac Toe.
Your goal is to win three in a row (horizontally, vertically, or diagonally) on the board.
On your turn, you should select the square number (0-8) you want to put your mark in next.
For example, '[4]' places your mark in the center cell of the board.

As Player 0, you will be 'O', while your opponent is 'X'.

Current Board:

 0 | 1 | 2 
---+---+---
 3 | 4 | 5 
---+---+---
 6 | 7 | 8 

Available Moves: '[0]', '[1]', '[2]', '[3]', '[4]', '[5]', '[6]', '[7]', '[8]'`

const board = (text: string): TicTacToeBoard => [...text].map((cell) => (cell === 'O' || cell === 'X' ? cell : ''))

describe('TicTacToe', () => {
  it("shows player0 games.md's observation at the first move", () => {
    const view = createTicTacToe().reset(0)
    expect(view.role).toBe('player0')
    expect(view.observation).toBe(firstObservation)
    expect(view.legalActions).toEqual(['[0]', '[1]', '[2]', '[3]', '[4]', '[5]', '[6]', '[7]', '[8]'])
  })

  it('shows player1 its mark and the board after the first move', () => {
    const environment = createTicTacToe()
    environment.reset(0)
    const next = environment.step('\\boxed{[4]}').next!
    expect(next.role).toBe('player1')
    expect(next.observation).toContain("As Player 1, you will be 'X', while your opponent is 'O'.\n\nCurrent Board:\n\n 0 | 1 | 2 \n---+---+---\n 3 | O | 5 \n")
    expect(next.observation.endsWith("Available Moves: '[0]', '[1]', '[2]', '[3]', '[5]', '[6]', '[7]', '[8]'")).toBe(true)
    expect(next.legalActions).toEqual(['[0]', '[1]', '[2]', '[3]', '[5]', '[6]', '[7]', '[8]'])
  })

  it('plays a first-player win on the diagonal: +1/−1', () => {
    const environment = createTicTacToe()
    environment.reset(0)
    const moves = ['[0]', '[1]', '[ 04 ]', '[2]'] // "[ 04 ]" is cell 4, as TextArena reads it
    for (const move of moves) expect(environment.step(move).done).toBe(false)
    const last = environment.step('I take the corner: [8]')
    expect(last).toMatchObject({ done: true, truncated: false, rewards: { player0: 1, player1: -1 } })
    expect(last.info.reason).toMatch(/Player 0 \(O\) has three in a row/)
  })

  it('plays a second-player win and a draw', () => {
    const win = createTicTacToe()
    win.reset(0)
    for (const move of ['[0]', '[2]', '[1]', '[4]', '[3]']) win.step(move)
    expect(win.step('[6]')).toMatchObject({ done: true, rewards: { player0: -1, player1: 1 } })

    const draw = createTicTacToe()
    draw.reset(0)
    // O X O / O X X / X O O
    const moves = ['[0]', '[1]', '[2]', '[4]', '[3]', '[5]', '[7]', '[6]']
    for (const move of moves) expect(draw.step(move).done).toBe(false)
    const last = draw.step('[8]')
    expect(last).toMatchObject({ done: true, truncated: false, rewards: { player0: 0, player1: 0 } })
    expect(last.info.reason).toMatch(/draw/)
  })

  it.each([
    ['an occupied cell', ['[4]', '[4]'], /cell 4 is already occupied/],
    ['an occupied cell, zero-padded', ['[4]', '[004]'], /cell 4 is already occupied/],
    ['an out-of-range cell', ['[9]'], /cell 9 is out of range/],
    ['a negative cell', ['[-1]'], /out of range/],
    ['a word', ['[center]'], /is not a cell number/],
    ['no move', ['I pass'], /no move found/],
  ])('ends on %s with −1.5 for the offender and +0.5 for the other', (_kind, moves, reason) => {
    const environment = createTicTacToe()
    environment.reset(0)
    let outcome = environment.step(moves[0]!)
    for (const move of moves.slice(1)) outcome = environment.step(move)
    const offender = moves.length % 2 === 1 ? 'player0' : 'player1'
    const other = offender === 'player0' ? 'player1' : 'player0'
    expect(outcome).toMatchObject({ done: true, truncated: false, info: { invalidAction: true } })
    expect(outcome.rewards).toEqual({ [offender]: -1.5, [other]: 0.5 })
    expect(outcome.info.reason).toMatch(reason)
  })

  it('takes the invalid-action rewards and maxTurns as options', () => {
    const environment = createTicTacToe({ invalidPenalty: -1, invalidOpponentReward: 1, maxTurns: 2 })
    environment.reset(0)
    expect(environment.step('[x]').rewards).toEqual({ player0: -1, player1: 1 })
    environment.reset(0)
    environment.step('[0]')
    expect(environment.step('[1]')).toMatchObject({ done: true, truncated: true, rewards: { player0: 0, player1: 0 } })
    expect(() => createTicTacToe({ maxTurns: 0 })).toThrow(/options\.maxTurns/)
    expect(() => createTicTacToe({ colour: 'red' } as never)).toThrow(/options/)
  })

  it('agrees with the board rules over random games (zero-sum rewards, legal moves = empty cells)', () => {
    const environment = createTicTacToe()
    let random = 12345
    const next = () => (random = (random * 1103515245 + 12345) % 2 ** 31)
    for (let game = 0; game < 200; game++) {
      let view = environment.reset(game)
      for (;;) {
        const cells = parseTicTacToeBoard(view.observation)
        expect(view.legalActions).toEqual(cells.flatMap((cell, index) => (cell === '' ? [`[${index}]`] : [])))
        const move = view.legalActions![next() % view.legalActions!.length]!
        const outcome = stepOutcomeSchema.parse(environment.step(move))
        if (outcome.done) {
          expect(outcome.rewards.player0! + outcome.rewards.player1!).toBe(0)
          const final = [...cells]
          final[Number(move.slice(1, -1))] = view.role === 'player0' ? 'O' : 'X'
          const winner = ticTacToeWinner(final)
          expect(outcome.rewards.player0).toBe(winner === 'O' ? 1 : winner === 'X' ? -1 : 0)
          break
        }
        view = outcome.next!
      }
    }
  })

  it('renders and reads boards', () => {
    const cells = board('OX.' + '.O.' + '..X')
    expect(renderTicTacToeBoard(cells)).toBe(' O | X | 2 \n---+---+---\n 3 | O | 5 \n---+---+---\n 6 | 7 | X ')
    expect(parseTicTacToeBoard(`Current Board:\n\n${renderTicTacToeBoard(cells)}\n\nAvailable Moves: '[2]'`)).toEqual(cells)
    expect(() => parseTicTacToeBoard('no board')).toThrow(/no board/)
    expect(ticTacToeWinner(board('XXX' + 'OO.' + '...'))).toBe('X')
    expect(ticTacToeWinner(board('O..' + '.O.' + '..O'))).toBe('O')
    expect(ticTacToeWinner(board('OXO' + 'XOX' + 'XOX'))).toBeUndefined()
  })
})

describe('TicTacToe state keys', () => {
  const play = (moves: readonly number[]) => {
    const environment = createTicTacToe()
    let view = environment.reset(0)
    for (const cell of moves) view = environment.step(`[${cell}]`).next!
    return view
  }

  it('key the board and the mark to move: the same board by other move orders is the same key', () => {
    expect(play([]).stateKey).toBe('O to move|...|...|...')
    expect(play([0, 4, 8]).stateKey).toBe('X to move|O..|.X.|..O')
    expect(play([8, 4, 0]).stateKey).toBe(play([0, 4, 8]).stateKey)
    expect(play([0, 4, 7]).stateKey).not.toBe(play([0, 4, 8]).stateKey)
    expect(play([4]).stateKey).toBe('X to move|...|.O.|...')
  })

  it('agree with the board shown, both ways, over random games', () => {
    const boardOf = (observation: string) => /Current Board:\n\n([\s\S]*)\n\nAvailable Moves/.exec(observation)![1]!
    const byKey = new Map<string, string>()
    const byBoard = new Map<string, string>()
    for (let seed = 0; seed < 60; seed++) {
      const environment = createTicTacToe()
      let view = environment.reset(seed)
      let state = seed
      for (;;) {
        const shown = `${view.role}\n${boardOf(view.observation)}`
        expect(byKey.get(view.stateKey!) ?? shown).toBe(shown)
        expect(byBoard.get(shown) ?? view.stateKey).toBe(view.stateKey)
        byKey.set(view.stateKey!, shown)
        byBoard.set(shown, view.stateKey!)
        state = (state * 1_103_515_245 + 12_345) % 2 ** 31
        const outcome = environment.step(view.legalActions![state % view.legalActions!.length]!)
        if (outcome.next === undefined) break
        view = outcome.next
      }
    }
    expect(byKey.size).toBeGreaterThan(100)
  })
})
