/**
 * A playground session: one game's tokenizer and tiny model, its warm-up and self-play (the example's recipe), its
 * evaluations, games against a person, preferences recorded in play and trained on with DPO, and the model's files.
 * Plain TypeScript on the packages' browser entries: the page runs it in a Web Worker (`worker.ts`), the tests in
 * Node.
 */
import { createRae } from '@ludic/advantages'
import { createRandom, deriveSeed, InvalidArgumentError, type EnvironmentV1, type Random, type TokenizerV1, type TurnView } from '@ludic/core'
import {
  createKuhnPoker,
  createRandomPolicy,
  createTicTacToe,
  createTicTacToeMinimaxPolicy,
  evaluationInvalidRewards,
  parseTicTacToeBoard,
  ticTacToeMarkToMove,
  type TicTacToeBoard,
} from '@ludic/games'
import { checkVocabularyFits, createLocalPolicy, createModel, loadModelFromFiles, modelFiles, type CausalLanguageModel } from '@ludic/model'
import { createPolicyLoss } from '@ludic/objectives'
import { Tokenizer } from '@ludic/tokenizer'
import * as tf from '@tensorflow/tfjs-core'
import { actionLogprobs, createPreferenceTrainer, createRlTrainer, evaluateAgainst, type RlTrainer, type RlTrainerConfig, warmUp } from '@ludic/trainer'
import {
  chatTemplate as kuhnChatTemplate,
  exploitabilityOf,
  kuhnOptions,
  kuhnTokenizerFiles,
  promptOf as kuhnPromptOf,
  randomPlayExamples as kuhnRandomPlayExamples,
} from '../../selfplay-kuhn-poker/src/kuhn-setup.js'
import {
  chatTemplate as ticTacToeChatTemplate,
  moveText,
  playAgainst,
  promptOfBoard,
  randomPlayExamples as ticTacToeRandomPlayExamples,
  ticTacToeTokenizerFiles,
} from '../../selfplay-tictactoe/src/tictactoe-setup.js'
import { resolveRecipe, type GameName, type Recipe, type RecipeOptions } from './recipes.js'

/** One evaluation: exact exploitability (Kuhn), results against the random player and against minimax (TicTacToe). */
export interface Evaluation {
  step: number
  /** Kuhn Poker: exact exploitability of the model's policy (0 is Nash; uniform play 0.458). */
  exploitability?: number
  /** Against the uniform random player, seats alternating, sampled at T = 1, an invalid move a loss. */
  winRate: number
  drawRate: number
  invalidRate: number
  /** TicTacToe: sampled games against minimax (perfect play). */
  minimax?: { winRate: number; drawRate: number; lossRate: number }
}

/** One self-play step's figures, as the page charts them. */
export interface StepReport {
  step: number
  loss: number
  /** Mean reward of the learner's seats this step. */
  reward: number
  invalidRate: number
  tokensPerSecond: number
  seconds: number
  metrics: Record<string, number>
}

/** A decision of the model's: each legal move's probability (normalised over the legal moves, exactly). */
export interface MoveChoice {
  prompt: string
  moves: { action: string; probability: number }[]
}

/** A game against a person, as the page draws it. */
export interface GameState {
  game: GameName
  /** The seat the person plays (`player0` moves first). */
  humanRole: string
  observation: string
  /** TicTacToe: the nine cells. */
  board?: TicTacToeBoard
  /** Kuhn Poker: the person's card. */
  card?: string
  /** The person's legal moves, when it is their turn. */
  legalActions: readonly string[]
  done: boolean
  /** Rewards per role at the end. */
  rewards: Record<string, number>
  /** The model's moves so far: what it saw, its probabilities and what it played. */
  modelMoves: (MoveChoice & { played: string })[]
}

export interface PreferencePair {
  prompt: string
  chosen: string
  rejected: string
}

/**
 * The logits of `model` after `ids` (its last position), read asynchronously (as WebGPU needs): what the page, its
 * backend check and the tests compare across backends and between the page and Node.
 */
export async function lastLogits(model: CausalLanguageModel, ids: ArrayLike<number>): Promise<number[]> {
  const last = tf.tidy(() => {
    const logits = model.forward(tf.tensor2d([Array.from(ids)], [1, ids.length], 'int32')) as tf.Tensor3D
    return tf.slice(logits, [0, ids.length - 1, 0], [1, 1, -1])
  })
  try {
    return Array.from(await last.data())
  } finally {
    last.dispose()
  }
}

/** `tokenizer.json` and `tokenizer_config.json`, parsed. */
interface TokenizerFiles {
  tokenizer: object
  config: Record<string, unknown>
}

