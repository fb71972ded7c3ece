import { InvalidArgumentError, LudicError, type PolicyV1, type TurnContext } from '@ludic/core'
import { createOpponentPolicy, requireTurn } from './opponent-policy.js'
import { ticTacToeEmptyCells, ticTacToeWinner, type TicTacToeBoard, type TicTacToeMark } from './tic-tac-toe.js'

const scores = new Map<string, number>()

function other(mark: TicTacToeMark): TicTacToeMark {
  return mark === 'O' ? 'X' : 'O'
}

/** The mark to move: 'O' moves first, so 'O' moves when both have as many marks. */
export function ticTacToeMarkToMove(board: TicTacToeBoard): TicTacToeMark {
  let o = 0
  let x = 0
  for (const mark of board) {
    if (mark === 'O') o++
    else if (mark === 'X') x++
  }
  return o === x ? 'O' : 'X'
}

/**
 * Negamax score of a move for the mark playing it: a win scores 10 + the empty cells left (sooner is
 * better), a draw 0, otherwise minus the opponent's best score (so a later loss beats a sooner one).
 */
function moveScore(board: (TicTacToeMark | '')[], cell: number, mark: TicTacToeMark): number {
  board[cell] = mark
  let score: number
  const empty = ticTacToeEmptyCells(board).length
  if (ticTacToeWinner(board) === mark) score = 10 + empty
  else if (empty === 0) score = 0
  else score = -bestScore(board, other(mark))
  board[cell] = ''
  return score
}

function bestScore(board: (TicTacToeMark | '')[], mark: TicTacToeMark): number {
  const key = board.map((cell) => cell || '.').join('')
  const cached = scores.get(key)
  if (cached !== undefined) return cached
  let best = -Infinity
  for (const cell of ticTacToeEmptyCells(board)) best = Math.max(best, moveScore(board, cell, mark))
  scores.set(key, best)
  return best
}

/**
 * Perfect play: the move with the best game-theoretic outcome for the mark to move. Among equally good
 * outcomes it prefers the quickest win (or the slowest loss), then the lowest cell number, so it is
 * deterministic. Throws if the game is already over.
 */
export function ticTacToeMinimaxMove(board: TicTacToeBoard): number {
  if (ticTacToeWinner(board) !== undefined || ticTacToeEmptyCells(board).length === 0) {
    throw new LudicError(`TicTacToe minimax: the game is over on board ${board.map((cell) => cell || '.').join('')}`)
  }
  const mark = ticTacToeMarkToMove(board)
  const work = [...board]
  let bestCell = -1
  let best = -Infinity
  for (const cell of ticTacToeEmptyCells(work)) {
    const score = moveScore(work, cell, mark)
    if (score > best) {
      best = score
      bestCell = cell
    }
  }
  return bestCell
}

/**
 * The game-theoretic value for the mark to move: +1 it wins with perfect play, 0 draw, −1 it loses.
 * On a finished board, the value for the mark that would move next (−1 after the opponent won, 0 draw).
 */
export function ticTacToeValue(board: TicTacToeBoard): -1 | 0 | 1 {
  const mark = ticTacToeMarkToMove(board)
  if (ticTacToeWinner(board) !== undefined) return -1
  if (ticTacToeEmptyCells(board).length === 0) return 0
  return (Math.sign(bestScore([...board], mark)) + 0) as -1 | 0 | 1 // + 0 turns −0 into 0
}

/** Reads the board of the last `Current Board:` block of a TicTacToe observation (the game's own parser of its own text; the minimax player reads `ticTacToeTurnBoard`). */
export function parseTicTacToeBoard(observation: string): TicTacToeBoard {
  const start = observation.lastIndexOf('Current Board:')
  const rows = start < 0 ? [] : observation.slice(start).split('\n').slice(2, 7)
  const cells = [rows[0], rows[2], rows[4]].flatMap((row) => (row ?? '').split('|').map((cell) => cell.trim()))
  if (cells.length !== 9 || cells.some((cell, index) => cell !== 'O' && cell !== 'X' && cell !== String(index))) {
    throw new LudicError('TicTacToe: no board found in the observation (expected a "Current Board:" block)')
  }
  return cells.map((cell) => (cell === 'O' || cell === 'X' ? cell : ''))
}

/**
 * The board of a TicTacToe turn, from its structured view (`TurnView.state.board` of `tictactoe-v0`, passed on as
 * `GenerationRequest.turn`): nine cells `'O'`, `'X'` or `''`. Missing or malformed: an `InvalidArgumentError` naming the field.
 */
export function ticTacToeTurnBoard(turn: TurnContext | undefined, who = 'the TicTacToe player'): TicTacToeBoard {
  const board = requireTurn(turn, 'state', who).state.board
  if (!Array.isArray(board) || board.length !== 9 || board.some((cell) => cell !== 'O' && cell !== 'X' && cell !== '')) {
    throw new InvalidArgumentError({
      argument: 'request.turn.state.board',
      value: board,
      message: `must be TicTacToe's nine cells ('O', 'X' or ''); environment '${turn!.environmentId}' is not TicTacToe?`,
    })
  }
  return board as TicTacToeBoard
}

/** A perfect TicTacToe opponent (`ticTacToeMinimaxMove` on the turn's board, `ticTacToeTurnBoard`). Deterministic. */
export function createTicTacToeMinimaxPolicy(options: { id?: string } = {}): PolicyV1 {
  const id = options.id ?? 'tictactoe-minimax'
  return createOpponentPolicy({
    id,
    decide: (_observation, _random, turn) => `[${ticTacToeMinimaxMove(ticTacToeTurnBoard(turn, `the minimax player '${id}'`))}]`,
  })
}
