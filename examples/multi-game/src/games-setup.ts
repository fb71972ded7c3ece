import { createRandom, type ChatMessage, type EnvironmentV1, type GenerationRequest, type PolicyV1, type TurnView } from '@ludic/core'
import { kuhnOptions, terseObservation as kuhnTerseObservation } from '@ludic/example-selfplay-kuhn-poker/kuhn-setup'
import {
  createIteratedPrisonersDilemma,
  createKuhnPoker,
  createRandomPolicy,
  createTicTacToe,
  evaluationInvalidRewards,
  kuhnInformationStates,
  parseTicTacToeBoard,
} from '@ludic/games'
import { collect } from '@ludic/rollout'
import { trainBpe, Tokenizer } from '@ludic/tokenizer'

export const endOfText = '<|end|>'

/** The games trained together, by environment id. */
export const gameIds = ['kuhn-poker-v1', 'tictactoe-v0', 'iterated-prisoners-dilemma-v0'] as const
export type GameId = (typeof gameIds)[number]
export const gameNames: Record<GameId, string> = { 'kuhn-poker-v1': 'kuhn', 'tictactoe-v0': 'tictactoe', 'iterated-prisoners-dilemma-v0': 'ipd' }

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
  const mark = /you will be '([OX])'/.exec(observation)?.[1] ?? '?'
  const cell = (index: number) => board[index] || String(index)
  const free = board.flatMap((mark, index) => (mark === '' ? [String(index)] : []))
  return [`tictactoe ${mark}`, ...[0, 1, 2].map((row) => `${cell(row * 3)}${cell(row * 3 + 1)}${cell(row * 3 + 2)}`), `free ${free.join(' ')}`].join('\n')
}

/**
 * Iterated Prisoner's Dilemma, tersely: the round, then the past rounds' choices, own first
 * (`C`ooperate/`D`efect): `ipd 3/3\nme CD\nthem DD`.
 */
export function ipdTerse(observation: string): string {
  const player = Number(/You are Player ([01])/.exec(observation)?.[1] ?? 0)
  const round = /Round (\d+) of (\d+): make your decision/.exec(observation)
  const mine: string[] = []
  const theirs: string[] = []
  for (const [, result] of observation.matchAll(/Round \d+ Results:\n([^\n]*)/g)) {
    const choices = result === 'Both players cooperated' ? 'CC' : result === 'Both players defected' ? 'DD' : result!.startsWith('Player 0 cooperated') ? 'CD' : 'DC'
    mine.push(choices[player]!)
    theirs.push(choices[1 - player]!)
  }
  return `ipd ${round?.[1] ?? '?'}/${round?.[2] ?? '?'}\nme ${mine.join('')}\nthem ${theirs.join('')}`
}

/** The terse observation of any of the games (dispatching on the view's text); Kuhn's is the Kuhn example's. */
export function terseObservation(observation: string): string {
  if (observation.includes('Tic Tac Toe')) return ticTacToeTerse(observation)
  if (observation.includes("Prisoner's Dilemma")) return ipdTerse(observation)
  return kuhnTerseObservation(observation)
}

/**
 * The rollout's prompt: a system message with the full observation (what scripted opponents read, see
 * `withFullObservation`) and a user message with the terse one (what the model reads: the chat template
 * renders the last message only). For Kuhn Poker the rendered prompt is exactly the Kuhn example's, so
 * its exact exploitability (`exploitabilityOf`) applies.
 */
export const promptOf = (view: TurnView): ChatMessage[] => [
  { role: 'system', content: view.observation },
  { role: 'user', content: terseObservation(view.observation) },
]

/** The chat template: the last message, then `\n>` where the move goes (the Kuhn example's). */
export const chatTemplate = (messages: readonly ChatMessage[]): string => `${messages.at(-1)?.content ?? ''}\n>`

/** A scripted opponent reads the game from the last user message: give it the full observation (the system message). */
export function withFullObservation(policy: PolicyV1): PolicyV1 {
  const full = (request: GenerationRequest): GenerationRequest => {
    const observation = request.messages.find((message) => message.role === 'system')?.content
    return observation === undefined ? request : { ...request, messages: [{ role: 'user', content: observation }] }
  }
  return { specificationVersion: 'v1', id: policy.id, generate: (requests) => policy.generate(requests.map(full)) }
}