/** What a model download holds: `config.json`, `model.safetensors`, `tokenizer.json`, `tokenizer_config.json`, `playground.json`. */
export type ModelFiles = Record<string, string | Uint8Array>

export class PlaygroundSession {
  readonly recipe: Recipe
  readonly model: CausalLanguageModel
  readonly tokenizer: Tokenizer
  private readonly tokenizerFiles: TokenizerFiles
  private trainer: RlTrainer | undefined
  private selfPlaySteps = 0
  private game: { environment: EnvironmentV1; view: TurnView | undefined; state: GameState } | undefined
  private gamesPlayed = 0
  readonly preferences: PreferencePair[] = []
  /** Draws the model's moves in games against a person. */
  private readonly playRandom: Random

  private constructor(recipe: Recipe, model: CausalLanguageModel, tokenizerFiles: TokenizerFiles) {
    this.recipe = recipe
    this.model = model
    this.tokenizerFiles = tokenizerFiles
    this.tokenizer = Tokenizer.fromJSON(tokenizerFiles.tokenizer, tokenizerFiles.config)
    this.playRandom = createRandom(deriveSeed(recipe.seed, 'play'))
  }

  /** A fresh tokenizer (trained on the game's text) and a model from scratch, as the example makes them. */
  static create(options: RecipeOptions): PlaygroundSession {
    const recipe = resolveRecipe(options)
    const files = recipe.game === 'kuhn' ? kuhnTokenizerFiles(recipe.vocabSize) : ticTacToeTokenizerFiles(recipe.vocabSize)
    const vocabSize = Tokenizer.fromJSON(files.tokenizer, files.config).vocabSize
    return new PlaygroundSession(recipe, createModel(recipe.modelSize, { vocabSize, seed: recipe.seed }), files)
  }

  /**
   * A session on a model's files: the page's download (`files()`), or a model trained in Node (`saveModel`'s
   * `config.json` and `model.safetensors` with `loadTokenizer`'s `tokenizer.json` and `tokenizer_config.json`, as
   * `ludic train` writes them under `<run>/model`). Without `playground.json` the recipe is `fallback`'s game's.
   * The tokenizer must fit the model's vocabulary.
   */
  static async fromFiles(files: ModelFiles, fallback?: { game: GameName }): Promise<PlaygroundSession> {
    const text = (name: string): string => {
      const file = files[name]
      if (file === undefined) throw new InvalidArgumentError({ argument: 'files', value: Object.keys(files), message: `has no ${name}` })
      return typeof file === 'string' ? file : new TextDecoder().decode(file)
    }
    const parse = (name: string): unknown => {
      const content = text(name)
      try {
        return JSON.parse(content)
      } catch (error) {
        throw new InvalidArgumentError({ argument: `files['${name}']`, value: content.slice(0, 80), message: 'is not valid JSON', cause: error })
      }
    }
    const recipeOptions =
      files['playground.json'] !== undefined
        ? (parse('playground.json') as RecipeOptions)
        : fallback === undefined
          ? parse('playground.json')
          : { game: fallback.game }
    const recipe = resolveRecipe(recipeOptions as RecipeOptions)
    const tokenizerFiles: TokenizerFiles = {
      tokenizer: parse('tokenizer.json') as object,
      config: files['tokenizer_config.json'] === undefined ? {} : (parse('tokenizer_config.json') as Record<string, unknown>),
    }
    const tokenizer = Tokenizer.fromJSON(tokenizerFiles.tokenizer, tokenizerFiles.config)
    if (tokenizer.eosTokenId === undefined) {
      throw new InvalidArgumentError({
        argument: "files['tokenizer_config.json']",
        value: tokenizerFiles.config,
        message: 'names no end token (eos_token), which ends every move',
      })
    }
    const model = await loadModelFromFiles({ 'config.json': text('config.json'), 'model.safetensors': bytes(files['model.safetensors'], 'model.safetensors') })
    try {
      checkVocabularyFits(tokenizer, model.config)
    } catch (error) {
      model.dispose()
      throw error
    }
    return new PlaygroundSession(recipe, model, tokenizerFiles)
  }

  /** Steps of self-play taken so far. */
  get steps(): number {
    return this.selfPlaySteps
  }

  private prompt(view: TurnView): string {
    return this.recipe.game === 'kuhn' ? kuhnChatTemplate(kuhnPromptOf(view)) : ticTacToeChatTemplate([{ role: 'user', content: view.observation }])
  }

