import { type ChatMessage, InvalidArgumentError, type PolicyV1, type Random, type TokenizerV1 } from '@ludic/core'
import {
  createOpponentPolicy,
  createTicTacToe,
  evaluationInvalidRewards,
  parseTicTacToeBoard,
  ticTacToeEmptyCells,
  ticTacToeMarkToMove,
  ticTacToeTurnBoard,
  ticTacToeWinner,
  type TicTacToeBoard,
  type TicTacToeMark,
} from '@ludic/games'
import { type CausalLanguageModel, presetConfig } from '@ludic/model'
import { actionLogprobs, evaluateAgainst } from '@ludic/trainer'
import { trainBpe, Tokenizer } from '@ludic/tokenizer'
import { z } from 'zod'

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

/** A run's model shape, kept in its directory as `model.json` by `main` and read back by `where-lost`. */
export const runModelShapeSchema = z.object({
  modelSize: z.enum(['tiny', 'small']),
  attentionHeads: z.number().int().positive(),
  vocabSize: z.number().int().positive(),
})
export type RunModelShape = z.infer<typeof runModelShapeSchema>

/**
 * `createModel`'s options for `heads` attention heads (keys and values as many) on a preset: its width split among
 * them, the same parameters. `{}` for the preset's own. Refused (naming `options.attentionHeads`) unless they split the
 * width into heads of an even size (the rotary embedding's pairs).
 */
export function attentionHeadsOverrides(modelSize: 'tiny' | 'small', heads: number | undefined): { overrides?: Record<string, number> } {
  if (heads === undefined) return {}
  const { hiddenSize } = presetConfig(modelSize, 2)
  if (hiddenSize % heads !== 0 || (hiddenSize / heads) % 2 !== 0)
    throw new InvalidArgumentError({
      argument: 'options.attentionHeads',
      value: heads,
      message: `must split the ${modelSize} preset's width (${hiddenSize}) into heads of an even size`,
    })
  return { overrides: { numAttentionHeads: heads, numKeyValueHeads: heads } }
}

/** A board as a string key: its nine cells, `.` for an empty one. */
export const boardKey = (board: TicTacToeBoard): string => board.map((cell) => cell || '.').join('')

