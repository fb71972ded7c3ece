import type { ChatMessage, EnvironmentV1, PolicyV1, TokenizerV1, TurnView } from '@ludic/core'
import {
  createIteratedPrisonersDilemma,
  createKuhnPoker,
  createRandomPolicy,
  createTicTacToe,
  evaluationInvalidRewards,
  kuhnExploitability,
  kuhnInformationStates,
  kuhnPolicyOf,
  kuhnTerseObservation,
  parseIteratedPrisonersDilemmaObservation,
  parseTicTacToeBoard,
  ticTacToeMarkToMove,
  type KuhnPokerOptions,
} from '@ludic/games'
import type { CausalLanguageModel } from '@ludic/model'
import { randomLegalPlay } from '@ludic/rollout'
import { actionLogprobs, evaluateAgainst } from '@ludic/trainer'
import { trainBpe, Tokenizer } from '@ludic/tokenizer'

/** Kuhn Poker as in `examples/selfplay-kuhn-poker`: one round, net chips as the reward (its exploitability is exact). */
export const kuhnOptions: KuhnPokerOptions = { rounds: 1, reward: 'chips' }

/** The games trained together, by environment id. */
export const gameIds = ['kuhn-poker-v1', 'tictactoe-v0', 'iterated-prisoners-dilemma-v0'] as const
export type GameId = (typeof gameIds)[number]
export const gameNames = { 'kuhn-poker-v1': 'kuhn', 'tictactoe-v0': 'tictactoe', 'iterated-prisoners-dilemma-v0': 'ipd' } as const satisfies Record<
  GameId,
  string
>
export type GameName = (typeof gameNames)[GameId]

export interface GameSettings {
  /** Rounds of the Iterated Prisoner's Dilemma. */
  ipdRounds: number
  /** Invalid-move reward in training, per game (the opponent gets +0.5). */
  invalidPenalty: Record<GameId, number>
}

/** One factory per game; `evaluation` counts an invalid move as a loss (−1/+1). */
export function gameFactories(settings: GameSettings, evaluation = false): Record<GameId, () => EnvironmentV1> {
  const invalid = (game: GameId) => (evaluation ? evaluationInvalidRewards : { invalidPenalty: settings.invalidPenalty[game] })
  return {
    'kuhn-poker-v1': () => createKuhnPoker({ ...kuhnOptions, ...invalid('kuhn-poker-v1') }),
    'tictactoe-v0': () => createTicTacToe(invalid('tictactoe-v0')),
    'iterated-prisoners-dilemma-v0': () => createIteratedPrisonersDilemma({ rounds: settings.ipdRounds, ...invalid('iterated-prisoners-dilemma-v0') }),
  }
}

/**
 * TicTacToe, tersely: the mark to play, the board, one row a line, an empty cell shown by its number (the
 * move that fills it), and the free cells, last (copying a legal move from a list is easier for a tiny
 * model than reading it off the board): `tictactoe X\nO12\n3X5\n678\nfree 1 2 3 5 6 7 8`.
 */
export function ticTacToeTerse(observation: string): string {
  const board = parseTicTacToeBoard(observation)
  const mark = ticTacToeMarkToMove(board) // the player to act plays the mark to move
  const cell = (index: number) => board[index] || String(index)
  const free = board.flatMap((mark, index) => (mark === '' ? [String(index)] : []))
  return [`tictactoe ${mark}`, ...[0, 1, 2].map((row) => `${cell(row * 3)}${cell(row * 3 + 1)}${cell(row * 3 + 2)}`), `free ${free.join(' ')}`].join('\n')
}

/**
 * Iterated Prisoner's Dilemma, tersely: the round, then the past rounds' choices, own first
 * (`C`ooperate/`D`efect): `ipd 3/3\nme CD\nthem DD`.
 */
export function ipdTerse(observation: string): string {
  const { player, round, rounds, results } = parseIteratedPrisonersDilemmaObservation(observation)
  const mine = results.map((choices) => choices[player]!)
  const theirs = results.map((choices) => choices[1 - player]!)
  return `ipd ${round}/${rounds}\nme ${mine.join('')}\nthem ${theirs.join('')}`
}

/** The terse observation of any of the games (dispatching on the view's text); Kuhn Poker's is `kuhnTerseObservation`. */
export function terseObservation(observation: string): string {
  if (observation.includes('Tic Tac Toe')) return ticTacToeTerse(observation)
  if (observation.includes("Prisoner's Dilemma")) return ipdTerse(observation)
  return kuhnTerseObservation(observation)
}