  private environment(options: { forTraining: boolean }): EnvironmentV1 {
    const rewards = options.forTraining ? { invalidPenalty: this.recipe.invalidPenalty } : evaluationInvalidRewards
    return this.recipe.game === 'kuhn' ? createKuhnPoker({ ...kuhnOptions, ...rewards }) : createTicTacToe(rewards)
  }

  private learner() {
    const chatTemplate = this.recipe.game === 'kuhn' ? kuhnChatTemplate : ticTacToeChatTemplate
    return createLocalPolicy({ model: this.model, tokenizer: this.tokenizer, chatTemplate, maxBatch: 256, seed: this.recipe.seed, id: 'learner' })
  }

  /**
   * The warm-up (`warmUp`, as the examples run it): SFT on random legal play (each legal move once at every decision),
   * with TicTacToe's warm-up schedule; `onStep` gets each update's loss, `signal` stops between updates. Returns the
   * last update's loss.
   */
  async warmUp(options: { onStep?: (step: number, loss: number) => void; signal?: AbortSignal } = {}): Promise<number | undefined> {
    const { recipe } = this
    const { nll } = await warmUp({
      model: this.model,
      tokenizer: this.tokenizer,
      examples: recipe.game === 'kuhn' ? kuhnRandomPlayExamples() : ticTacToeRandomPlayExamples(),
      batchSize: recipe.sftBatchSize,
      ...(recipe.game === 'tictactoe'
        ? { schedule: { type: 'warmup-cosine', warmupSteps: Math.min(10, recipe.sftSteps), totalSteps: Math.max(1, recipe.sftSteps), minRatio: 0.1 } as const }
        : {}),
      steps: recipe.sftSteps,
      learningRate: recipe.sftLearningRate,
      seed: recipe.seed,
      onStep: (metrics) => options.onStep?.(metrics.step, metrics.loss),
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    })
    return nll
  }

  /** The self-play trainer, built at the first step: the example's settings (RAE, PPO clip, KL, cosine schedule). */
  private selfPlayTrainer(): RlTrainer {
    if (this.trainer !== undefined) return this.trainer
    const { recipe, tokenizer } = this
    const kuhn = recipe.game === 'kuhn'
    const config: RlTrainerConfig = {
      model: this.model,
      tokenizer,
      environments: [() => this.environment({ forTraining: true })],
      ...(kuhn ? { prompt: (view: TurnView) => kuhnPromptOf(view), chatTemplate: kuhnChatTemplate } : { chatTemplate: ticTacToeChatTemplate }),
      ...(recipe.randomOpponentShare > 0
        ? { opponents: [{ policy: createRandomPolicy({ seed: recipe.seed + 7, id: 'random-opponent' }), share: recipe.randomOpponentShare }] }
        : {}),
      policyLoss: createPolicyLoss('ppo-clip', { clipLow: 0.2, clipHigh: 0.2 }),
      optimizer: { learningRate: recipe.learningRate },
      ...(recipe.klCoefficient > 0 ? { kl: { coefficient: recipe.klCoefficient } } : {}),
      batch: {
        episodesPerStep: recipe.episodesPerStep,
        groupSize: 1,
        ppoEpochs: recipe.ppoEpochs,
        miniBatchSize: recipe.miniBatchSize,
        maxTokens: recipe.maxTokens,
        concurrency: 256,
        maxGenerationBatch: 256,
      },
      seed: recipe.seed,
      advantage: createRae(),
      entropyCoefficient: 0,
      ...(kuhn ? { entropyExcludeTokenIds: formatTokenIds(tokenizer) } : {}),
      schedule: {
        type: 'warmup-cosine',
        ...(kuhn ? { holdSteps: 0 } : {}),
        totalSteps: Math.max(1, recipe.steps - 1),
        minRatio: recipe.finalLearningRateRatio,
      },
    }
    this.trainer = createRlTrainer(config)
    return this.trainer
  }

  /** One self-play step: episodes, then the PPO update. */
  async trainStep(): Promise<StepReport> {
    const started = performance.now()
    const metrics = await this.selfPlayTrainer().step()
    this.selfPlaySteps++
    const rewards = Object.entries(metrics)
      .filter(([name]) => name.startsWith('reward/'))
      .map(([, value]) => value)
    return {
      step: this.selfPlaySteps,
      loss: metrics.loss ?? Number.NaN,
      reward: rewards.length === 0 ? 0 : rewards.reduce((total, value) => total + value, 0) / rewards.length,
      invalidRate: metrics.invalidRate ?? 0,
      tokensPerSecond: metrics.tokensPerSecond ?? 0,
      seconds: (performance.now() - started) / 1000,
      metrics: { ...metrics },
    }
  }

