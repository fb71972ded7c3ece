import type { TokenizerV1 } from '@ludic/core'
import { ticTacToeEmptyCells, ticTacToeMarkToMove, ticTacToeWinner, type TicTacToeBoard, type TicTacToeMark } from '@ludic/games'
import type { CausalLanguageModel } from '@ludic/model'
import { actionLogprobs } from '@ludic/trainer'
import { boardKey, completingCell, moveText, nonTerminalPositions, promptOfBoard, winChanceAgainstRandom, withMove } from './tictactoe-setup.js'

/** A policy as move probabilities: for a position not over, one probability per empty cell, in `ticTacToeEmptyCells` order. */
export type MoveProbabilities = (board: TicTacToeBoard) => readonly number[]

/** One seat's games against the random player, exactly. */
export interface ExactSeat {
  win: number
  draw: number
  loss: number
  /**
   * Where the win chance went: at each of the learner's decisions, the chance of reaching it times (the best reply's
   * chance of winning − the chance of the moves it plays, each followed by best play), summed over the decisions where
   * it could win at once (`canWin`), where it could not but had to block a line (`mustBlock`), and the rest. The three
   * add up to the best replies' win rate in this seat (99.5 % as O, 93.9 % as X) minus `win`.
   */
  lostWinChance: { canWin: number; mustBlock: number; other: number }
}

/** The learner against the uniform random player, every game weighed by its probability: no sampling noise. */
export interface ExactPlay {
  /** Seats alternating (the mean of the two seats), as the sampled evaluation plays. */
  winRate: number
  drawRate: number
  lossRate: number
  /** The learner moving first (O, player0) and second (X). */
  asO: ExactSeat
  asX: ExactSeat
}

const other = (mark: TicTacToeMark): TicTacToeMark => (mark === 'O' ? 'X' : 'O')

/** One of the learner's decisions in `exactPlayAgainstRandom`, as `onDecision` sees it. */
export interface ExactDecision {
  /** The learner's mark. */
  seat: TicTacToeMark
  board: TicTacToeBoard
  /** The chance of reaching this position, with the learner in `seat`. */
  reach: number
  category: keyof ExactSeat['lostWinChance']
  /** The empty cells, the policy's probability of each, and the win chance after each followed by best play. */
  cells: readonly number[]
  probabilities: readonly number[]
  chances: readonly number[]
  /** The policy's probability of the best moves together. */
  bestMass: number
  /** reach × (the best move's win chance − the chance of the moves played): this decision's share of `lostWinChance`. */
  lost: number
}

/**
 * The exact outcome of `policy` against the uniform random player in both seats: the probability of reaching each
 * position, carried forward move by move (positions in order of their number of marks), ends as wins, draws and losses.
 * `onDecision` sees each of the learner's decisions (`ExactDecision`).
 */
export function exactPlayAgainstRandom(policy: MoveProbabilities, onDecision?: (decision: ExactDecision) => void): ExactPlay {
  const memo = new Map<string, number>()
  const seat = (learner: TicTacToeMark): ExactSeat => {
    const result: ExactSeat = { win: 0, draw: 0, loss: 0, lostWinChance: { canWin: 0, mustBlock: 0, other: 0 } }
    let layer = new Map<string, { board: TicTacToeBoard; reach: number }>([[boardKey(Array(9).fill('')), { board: Array(9).fill(''), reach: 1 }]])
    while (layer.size > 0) {
      const next = new Map<string, { board: TicTacToeBoard; reach: number }>()
      const add = (board: TicTacToeBoard, reach: number) => {
        if (reach === 0) return
        const winner = ticTacToeWinner(board)
        if (winner !== undefined) result[winner === learner ? 'win' : 'loss'] += reach
        else if (ticTacToeEmptyCells(board).length === 0) result.draw += reach
        else {
          const key = boardKey(board)
          const known = next.get(key)
          if (known === undefined) next.set(key, { board, reach })
          else known.reach += reach
        }
      }
      for (const { board, reach } of layer.values()) {
        const mark = ticTacToeMarkToMove(board)
        const empty = ticTacToeEmptyCells(board)
        if (mark !== learner) {
          for (const cell of empty) add(withMove(board, cell, mark), reach / empty.length)
          continue
        }
        const probabilities = policy(board)
        const chances = empty.map((cell) => winChanceAgainstRandom(withMove(board, cell, mark), mark, memo))
        const best = Math.max(...chances)
        const played = chances.reduce((total, chance, index) => total + probabilities[index]! * chance, 0)
        const wins = (player: TicTacToeMark) => completingCell(board, player) !== undefined
        const category = wins(mark) ? 'canWin' : wins(other(mark)) ? 'mustBlock' : 'other'
        const lost = reach * (best - played)
        result.lostWinChance[category] += lost
        if (onDecision !== undefined) {
          const bestMass = chances.reduce((total, chance, index) => total + (chance >= best - 1e-12 ? probabilities[index]! : 0), 0)
          onDecision({ seat: learner, board, reach, category, cells: empty, probabilities, chances, bestMass, lost })
        }
        empty.forEach((cell, index) => add(withMove(board, cell, mark), reach * probabilities[index]!))
      }
      layer = next
    }
    return result
  }
  const asO = seat('O')
  const asX = seat('X')
  return { winRate: (asO.win + asX.win) / 2, drawRate: (asO.draw + asX.draw) / 2, lossRate: (asO.loss + asX.loss) / 2, asO, asX }
}