/** Observations (with their legal moves) of the states random legal play visits in `games` games of a game. */
function randomPlayStates(factory: () => EnvironmentV1, games: number, seed: number): TurnView[] {
  const random = createRandom(seed)
  const environment = factory()
  const views: TurnView[] = []
  for (let game = 0; game < games; game++) {
    let view: TurnView | undefined = environment.reset(seed * 100_000 + game)
    while (view !== undefined) {
      views.push(view)
      const outcome = environment.step(random.choice(view.legalActions!))
      view = outcome.done || outcome.truncated ? undefined : outcome.next
    }
  }
  return views
}

/**
 * Random legal play as supervised examples, per game: at each distinct state, every legal move once. Kuhn
 * Poker's states are its 12 information states; TicTacToe's and the dilemma's come from `games` random
 * games. Each game's list is repeated to about `perGame` examples, so no game dominates the warm-up.
 */
export function randomPlayExamples(settings: GameSettings, games: number, perGame: number, seed: number): Record<GameId, { prompt: string; response: string }[]> {
  const factories = gameFactories(settings)
  const statesOf: Record<GameId, readonly TurnView[]> = {
    'kuhn-poker-v1': kuhnInformationStates(kuhnOptions).map((state) => ({ role: '', observation: state.observation, legalActions: state.legalActions })),
    'tictactoe-v0': randomPlayStates(factories['tictactoe-v0'], games, seed),
    'iterated-prisoners-dilemma-v0': randomPlayStates(factories['iterated-prisoners-dilemma-v0'], games, seed),
  }
  const result = {} as Record<GameId, { prompt: string; response: string }[]>
  for (const game of gameIds) {
    const seen = new Set<string>()
    const examples: { prompt: string; response: string }[] = []
    for (const view of statesOf[game]) {
      const prompt = chatTemplate(promptOf(view))
      if (seen.has(prompt)) continue
      seen.add(prompt)
      for (const move of view.legalActions ?? []) examples.push({ prompt, response: move })
    }
    const copies = Math.max(1, Math.round(perGame / examples.length))
    result[game] = Array.from({ length: copies }, () => examples).flat()
  }
  return result
}

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
 * The learner against the uniform random player in every game, seats alternating, sampled at
 * temperature 1, an invalid move counted as a loss; figures per game.
 */
export async function playAgainstRandom(learner: PolicyV1, settings: GameSettings, episodes: number, seed: number): Promise<Record<GameId, GameFigures>> {
  const random = withFullObservation(createRandomPolicy({ seed, id: 'random' }))
  const learnerSeat = (seedOfEpisode: number) => (seedOfEpisode % 2 === 0 ? 'player0' : 'player1')
  const factories = gameFactories(settings, true)
  const { trajectories, samples } = await collect({
    environments: gameIds.map((game) => factories[game]),
    policies: ({ role, seed: episodeSeed }) => (role === learnerSeat(episodeSeed) ? learner : random),
    seeds: Array.from({ length: episodes }, (_, index) => seed * 100_000 + index),
    prompt: (view) => promptOf(view),
    generation: { maxTokens: 8, temperature: 1 },
    samplingSeed: seed,
    learnerPolicyIds: [learner.id],
    concurrency: 256,
  })
  const result = {} as Record<GameId, GameFigures>
  for (const game of gameIds) {
    const played = trajectories.filter((trajectory) => trajectory.environmentId === game)
    let wins = 0
    let draws = 0
    let reward = 0
    for (const trajectory of played) {
      const seat = learnerSeat(trajectory.seed)
      const mine = trajectory.returns[seat] ?? 0
      const theirs = trajectory.returns[seat === 'player0' ? 'player1' : 'player0'] ?? 0
      reward += mine
      if (mine > theirs) wins++
      else if (mine === theirs) draws++
    }
    const moves = samples.filter((sample) => sample.environmentId === game)
    result[game] = {
      winRate: wins / played.length,
      drawRate: draws / played.length,
      meanReward: reward / played.length,
      invalidRate: moves.length === 0 ? 0 : moves.filter((sample) => sample.invalid).length / moves.length,
    }
  }
  return result
}