  /** The example's evaluation: exact exploitability and games against random (Kuhn); random and minimax (TicTacToe). */
  async evaluate(): Promise<Evaluation> {
    const { recipe } = this
    const step = this.selfPlaySteps
    const seed = recipe.seed + 1 + step
    if (recipe.game === 'kuhn') {
      const { exploitability } = await exploitabilityOf(this.model, this.tokenizer)
      const match = await evaluateAgainst({
        learner: this.learner(),
        opponent: createRandomPolicy({ seed }),
        environments: [() => this.environment({ forTraining: false })],
        episodes: recipe.evaluationEpisodes,
        seed,
        prompt: (view) => kuhnPromptOf(view),
        generation: { maxTokens: recipe.maxTokens, temperature: 1 },
      })
      return { step, exploitability, winRate: match.winRate, drawRate: match.drawRate, invalidRate: match.invalidRate }
    }
    const learner = this.learner()
    const random = await playAgainst(learner, createRandomPolicy({ seed }), recipe.evaluationEpisodes, seed, 1)
    const evaluation: Evaluation = { step, winRate: random.winRate, drawRate: random.drawRate, invalidRate: random.invalidRate }
    if (recipe.minimaxEpisodes > 0) {
      const minimax = await playAgainst(learner, createTicTacToeMinimaxPolicy(), recipe.minimaxEpisodes, recipe.seed + 7 + step, 1)
      evaluation.minimax = { winRate: minimax.winRate, drawRate: minimax.drawRate, lossRate: minimax.lossRate }
    }
    return evaluation
  }

  /** The model's probabilities of `actions` after `prompt` (its text, chat template applied), exactly. */
  async moveProbabilities(prompt: string, actions: readonly string[]): Promise<MoveChoice> {
    const [scores] = await actionLogprobs(this.model, this.tokenizer, [{ prompt, actions }])
    const top = Math.max(...scores!)
    const weights = scores!.map((score) => Math.exp(score - top))
    const total = weights.reduce((sum, weight) => sum + weight, 0)
    return { prompt, moves: actions.map((action, index) => ({ action, probability: weights[index]! / total })) }
  }

  /** A new game against the model: the person plays `humanRole` (`player0` moves first); the model moves until it is their turn. */
  async newGame(humanRole: 'player0' | 'player1' = 'player0'): Promise<GameState> {
    const environment = this.environment({ forTraining: false })
    if (!environment.roles.includes(humanRole)) {
      throw new InvalidArgumentError({ argument: 'humanRole', value: humanRole, message: `must be one of ${environment.roles.join(', ')}` })
    }
    const view = environment.reset(this.recipe.seed * 100_000 + this.gamesPlayed++)
    const state: GameState = { game: this.recipe.game, humanRole, observation: '', legalActions: [], done: false, rewards: {}, modelMoves: [] }
    this.game = { environment, view, state }
    return this.advance()
  }

  /** The person's move in the current game; the model answers until it is their turn again or the game ends. */
  async play(action: string): Promise<GameState> {
    const game = this.game
    if (game === undefined || game.view === undefined || game.state.done) {
      throw new InvalidArgumentError({ argument: 'action', value: action, message: 'has no game to go to: start one with newGame()' })
    }
    if (!game.state.legalActions.includes(action)) {
      throw new InvalidArgumentError({ argument: 'action', value: action, message: `is not legal here (legal: ${game.state.legalActions.join(', ')})` })
    }
    this.apply(action)
    return this.advance()
  }

  private apply(action: string): void {
    const game = this.game!
    if (this.recipe.game === 'tictactoe' && game.view !== undefined) {
      // The board with this move on it: the last one drawn when the move ends the game (no next view follows).
      const board = [...parseTicTacToeBoard(game.view.observation)]
      const cell = /^\[(\d)\]$/.exec(action)?.[1]
      if (cell !== undefined && board[Number(cell)] === '') board[Number(cell)] = ticTacToeMarkToMove(board)
      game.state.board = board
    }
    const outcome = game.environment.step(action)
    for (const [role, reward] of Object.entries(outcome.rewards)) game.state.rewards[role] = (game.state.rewards[role] ?? 0) + reward
    game.view = outcome.done || outcome.truncated ? undefined : outcome.next
    if (game.view === undefined) game.state.done = true
  }