/**
 * The model's moves at every position, exactly (`actionLogprobs`: each empty cell's move followed by the end token):
 * `sampled`, normalised over the legal moves — the invalid mass, which the sampled evaluation counts (near 0 after
 * training), is left out — and `greedy`, all on the likeliest legal move (the first of equals).
 */
export async function modelMoveProbabilities(
  model: CausalLanguageModel,
  tokenizer: TokenizerV1,
): Promise<{ sampled: MoveProbabilities; greedy: MoveProbabilities }> {
  const positions = nonTerminalPositions()
  const decisions = positions.map((board) => ({ prompt: promptOfBoard(board), actions: ticTacToeEmptyCells(board).map(moveText) }))
  const scores = await actionLogprobs(model, tokenizer, decisions, { batchSize: 1024 })
  const sampled = new Map<string, number[]>()
  const greedy = new Map<string, number[]>()
  positions.forEach((board, index) => {
    const row = scores[index]!
    const top = Math.max(...row)
    const likeliest = row.indexOf(top)
    const weights = row.map((score) => Math.exp(score - top))
    const total = weights.reduce((sum, weight) => sum + weight, 0)
    sampled.set(
      boardKey(board),
      weights.map((weight) => weight / total),
    )
    greedy.set(
      boardKey(board),
      row.map((_, at) => (at === likeliest ? 1 : 0)),
    )
  })
  return { sampled: (board) => sampled.get(boardKey(board))!, greedy: (board) => greedy.get(boardKey(board))! }
}

/** `exactPlayAgainstRandom` of the model's sampled (T = 1) and greedy play. */
export async function exactModelPlay(model: CausalLanguageModel, tokenizer: TokenizerV1): Promise<{ sampled: ExactPlay; greedy: ExactPlay }> {
  const { sampled, greedy } = await modelMoveProbabilities(model, tokenizer)
  return { sampled: exactPlayAgainstRandom(sampled), greedy: exactPlayAgainstRandom(greedy) }
}

/** One line: the win rate with seats alternating, each seat's, the loss rate, and where each seat's win chance went. */
export function describeExactPlay(play: ExactPlay): string {
  const percent = (value: number) => `${(100 * value).toFixed(1)} %`
  const points = (seat: ExactSeat) =>
    `could win ${(100 * seat.lostWinChance.canWin).toFixed(1)}, must block ${(100 * seat.lostWinChance.mustBlock).toFixed(1)}, other ${(100 * seat.lostWinChance.other).toFixed(1)}`
  return `win ${percent(play.winRate)} (as O ${percent(play.asO.win)}, as X ${percent(play.asX.win)}), lost ${percent(play.lossRate)}; win chance lost (points) as O: ${points(play.asO)}; as X: ${points(play.asX)}`
}

/** The bounds of `lostByConfidence`'s bins of the best moves' probability: [0, 0.01), [0.01, 0.1), …, [0.9, 1]. */
export const bestMassBins = [0, 0.01, 0.1, 0.5, 0.9] as const

/** Where a seat's lost win chance lies: by kind of decision and by the policy's probability of the best moves there. */
export interface LostByConfidence {
  /** Per kind of decision, the lost win chance in each `bestMassBins` bin (the bins add up to `lostWinChance`). */
  bins: Record<keyof ExactSeat['lostWinChance'], number[]>
  /** The decisions that lose the most, largest first (`top` of them). */
  worst: ExactDecision[]
}

/**
 * `exactPlayAgainstRandom`'s lost win chance split by how sure the policy was where it lost it: a decision whose best
 * moves get < 1 % is a move held near probability 1 that is not a best reply — one a policy gradient barely moves (its
 * gradient is 1 − π), and that on-policy play seldom tries. Per seat, with its `top` worst decisions.
 */
export function lostByConfidence(policy: MoveProbabilities, top = 10): { play: ExactPlay; asO: LostByConfidence; asX: LostByConfidence } {
  const empty = (): LostByConfidence => ({
    bins: { canWin: bestMassBins.map(() => 0), mustBlock: bestMassBins.map(() => 0), other: bestMassBins.map(() => 0) },
    worst: [],
  })
  const seats = { O: empty(), X: empty() }
  const decisions: ExactDecision[] = []
  const play = exactPlayAgainstRandom(policy, (decision) => {
    const bin = bestMassBins.findLastIndex((bound) => decision.bestMass >= bound)
    seats[decision.seat].bins[decision.category][bin]! += decision.lost
    decisions.push(decision)
  })
  for (const seat of ['O', 'X'] as const)
    seats[seat].worst = decisions
      .filter((decision) => decision.seat === seat)
      .sort((a, b) => b.lost - a.lost)
      .slice(0, top)
  return { play, asO: seats.O, asX: seats.X }
}
