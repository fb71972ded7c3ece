/**
 * A tiny model made from scratch that plays Ludic's two-player games, as the transfer table and the collection
 * suite train it: a byte-level BPE trained on the games' terse prompts and moves, a `tiny` transformer, a
 * supervised warm-up on random legal play of every game (so its moves are legal everywhere), then self-play with
 * role-conditioned advantages (RAE) and PPO on the training games only.
 */
import { createRae } from '@ludic/advantages'
import { InvalidArgumentError, type ChatMessage, type EnvironmentV1, type PolicyV1, type TurnView } from '@ludic/core'
import {
  createGame,
  createRandomPolicy,
  evaluationInvalidRewards,
  kuhnInformationStates,
  kuhnTerseObservation,
  parseTicTacToeBoard,
  ticTacToeMarkToMove,
  type KuhnPokerOptions,
} from '@ludic/games'
import { createModel, type CausalLanguageModel } from '@ludic/model'
import { createPolicyLoss } from '@ludic/objectives'
import { randomLegalPlay } from '@ludic/rollout'
import { trainBpe, Tokenizer } from '@ludic/tokenizer'
import { createRlTrainer, createSftTrainer, evaluateAgainst, type MatchFigures, type StepMetrics } from '@ludic/trainer'
import { builtEntryPath } from '../perf/package-paths.js'

export const endOfText = '<|end|>'
/** Kuhn Poker as the examples train it: one round, net chips (its exploitability is exact). */
export const selfPlayKuhnOptions: KuhnPokerOptions = { rounds: 1, reward: 'chips' }

/**
 * Shorter games for a tiny model's budget: Kuhn Poker one round with net chips (its exploitability is exact),
 * Pig Dice to 20 points, the Iterated Prisoner's Dilemma 3 rounds. Others keep their defaults.
 */
export const shortGameOptions: Readonly<Record<string, Record<string, unknown>>> = {
  'kuhn-poker-v1': selfPlayKuhnOptions,
  'pig-dice-v0': { targetScore: 20 },
  'iterated-prisoners-dilemma-v0': { rounds: 3 },
}

/** A game's options in self-play and evaluation: `shortGameOptions`, then `overrides`, then the invalid-move rewards. */
export function gameOptionsFor(
  game: string,
  invalid: { invalidPenalty: number; invalidOpponentReward?: number },
  overrides: Readonly<Record<string, Record<string, unknown>>> = {},
): Record<string, unknown> {
  return { ...(shortGameOptions[game] ?? {}), ...(overrides[game] ?? {}), ...invalid }
}

/**
 * The terse text a tiny model reads for a turn: Kuhn Poker's `kuhnTerseObservation`; TicTacToe's mark, board
 * (an empty cell shows its number) and free cells; any other game its id, the observation's last three lines
 * (at most 240 characters) and the legal moves.
 */
export function terseGameText(game: string, view: TurnView): string {
  if (game === 'kuhn-poker-v1') return kuhnTerseObservation(view.observation)
  if (game === 'tictactoe-v0') {
    const board = parseTicTacToeBoard(view.observation)
    const mark = ticTacToeMarkToMove(board) // the player to act plays the mark to move
    const cell = (index: number) => board[index] || String(index)
    const free = board.flatMap((value, index) => (value === '' ? [String(index)] : []))
    return [`tictactoe ${mark}`, ...[0, 1, 2].map((row) => `${cell(row * 3)}${cell(row * 3 + 1)}${cell(row * 3 + 2)}`), `free ${free.join(' ')}`].join('\n')
  }
  const lines = view.observation
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.length > 0 && !/available (actions|moves)/i.test(line))
  const tail = lines.slice(-3).join('\n').slice(-240)
  return `${game.replace(/-v\d+$/, '')}\n${tail}\nmoves ${(view.legalActions ?? []).join(' ')}`
}

/** The rollout prompt of a game: one user message with its terse text. */
export function terseGamePrompt(game: string): (view: TurnView) => ChatMessage[] {
  return (view) => [{ role: 'user', content: terseGameText(game, view) }]
}