  /** The model moves (sampled from its probabilities over the legal moves) until the person is to move or the game ends. */
  private async advance(): Promise<GameState> {
    const game = this.game!
    while (game.view !== undefined && game.view.role !== game.state.humanRole) {
      const view = game.view
      const choice = await this.moveProbabilities(this.prompt(view), view.legalActions ?? [])
      const played = sampleMove(choice, this.playRandom)
      game.state.modelMoves.push({ ...choice, played })
      this.apply(played)
    }
    const view = game.view
    if (view !== undefined) {
      game.state.observation = view.observation
      game.state.legalActions = view.legalActions ?? []
      if (this.recipe.game === 'tictactoe') game.state.board = parseTicTacToeBoard(view.observation)
      else {
        const card = /Your card is: ([JQK])/.exec(view.observation)?.[1]
        if (card !== undefined) game.state.card = card
      }
    } else {
      game.state.legalActions = []
    }
    return structuredClone(game.state)
  }

  /**
   * A preference at a decision of the model's: `chosen` over `rejected` after `prompt` (the model's text). Moves are
   * checked against the decision's legal moves by the caller; both must differ.
   */
  addPreference(pair: PreferencePair): number {
    if (pair.chosen === pair.rejected)
      throw new InvalidArgumentError({ argument: 'pair.rejected', value: pair.rejected, message: 'must differ from pair.chosen' })
    this.preferences.push({ ...pair })
    return this.preferences.length
  }

  /**
   * DPO (sigmoid loss, β = 0.1, reference: the weights before this call) on every recorded preference for `steps`
   * updates; each response is the move and the end token, as the model plays it. Returns each update's metrics.
   */
  async trainPreferences(options: { steps?: number; learningRate?: number; beta?: number } = {}): Promise<Record<string, number>[]> {
    if (this.preferences.length === 0) throw new InvalidArgumentError({ argument: 'preferences', value: 0, message: 'none recorded yet: mark a move first' })
    const end = this.tokenizer.idToToken(this.tokenizer.eosTokenId!)!
    const trainer = createPreferenceTrainer({
      model: this.model,
      tokenizer: this.tokenizer,
      pairs: this.preferences.map((pair) => ({ prompt: pair.prompt, chosen: `${pair.chosen}${end}`, rejected: `${pair.rejected}${end}` })),
      loss: { type: 'sigmoid', beta: options.beta ?? 0.1 },
      batchSize: Math.min(8, this.preferences.length),
      steps: options.steps ?? 8,
      optimizer: { learningRate: options.learningRate ?? 1e-3 },
      seed: this.recipe.seed,
    })
    try {
      const history = await trainer.run()
      return history.map((metrics) => ({ ...metrics }))
    } finally {
      trainer.dispose()
    }
  }

  /** The model as files `loadModel` and `loadTokenizer` read in Node (a directory of them), and `fromFiles` here. */
  async files(): Promise<ModelFiles> {
    return {
      ...(await modelFiles(this.model)),
      'tokenizer.json': JSON.stringify(this.tokenizerFiles.tokenizer),
      // Kuhn's chat template as Jinja too (the last message, then `\n>`), so `ludic eval`/`ludic serve` render the
      // terse prompt (`prompt: kuhn-terse`) as the page does; TicTacToe's rewrites the board, which needs its prompt module.
      'tokenizer_config.json': JSON.stringify({
        ...this.tokenizerFiles.config,
        ...(this.recipe.game === 'kuhn' ? { chat_template: "{{ messages[-1]['content'] }}\n>" } : {}),
      }),
      'playground.json': JSON.stringify(this.recipe, null, 2),
    }
  }

  dispose(): void {
    this.trainer?.dispose()
    this.trainer = undefined
    this.model.dispose()
  }
}

/** The tokens every move shares: its closing `]` and the end token (the Kuhn example's `entropyExcludeTokenIds`). */
function formatTokenIds(tokenizer: TokenizerV1): number[] {
  const closing = tokenizer.encode(']', { addSpecialTokens: false })
  return [...Array.from(closing), ...(tokenizer.eosTokenId === undefined ? [] : [tokenizer.eosTokenId])]
}

function bytes(file: string | Uint8Array | undefined, name: string): Uint8Array {
  if (file instanceof Uint8Array) return file
  throw new InvalidArgumentError({ argument: `files['${name}']`, value: typeof file, message: 'must be the file as bytes (a Uint8Array)' })
}

/** A move drawn from a choice's probabilities. */
function sampleMove(choice: MoveChoice, random: Random): string {
  let draw = random.nextFloat()
  for (const move of choice.moves) {
    draw -= move.probability
    if (draw < 0) return move.action
  }
  return choice.moves.at(-1)!.action
}

export { moveText, promptOfBoard }
