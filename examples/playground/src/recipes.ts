/**
 * The playground's two recipes, the same as the Node examples': `selfplay-kuhn-poker` (what `npm start` runs) and
 * `selfplay-tictactoe`. Same tokenizer, model, warm-up and self-play settings, from the examples' own setup modules;
 * only what the page needs differs (no run directory, no checkpoints, evaluation sizes the page can afford).
 */
import { parseArgument } from '@ludic/core'
import { z } from 'zod'

export const gameNames = ['kuhn', 'tictactoe'] as const
export type GameName = (typeof gameNames)[number]

/** A recipe's settings; each game's defaults are its example's (`recipeDefaults`). */
export const recipeSchema = z.strictObject({
  game: z.enum(gameNames),
  /** Seeds the model's weights, the warm-up's order, self-play and every evaluation. */
  seed: z.number().int().min(0),
  modelSize: z.enum(['tiny', 'small']),
  vocabSize: z.number().int().min(64).max(4096),
  /** Warm-up (SFT on random legal play) updates, examples per update and learning rate. */
  sftSteps: z.number().int().min(0).max(10_000),
  sftBatchSize: z.number().int().positive().max(1024),
  sftLearningRate: z.number().positive().max(1),
  /** Self-play steps (the learning-rate schedule's length), episodes per step, PPO epochs and mini-batch. */
  steps: z.number().int().positive().max(100_000),
  episodesPerStep: z.number().int().positive().max(4096),
  ppoEpochs: z.number().int().positive().max(16),
  miniBatchSize: z.number().int().positive().max(4096),
  learningRate: z.number().positive().max(1),
  /** The cosine's final learning-rate multiplier, reached at the last step. */
  finalLearningRateRatio: z.number().min(0).max(1),
  /** KL β to the warmed-up policy (0: none). */
  klCoefficient: z.number().min(0).max(10),
  /** The training game's reward for an invalid move. */
  invalidPenalty: z.number().min(-100).max(0),
  /** TicTacToe: share of training episodes where one seat is the uniform random player. */
  randomOpponentShare: z.number().min(0).max(1),
  /** Tokens a move may take. */
  maxTokens: z.number().int().positive().max(64),
  /** Evaluate every this many steps (0: only when asked). */
  evaluateEvery: z.number().int().min(0),
  /** Games against the random player per evaluation (seats alternating, sampled at T = 1). */
  evaluationEpisodes: z.number().int().positive().max(10_000),
  /** TicTacToe: sampled games against minimax per evaluation. */
  minimaxEpisodes: z.number().int().min(0).max(10_000),
})
export type Recipe = z.output<typeof recipeSchema>
export type RecipeOptions = Partial<Recipe> & { game: GameName }

/** Each game's defaults: its Node example's (`examples/selfplay-kuhn-poker`, `examples/selfplay-tictactoe`). */
export const recipeDefaults: Record<GameName, Recipe> = {
  kuhn: {
    game: 'kuhn',
    seed: 0,
    modelSize: 'tiny',
    vocabSize: 320,
    sftSteps: 40,
    sftBatchSize: 24,
    sftLearningRate: 2e-3,
    steps: 100,
    episodesPerStep: 128,
    ppoEpochs: 2,
    miniBatchSize: 64,
    learningRate: 5e-4,
    finalLearningRateRatio: 0.1,
    klCoefficient: 0.2,
    invalidPenalty: -3,
    randomOpponentShare: 0,
    maxTokens: 8,
    evaluateEvery: 10,
    evaluationEpisodes: 200,
    minimaxEpisodes: 0,
  },
  tictactoe: {
    game: 'tictactoe',
    seed: 0,
    modelSize: 'tiny',
    vocabSize: 300,
    sftSteps: 300,
    sftBatchSize: 64,
    sftLearningRate: 2e-3,
    steps: 120,
    episodesPerStep: 128,
    ppoEpochs: 2,
    miniBatchSize: 128,
    learningRate: 5e-4,
    finalLearningRateRatio: 0.1,
    klCoefficient: 0.05,
    invalidPenalty: -3,
    randomOpponentShare: 0.5,
    maxTokens: 4,
    evaluateEvery: 10,
    evaluationEpisodes: 100,
    minimaxEpisodes: 50,
  },
}

/** The recipe of `options.game` with `options` over its defaults, checked (an `InvalidArgumentError` names the field). */
export function resolveRecipe(options: RecipeOptions): Recipe {
  const { game } = parseArgument(z.object({ game: z.enum(gameNames) }), options, 'options')
  return parseArgument(recipeSchema, { ...recipeDefaults[game], ...options }, 'options')
}