/** Every reachable position where the game is not over (4,520 of the 5,478 reachable ones), in a fixed order. */
export function nonTerminalPositions(): TicTacToeBoard[] {
  const seen = new Set<string>()
  const positions: TicTacToeBoard[] = []
  const cells: (TicTacToeMark | '')[] = new Array(9).fill('')
  const visit = (mark: TicTacToeMark) => {
    const key = boardKey(cells)
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
  const { tokenizer, config } = ticTacToeTokenizerFiles(vocabSize)
  return Tokenizer.fromJSON(tokenizer, config)
}

/** The files of `trainTicTacToeTokenizer`'s tokenizer: `tokenizer.json` and `tokenizer_config.json` (its end token). */
export function ticTacToeTokenizerFiles(vocabSize: number): { tokenizer: object; config: { eos_token: string } } {
  const corpus: string[] = []
  for (const board of nonTerminalPositions()) {
    for (const cell of ticTacToeEmptyCells(board)) corpus.push(`${promptOfBoard(board)}${moveText(cell)}`)
  }
  const tokenizer = trainBpe(corpus, { vocabSize, specialTokens: [endOfText], preTokenizer: { pattern: '\\[\\d\\]|[OX]?\\d|.|\\n' } })
  return { tokenizer, config: { eos_token: endOfText } }
}

/**
 * The mover's chance of winning against the uniform random player when the mover plays on perfectly from `board`
 * (exact, over every continuation; memoised in `memo`). `me` is the mover whose chance it is.
 */
export function winChanceAgainstRandom(board: TicTacToeBoard, me: TicTacToeMark, memo: Map<string, number>): number {
  const key = `${boardKey(board)}${me}`
  const known = memo.get(key)
  if (known !== undefined) return known
  const winner = ticTacToeWinner(board)
  const empty = ticTacToeEmptyCells(board)
  let chance = 0
  if (winner !== undefined) chance = winner === me ? 1 : 0
  else if (empty.length > 0) {
    const mark = ticTacToeMarkToMove(board)
    const chances = empty.map((cell) => winChanceAgainstRandom(withMove(board, cell, mark), me, memo))
    chance = mark === me ? Math.max(...chances) : chances.reduce((total, next) => total + next, 0) / chances.length
  }
  memo.set(key, chance)
  return chance
}

/** `board` with `mark` on `cell`. */
export const withMove = (board: TicTacToeBoard, cell: number, mark: TicTacToeMark): TicTacToeBoard =>
  board.map((value, index) => (index === cell ? mark : value))

/**
 * The best replies to the uniform random player, exactly: at every non-terminal position, the moves that maximise the
 * mover's chance of winning (ties all kept), and that chance. Played throughout, they win 99.5 % of games as O
 * (moving first) and 93.9 % as X: 96.7 % with seats alternating, the most any player can win against the random player
 * (a minimax player, which never loses, wins less: the issue's 95.6 %).
 */
export function bestRepliesToRandom(): { board: TicTacToeBoard; moves: number[]; winChance: number }[] {
  const memo = new Map<string, number>()
  return nonTerminalPositions().map((board) => {
    const mark = ticTacToeMarkToMove(board)
    const empty = ticTacToeEmptyCells(board)
    const chances = empty.map((cell) => winChanceAgainstRandom(withMove(board, cell, mark), mark, memo))
    const best = Math.max(...chances)
    return { board, moves: empty.filter((_, index) => chances[index]! >= best - 1e-12), winChance: best }
  })
}

/** Random legal play as supervised examples: at every non-terminal position, each legal move once (uniform). */
export function randomPlayExamples(): { prompt: string; response: string }[] {
  return nonTerminalPositions().flatMap((board) => ticTacToeEmptyCells(board).map((cell) => ({ prompt: promptOfBoard(board), response: moveText(cell) })))
}

export interface PlayResult {
  winRate: number
  /** The Wilson score interval of `winRate`, 95% (`evaluateAgainst`'s). */
  winRateInterval: { low: number; high: number }
  drawRate: number
  lossRate: number
  /** Share of the learner's moves that were invalid (each ends its game as a loss). */
  invalidRate: number
  /** Win rate with the learner as O (player0, moving first) and as X (player1). */
  winRateAsO: number
  winRateAsX: number
}

/**
 * The learner against a fixed opponent (`evaluateAgainst`), seats alternating (even episodes: the learner is O,
 * player0, and moves first; odd: X), an invalid move counted as a loss (−1/+1). A draw is not a win.
 */
export async function playAgainst(learner: PolicyV1, opponent: PolicyV1, episodes: number, seed: number, temperature: number): Promise<PlayResult> {
  const environments = [() => createTicTacToe({ ...evaluationInvalidRewards })]
  const { winRate, winRateInterval, drawRate, lossRate, invalidRate, winRateBySeat } = await evaluateAgainst({
    learner,
    opponent,
    environments,
    episodes,
    seed,
    generation: { maxTokens: 4, temperature },
  })
  return {
    winRate,
    winRateInterval: { low: winRateInterval[0], high: winRateInterval[1] },
    drawRate,
    lossRate,
    invalidRate,
    winRateAsO: winRateBySeat.player0 ?? 0,
    winRateAsX: winRateBySeat.player1 ?? 0,
  }
}

/**
 * The model's probability of a legal move, exactly: at every non-terminal position, the summed probability
 * of each legal move followed by the end token (`actionLogprobs`; everything else is invalid or malformed);
 * the mean over positions (uniform) and the smallest.
 */
export async function legalMoveMass(model: CausalLanguageModel, tokenizer: TokenizerV1): Promise<{ mean: number; min: number }> {
  const positions = nonTerminalPositions().map((board) => ({ prompt: promptOfBoard(board), actions: ticTacToeEmptyCells(board).map(moveText) }))
  const masses = (await actionLogprobs(model, tokenizer, positions, { batchSize: 1024 })).map((scores) =>
    scores.reduce((total, score) => total + Math.exp(score), 0),
  )
  return { mean: masses.reduce((total, mass) => total + mass, 0) / masses.length, min: Math.min(1, ...masses) }
}

/**
 * A tactical TicTacToe player: it completes its own line when it can, blocks the opponent's when it must, and
 * otherwise moves uniformly at random. Against it a missed block loses at once, in the varied positions random play
 * makes — the positions a learner never meets against minimax, where it blunders against the random player.
 */
export function createTacticalPolicy(options: { seed: number; id?: string }): PolicyV1 {
  return scriptedPlayer(options.id ?? 'tictactoe-tactical', 'tactical', options.seed, tacticalMove)
}

/**
 * The opportunist TicTacToe player: it completes its own line when it can and otherwise moves uniformly at random —
 * the random player that never misses a win. It never blocks, so the learner meets the positions random play makes,
 * but a block the learner misses there loses at once instead of once in as many games as there are empty cells.
 */
export function createOpportunistPolicy(options: { seed: number; id?: string }): PolicyV1 {
  return scriptedPlayer(options.id ?? 'tictactoe-opportunist', 'opportunist', options.seed, opportunistMove)
}

/** A scripted player `id` that answers each turn with `move` of the turn's board (`kind` names it in errors). */
function scriptedPlayer(id: string, kind: string, seed: number, move: (board: TicTacToeBoard, random: Random) => number): PolicyV1 {
  return createOpponentPolicy({
    id,
    seed,
    decide: (_observation, random, turn) => `[${move(ticTacToeTurnBoard(turn, `the ${kind} player '${id}'`), random)}]`,
  })
}

/** The opportunist player's move on `board` (a game not over): a winning cell, else a random empty one. */
export function opportunistMove(board: TicTacToeBoard, random: Random): number {
  return completingCell(board, ticTacToeMarkToMove(board)) ?? random.choice(ticTacToeEmptyCells(board))
}

/** The first empty cell where `player` would complete a line of `board`, if any. */
export function completingCell(board: TicTacToeBoard, player: TicTacToeMark): number | undefined {
  return ticTacToeEmptyCells(board).find((cell) => ticTacToeWinner(withMove(board, cell, player)) === player)
}

/** The tactical player's move on `board` (a game not over): a winning cell, else a blocking cell, else a random empty one. */
export function tacticalMove(board: TicTacToeBoard, random: Random): number {
  const mark = ticTacToeMarkToMove(board)
  return completingCell(board, mark) ?? completingCell(board, mark === 'O' ? 'X' : 'O') ?? random.choice(ticTacToeEmptyCells(board))
}
