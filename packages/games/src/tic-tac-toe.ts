import { describeValue, parseArgument, type EnvironmentV1 } from '@ludic/core'
import { z } from 'zod'
import { abbreviate } from './action.js'
import { commonOptionsShape, createTwoPlayerEnvironment, maxTurnsOption, type PlayerIndex, type TwoPlayerRules } from './two-player-environment.js'

export type TicTacToeMark = 'O' | 'X'
/** Cells 0–8 (row·3 + column); `''` is empty. */
export type TicTacToeBoard = readonly (TicTacToeMark | '')[]

export const ticTacToeOptionsSchema = z.strictObject({
  ...commonOptionsShape,
  /** Truncate after this many moves (never reached: a game has at most 9). Default: 50 (SPIRAL's). */
  maxTurns: maxTurnsOption(50),
})
export type TicTacToeOptions = z.input<typeof ticTacToeOptionsSchema>

const lines = [
  [0, 1, 2],
  [3, 4, 5],
  [6, 7, 8], // rows
  [0, 3, 6],
  [1, 4, 7],
  [2, 5, 8], // columns
  [0, 4, 8],
  [2, 4, 6], // diagonals
] as const

/** The mark with three in a row, if any. */
export function ticTacToeWinner(board: TicTacToeBoard): TicTacToeMark | undefined {
  for (const [a, b, c] of lines) {
    const mark = board[a]
    if (mark !== '' && mark !== undefined && mark === board[b] && mark === board[c]) return mark
  }
  return undefined
}

/** player0 is 'O' and moves first, player1 is 'X'. */
export function ticTacToeMarkOf(player: PlayerIndex): TicTacToeMark {
  return player === 0 ? 'O' : 'X'
}

/** The empty cells, in order. */
export function ticTacToeEmptyCells(board: TicTacToeBoard): number[] {
  const cells: number[] = []
  board.forEach((mark, cell) => mark === '' && cells.push(cell))
  return cells
}

/** TextArena's board: each row `" a | b | c "`, rows separated by `---+---+---`; empty cells show their number. */
export function renderTicTacToeBoard(board: TicTacToeBoard): string {
  const row = (r: number) => [0, 1, 2].map((c) => ` ${board[r * 3 + c] || String(r * 3 + c)} `).join('|')
  return [row(0), row(1), row(2)].join('\n---+---+---\n')
}

function prompt(player: PlayerIndex): string {
  const mark = ticTacToeMarkOf(player)
  const other = ticTacToeMarkOf(player === 0 ? 1 : 0)
  return (
    `You are Player ${player} in Tic Tac Toe.\n` +
    'Your goal is to win three in a row (horizontally, vertically, or diagonally) on the board.\n' +
    'On your turn, you should select the square number (0-8) you want to put your mark in next.\n' +
    "For example, '[4]' places your mark in the center cell of the board.\n\n" +
    `As Player ${player}, you will be '${mark}', while your opponent is '${other}'.`
  )
}

interface TicTacToeState {
  board: (TicTacToeMark | '')[]
  player: PlayerIndex
}

const rules: TwoPlayerRules<TicTacToeState> = {
  id: 'tictactoe-v0',
  start: () => ({ board: new Array<TicTacToeMark | ''>(9).fill(''), player: 0 }),
  currentPlayer: (state) => state.player,
  /** `O to move|O.X|.O.|..X`: the mark to move (player0 is O), then the rows, `.` for an empty cell. */
  stateKey: (state, player) =>
    `${ticTacToeMarkOf(player)} to move|${[0, 3, 6]
      .map((row) =>
        state.board
          .slice(row, row + 3)
          .map((mark) => mark || '.')
          .join(''),
      )
      .join('|')}`,
  observation(state, player) {
    const moves = ticTacToeEmptyCells(state.board).map((cell) => `'[${cell}]'`)
    return `${prompt(player)}\n\nCurrent Board:\n\n${renderTicTacToeBoard(state.board)}\n\nAvailable Moves: ${moves.join(', ')}`
  },
  /** `{ board: ['O', '', 'X', …] }`: the nine cells, row by row, for the minimax player. */
  turnState: (state) => ({ board: [...state.board] }),
  legalActions: (state) => ticTacToeEmptyCells(state.board).map((cell) => `[${cell}]`),
  /** `[04]` is cell 4 (as TextArena reads it). */
  canonicalMove: (move) => (/^\s*\d{1,6}\s*$/.test(move) ? String(Number(move)) : move),
  explainIllegal(_state, move) {
    const text = move.trim()
    // A cell 0–8 that is not legal is occupied.
    if (/^\d+$/.test(text) && Number(text) <= 8) return `cell ${Number(text)} is already occupied`
    if (/^-?\d+$/.test(text)) return `cell ${abbreviate(text, 12)} is out of range (0-8)`
    return `${describeValue(`[${text}]`)} is not a cell number (0-8)`
  },
  play(state, move) {
    const cell = Number(move.slice(1, -1))
    const mark = ticTacToeMarkOf(state.player)
    state.board[cell] = mark
    if (ticTacToeWinner(state.board) === mark) {
      return { kind: 'end', rewards: state.player === 0 ? [1, -1] : [-1, 1], reason: `Player ${state.player} (${mark}) has three in a row` }
    }
    if (!state.board.includes('')) return { kind: 'end', rewards: [0, 0], reason: 'The board is full: a draw' }
    state.player = state.player === 0 ? 1 : 0
    return { kind: 'continue' }
  },
}

/**
 * TicTacToe (`tictactoe-v0`, TextArena's text): cells 0–8, player0 is 'O' and moves first, a move is
 * `[4]`. Three in a row wins (+1/−1), a full board draws (0/0). An occupied or out-of-range cell, or a
 * response without a move, is an invalid action. The observation is the rules and the current board
 * with the available moves.
 */
export function createTicTacToe(options: TicTacToeOptions = {}): EnvironmentV1 {
  return createTwoPlayerEnvironment(rules, parseArgument(ticTacToeOptionsSchema, options, 'options'))
}