/** The rollout's prompt: one user message with the terse observation (scripted opponents decide from each request's turn view, see `playAgainstRandom`). */
export const promptOf = (view: TurnView): ChatMessage[] => [{ role: 'user', content: terseObservation(view.observation) }]

/** The chat template: the last message, then `\n>` where the move goes. */
export const chatTemplate = (messages: readonly ChatMessage[]): string => `${messages.at(-1)?.content ?? ''}\n>`

/**
 * Random legal play as supervised examples, per game (`randomLegalPlay`): at each distinct state, every legal move
 * once. Kuhn Poker's states are its 12 information states; TicTacToe's and the dilemma's come from `games` random
 * games. Each game's list is repeated to about `perGame` examples, so no game dominates the warm-up.
 */
export function randomPlayExamples(
  settings: GameSettings,
  games: number,
  perGame: number,
  seed: number,
): Record<GameId, { prompt: string; response: string }[]> {
  const factories = gameFactories(settings)
  const shared = { prompt: promptOf, chatTemplate, repeatTo: perGame }
  const result = {} as Record<GameId, { prompt: string; response: string }[]>
  for (const game of gameIds) {
    const { examples } =
      game === 'kuhn-poker-v1'
        ? randomLegalPlay({ ...shared, states: kuhnInformationStates(kuhnOptions) })
        : randomLegalPlay({ ...shared, environment: factories[game], games, seed })
    result[game] = examples.map(({ prompt, response }) => ({ prompt, response }))
  }
  return result
}

/** The end token: a completion ends with it. */
export const endOfText = '<|end|>'

/** A byte-level BPE trained on what the model reads and writes in every game. */
export function trainGamesTokenizer(examples: Record<GameId, { prompt: string; response: string }[]>, vocabSize: number): Tokenizer {
  const corpus = [...new Set(gameIds.flatMap((game) => examples[game].map((example) => `${example.prompt}${example.response}`)))]
  return Tokenizer.fromJSON(trainBpe(corpus, { vocabSize, specialTokens: [endOfText] }), { eos_token: endOfText })
}

export interface GameFigures {
  /** Share of games the learner wins (an invalid move loses). */
  winRate: number
  /** Share of draws. */
  drawRate: number
  /** The learner's mean reward (Kuhn: net chips; others ±1). */
  meanReward: number
  /** Share of the learner's moves that were invalid. */
  invalidRate: number
}

/**
 * The learner against the uniform random player in every game (`evaluateAgainst`: seats alternating, the learner
 * reads the terse prompt, the random player the full observation), sampled at temperature 1, an invalid move
 * counted as a loss; figures per game.
 */
export async function playAgainstRandom(learner: PolicyV1, settings: GameSettings, episodes: number, seed: number): Promise<Record<GameId, GameFigures>> {
  const factories = gameFactories(settings, true)
  const { byEnvironment } = await evaluateAgainst({
    learner,
    opponent: createRandomPolicy({ seed, id: 'random' }),
    environments: gameIds.map((game) => factories[game]),
    episodes,
    seed,
    prompt: (view) => promptOf(view),
    generation: { maxTokens: 8, temperature: 1 },
  })
  const figures = (game: GameId): GameFigures => {
    const { winRate, drawRate, meanReward, invalidRate } = byEnvironment[game]!
    return { winRate, drawRate, meanReward, invalidRate }
  }
  return Object.fromEntries(gameIds.map((game) => [game, figures(game)])) as Record<GameId, GameFigures>
}

/**
 * Kuhn Poker's exploitability, exactly: each legal move scored by the model at each information state
 * (`actionLogprobs`, the prompt as the model reads it in training), normalised over the legal moves (`kuhnPolicyOf`).
 */
export async function kuhnExploitabilityOf(model: CausalLanguageModel, tokenizer: TokenizerV1): Promise<number> {
  const states = kuhnInformationStates(kuhnOptions)
  const scores = await actionLogprobs(
    model,
    tokenizer,
    states.map((state) => ({ prompt: chatTemplate(promptOf(state)), actions: state.legalActions })),
  )
  const policy = await kuhnPolicyOf((observation) => scores[states.findIndex((state) => state.observation === observation)]!, {
    prompt: 'observation',
    environment: kuhnOptions,
  })
  return kuhnExploitability(policy).exploitability
}
