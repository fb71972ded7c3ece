import type { ChatMessage, PolicyV1, TokenizerV1 } from '@ludic/core'
import type { CausalLanguageModel } from '@ludic/model'
import { responseLogprobs } from '@ludic/trainer'
import { collect } from '@ludic/rollout'
import {
  createTicTacToe,
  evaluationInvalidRewards,
  parseTicTacToeBoard,
  ticTacToeEmptyCells,
  ticTacToeMarkToMove,
  ticTacToeWinner,
  type TicTacToeBoard,
  type TicTacToeMark,
} from '@ludic/games'
import { trainBpe, Tokenizer } from '@ludic/tokenizer'

export const endOfText = '<|end|>'

/**
 * The terse prompt of a model made from scratch: the board as three short lines of cells, each cell its
 * number with its mark in front (`O0`, `X4`) or alone when empty (`5`, a legal move), then the mark to move.
 * `O01X2\n3X45\n678\nO`. Each cell is one token that says both where it is and what is on it.
 */
export function terseBoard(board: TicTacToeBoard): string {
  const cell = (index: number) => `${board[index] ?? ''}${index}`
  const row = (r: number) => `${cell(r * 3)}${cell(r * 3 + 1)}${cell(r * 3 + 2)}`
  return `${row(0)}\n${row(1)}\n${row(2)}\n${ticTacToeMarkToMove(board)}`
}

/** The terse prompt of a TicTacToe observation (TextArena's text, with its `Current Board:` block). */
export const terseObservation = (observation: string): string => terseBoard(parseTicTacToeBoard(observation))

/**
 * The chat template: the last message's observation, made terse, then `>` where the move goes. The
 * rollout's prompt stays the game's full observation, so scripted opponents (random, minimax) read the
 * board they expect; only the model sees the terse form.
 */
export const chatTemplate = (messages: readonly ChatMessage[]): string => `${terseObservation(messages.at(-1)?.content ?? '')}>`

/** The prompt text of a board, as the model reads it. */
export const promptOfBoard = (board: TicTacToeBoard): string => `${terseBoard(board)}>`

/** `[4]` */
export const moveText = (cell: number): string => `[${cell}]`

/** Every reachable position where the game is not over (4,520 of the 5,478 reachable ones), in a fixed order. */
export function nonTerminalPositions(): TicTacToeBoard[] {
  const seen = new Set<string>()
  const positions: TicTacToeBoard[] = []
  const cells: (TicTacToeMark | '')[] = new Array(9).fill('')
  const visit = (mark: TicTacToeMark) => {
    const key = cells.map((cell) => cell || '.').join('')
    if (seen.has(key)) return
    seen.add(key)
    if (ticTacToeWinner(cells) !== undefined) return
    const empty = ticTacToeEmptyCells(cells)
    if (empty.length === 0) return
    positions.push([...cells])
    for (const cell of empty) {
      cells[cell] = mark
      visit(mark === 'O' ? 'X' : 'O')
      cells[cell] = ''
    }
  }
  visit('O')
  return positions
}

/**
 * A byte-level BPE trained on what the model reads and writes: every position's prompt and each legal
 * move. The pre-tokenizer keeps a move (`[4]`) and a cell (`O4`, `4`) whole and splits everything else into
 * characters, so each move and each cell becomes one token (36 merges; 293 ids with the end token).
 */
export function trainTicTacToeTokenizer(vocabSize: number): Tokenizer {
  const corpus: string[] = []
  for (const board of nonTerminalPositions()) {
    for (const cell of ticTacToeEmptyCells(board)) corpus.push(`${promptOfBoard(board)}${moveText(cell)}`)
  }
  const json = trainBpe(corpus, { vocabSize, specialTokens: [endOfText], preTokenizer: { pattern: '\\[\\d\\]|[OX]?\\d|.|\\n' } })
  return Tokenizer.fromJSON(json, { eos_token: endOfText })
}

/** Random legal play as supervised examples: at every non-terminal position, each legal move once (uniform). */
export function randomPlayExamples(): { prompt: string; response: string }[] {
  return nonTerminalPositions().flatMap((board) => ticTacToeEmptyCells(board).map((cell) => ({ prompt: promptOfBoard(board), response: moveText(cell) })))
}

export interface PlayResult {
  winRate: number
  drawRate: number
  lossRate: number
  /** Share of the learner's moves that were invalid (each ends its game as a loss). */
  invalidRate: number
  /** Win rate with the learner as O (player0, moving first) and as X (player1). */
  winRateAsO: number
  winRateAsX: number
}

/**
 * The learner against a fixed opponent, seats alternating (even episodes: the learner is O, player0, and
 * moves first; odd: X), an invalid move counted as a loss (−1/+1). A draw is not a win.
 */
export async function playAgainst(learner: PolicyV1, opponent: PolicyV1, episodes: number, seed: number, temperature: number): Promise<PlayResult> {
  const { trajectories, samples } = await collect({
    environments: [() => createTicTacToe({ ...evaluationInvalidRewards })],
    policies: ({ role, episodeIndex }) => (role === (episodeIndex % 2 === 0 ? 'player0' : 'player1') ? learner : opponent),
    seeds: Array.from({ length: episodes }, (_, index) => seed * 100_000 + index),
    generation: { maxTokens: 4, temperature },
    samplingSeed: seed,
    learnerPolicyIds: [learner.id],
    concurrency: 256,
  })
  const counts = { win: 0, draw: 0, loss: 0 }
  const wins = { player0: 0, player1: 0 }
  const games = { player0: 0, player1: 0 }
  trajectories.forEach((trajectory, index) => {
    if (trajectory.error !== undefined) throw trajectory.error
    const seat = index % 2 === 0 ? 'player0' : 'player1'
    const result = trajectory.returns[seat] ?? 0
    games[seat]++
    if (result > 0) {
      counts.win++
      wins[seat]++
    } else if (result < 0) counts.loss++
    else counts.draw++
  })
  const n = trajectories.length
  const invalid = samples.filter((sample) => sample.invalid).length
  return {
    winRate: counts.win / n,
    drawRate: counts.draw / n,
    lossRate: counts.loss / n,
    invalidRate: samples.length === 0 ? 0 : invalid / samples.length,
    winRateAsO: wins.player0 / Math.max(1, games.player0),
    winRateAsX: wins.player1 / Math.max(1, games.player1),
  }
}

/**
 * The model's probability of a legal move, exactly: at every non-terminal position, the summed probability
 * of each legal move followed by the end token (everything else is invalid or malformed); the mean over
 * positions (uniform) and the smallest.
 */
export async function legalMoveMass(model: CausalLanguageModel, tokenizer: TokenizerV1): Promise<{ mean: number; min: number }> {
  const encode = (text: string) => tokenizer.encode(text, { addSpecialTokens: false })
  const eos = tokenizer.eosTokenId!
  const positions = nonTerminalPositions()
  const sequences = positions.flatMap((board) => ticTacToeEmptyCells(board).map((cell) => ({ promptIds: encode(promptOfBoard(board)), responseIds: Int32Array.from([...encode(moveText(cell)), eos]) })))
  const logprobs = await responseLogprobs(model, sequences, 1024)
  let index = 0
  let total = 0
  let min = 1
  for (const board of positions) {
    let mass = 0
    for (const _ of ticTacToeEmptyCells(board)) mass += Math.exp(logprobs[index++]!.reduce((sum, value) => sum + value, 0))
    total += mass
    min = Math.min(min, mass)
  }
  return { mean: total / positions.length, min }
}