/** The prompt of a turn of any of `games`: dispatched on the environment id. */
export function tersePrompt(view: TurnView, _history: unknown, context: { environmentId: string }): ChatMessage[] {
  return [{ role: 'user', content: terseGameText(context.environmentId, view) }]
}

/** The chat template: the last message, then `\n>` where the move goes. */
export const gameChatTemplate = (messages: readonly ChatMessage[]): string => `${messages.at(-1)?.content ?? ''}\n>`

/**
 * Random legal play as supervised examples, per game (`randomLegalPlay`): at each distinct prompt every legal move
 * once, repeated to about `perGame` examples so no game dominates. Kuhn Poker's states are its 12 information
 * states; another game's come from `episodes` random games (at most 200 turns each).
 */
export function randomPlayExamples(
  games: readonly string[],
  episodes: number,
  perGame: number,
  seed: number,
): Record<string, { prompt: string; response: string }[]> {
  const result: Record<string, { prompt: string; response: string }[]> = {}
  for (const game of games) {
    const shared = { prompt: terseGamePrompt(game), chatTemplate: gameChatTemplate, repeatTo: perGame }
    try {
      const { examples } =
        game === 'kuhn-poker-v1'
          ? randomLegalPlay({ ...shared, states: kuhnInformationStates(selfPlayKuhnOptions) })
          : randomLegalPlay({
              ...shared,
              environment: () => createGame(game, gameOptionsFor(game, { invalidPenalty: -1 })),
              games: episodes,
              seed,
              maxTurns: 200,
            })
      result[game] = examples.map(({ prompt, response }) => ({ prompt, response }))
    } catch (error) {
      if (!InvalidArgumentError.isInstance(error) || error.argument !== 'options.environment') throw error
      throw new InvalidArgumentError({ argument: 'games', value: game, message: 'does not list its legal moves; the tiny game model needs them', cause: error })
    }
  }
  return result
}

/** A byte-level BPE trained on what the model reads and writes in every game. */
export function trainGamesTokenizer(examples: Record<string, { prompt: string; response: string }[]>, vocabSize: number): Tokenizer {
  const corpus = [...new Set(Object.values(examples).flatMap((list) => list.map((example) => `${example.prompt}${example.response}`)))]
  return Tokenizer.fromJSON(trainBpe(corpus, { vocabSize, specialTokens: [endOfText] }), { eos_token: endOfText })
}

export interface SelfPlaySettings {
  seed: number
  /** Self-play steps. */
  steps: number
  episodesPerStep: number
  ppoEpochs: number
  miniBatchSize: number
  learningRate: number
  klCoefficient: number
  /** Reward of an invalid move in training (the opponent gets +0.5). */
  invalidPenalty: number
  signal?: AbortSignal
  onStep?: (metrics: StepMetrics) => void
  /** Evaluated every `evaluateEvery` steps; its numbers are logged as `eval/<name>`. */
  evaluate?: (step: number) => Promise<Record<string, number>>
  evaluateEvery?: number
  /**
   * Rollout worker threads collecting while the main thread trains (Kuhn Poker only: the workers build their game
   * from `dist/selfplay-rollout-setup.js`); 0 or absent: synchronous collection.
   */
  asyncWorkers?: number
  vocabSize?: number
}

/** Self-play of `model` on `games` (one trainer, every game each step), RAE and PPO; returns the trainer's history. */
export async function selfPlay(model: CausalLanguageModel, tokenizer: Tokenizer, games: readonly string[], settings: SelfPlaySettings): Promise<StepMetrics[]> {
  const environments = games.map((game) => (): EnvironmentV1 => createGame(game, gameOptionsFor(game, { invalidPenalty: settings.invalidPenalty })))
  const workers = settings.asyncWorkers ?? 0
  if (workers > 0 && (games.length !== 1 || games[0] !== 'kuhn-poker-v1')) {
    throw new InvalidArgumentError({ argument: 'games', value: games, message: 'must be Kuhn Poker alone with asynchronous collection' })
  }
  const evaluate = settings.evaluate
  const trainer = createRlTrainer({
    model,
    tokenizer,
    ...(workers === 0
      ? { environments, prompt: tersePrompt, chatTemplate: gameChatTemplate }
      : {
          asyncRollout: {
            setupModule: builtEntryPath('selfplay-rollout-setup'),
            setupData: { vocabSize: settings.vocabSize ?? tokenizer.vocabSize, invalidPenalty: settings.invalidPenalty },
            workers,
          },
        }),
    ...(evaluate === undefined ? {} : { evaluate: ({ step }: { step: number }) => evaluate(step), evaluateEvery: settings.evaluateEvery ?? 1 }),
    policyLoss: createPolicyLoss('ppo-clip', { clipLow: 0.2, clipHigh: 0.2 }),
    optimizer: { learningRate: settings.learningRate },
    ...(settings.klCoefficient > 0 ? { kl: { coefficient: settings.klCoefficient } } : {}),
    batch: {
      episodesPerStep: settings.episodesPerStep,
      ppoEpochs: settings.ppoEpochs,
      miniBatchSize: settings.miniBatchSize,
      maxTokens: 8,
      concurrency: 256,
      maxGenerationBatch: 256,
    },
    advantage: createRae(),
    seed: settings.seed,
    notify: () => {},
  })
  try {
    await trainer.run({
      steps: settings.steps,
      ...(settings.signal === undefined ? {} : { signal: settings.signal }),
      ...(settings.onStep === undefined ? {} : { onStep: settings.onStep }),
    })
    return [...trainer.history]
  } finally {
    trainer.dispose()
  }
}

/** Supervised warm-up of `model` on `examples` for `steps` updates. */
export async function warmUp(
  model: CausalLanguageModel,
  tokenizer: Tokenizer,
  examples: readonly { prompt: string; response: string }[],
  settings: { steps: number; batchSize: number; learningRate: number; seed: number },
): Promise<number | undefined> {
  if (settings.steps === 0) return undefined
  const sft = createSftTrainer({
    model,
    tokenizer,
    examples: [...examples],
    batchSize: settings.batchSize,
    optimizer: { learningRate: settings.learningRate },
    seed: settings.seed,
  })
  try {
    return (await sft.run({ steps: settings.steps })).at(-1)?.loss
  } finally {
    sft.dispose()
  }
}

/** A fresh `tiny` model with `source`'s weights (the same configuration). */
export function copyModel(source: CausalLanguageModel, seed: number): CausalLanguageModel {
  const copy = createModel('tiny', { vocabSize: source.config.vocabSize, seed })
  for (const [name, variable] of source.parameters()) copy.parameter(name).assign(variable)
  return copy
}

/**
 * The model against the uniform random player in every game (`evaluateAgainst`: seats alternating, the model reads
 * its terse prompt, the random player the turn's legal moves), sampled at temperature
 * 1, an invalid move counted as a loss; figures per game.
 */
export async function playAgainstRandom(learner: PolicyV1, games: readonly string[], episodes: number, seed: number): Promise<Record<string, MatchFigures>> {
  const { byEnvironment } = await evaluateAgainst({
    learner,
    opponent: createRandomPolicy({ seed, id: 'random' }),
    environments: games.map((game) => () => createGame(game, gameOptionsFor(game, evaluationInvalidRewards))),
    episodes,
    seed,
    prompt: tersePrompt,
    generation: { maxTokens: 8, temperature: 1 },
  })
  return byEnvironment
}

/** Kuhn Poker's random legal play as examples (each of the 12 decisions, each legal move once). */
export function kuhnExamples(): { prompt: string; response: string }[] {
  return randomPlayExamples(['kuhn-poker-v1'], 1, 1, 0)['kuhn-poker-v1']!
}

/** The byte-level BPE of the Kuhn Poker model: trained on the 12 decisions' prompts and moves (deterministic). */
export function kuhnTokenizer(vocabSize: number): Tokenizer {
  return trainGamesTokenizer({ 'kuhn-poker-v1': kuhnExamples() }, vocabSize)
}
