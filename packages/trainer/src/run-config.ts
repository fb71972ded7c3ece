import { readFile } from 'node:fs/promises'
import { dirname, resolve } from 'node:path'
import { InvalidArgumentError, ParseError, parseInput, type AdvantageEstimatorV1, type EnvironmentV1, type TokenizerV1 } from '@ludic/core'
import { advantageEstimators } from '@ludic/advantages'
import { createModel, loadModel, presetNames, type CausalLanguageModel } from '@ludic/model'
import { createPolicyLoss, policyLossNames, type PolicyLoss, type PolicyLossName } from '@ludic/objectives'
import type { PromptTemplate } from '@ludic/rollout'
import { loadTokenizer } from '@ludic/tokenizer'
import { z } from 'zod'
import { optimizerConfigSchema } from './optimizer-config.js'
import { klConfigSchema, rlBatchConfigSchema, type RlTrainerConfig } from './rl-config.js'
import { scheduleConfigSchema } from './schedule.js'

/**
 * A run as a JSON file: everything `createRlTrainer` takes, with the estimator, the policy loss, the
 * environments and the model named rather than constructed.
 */
export const runConfigFileSchema = z.strictObject({
  /** A preset made from scratch (`vocabSize` from the tokenizer) or a checkpoint directory (relative to the file). */
  model: z.union([
    z.strictObject({ preset: z.enum(presetNames), seed: z.number().int().default(0), overrides: z.record(z.string(), z.unknown()).default({}) }),
    z.strictObject({ path: z.string().min(1) }),
  ]),
  /** A directory with `tokenizer.json` (relative to the file); or pass `options.tokenizer`. */
  tokenizer: z.strictObject({ path: z.string().min(1) }).optional(),
  environments: z
    .array(z.strictObject({ game: z.string().min(1), options: z.record(z.string(), z.unknown()).default({}) }))
    .min(1, 'needs at least one environment'),
  /** An estimator of the advantages registry (`rae`, `grpo`, … or one registered). Default `rae`. */
  advantage: z.strictObject({ name: z.string().min(1), options: z.record(z.string(), z.unknown()).optional() }).default({ name: 'rae' }),
  /** A policy loss of `createPolicyLoss`. Default `ppo-clip`. */
  policyLoss: z
    .strictObject({ name: z.enum(policyLossNames as [PolicyLossName, ...PolicyLossName[]]), options: z.record(z.string(), z.unknown()).optional() })
    .default({ name: 'ppo-clip' }),
  kl: klConfigSchema.optional(),
  entropyCoefficient: z.number().min(0).optional(),
  optimizer: optimizerConfigSchema.optional(),
  schedule: scheduleConfigSchema.optional(),
  batch: rlBatchConfigSchema.optional(),
  /** A name of `options.prompts` (e.g. a game's named prompt) or a rollout string template with `{observation}`. */
  prompt: z.string().min(1).optional(),
  seed: z.number().int().optional(),
  /** Relative to the file. */
  runDirectory: z.string().min(1).optional(),
  checkpointEvery: z.number().int().min(0).optional(),
  keepLast: z.number().int().positive().optional(),
  resume: z.boolean().optional(),
  trainRoles: z.array(z.string()).min(1).optional(),
})
export type RunConfigFile = z.input<typeof runConfigFileSchema>

/**
 * Where a run config's environment names are looked up: `@ludic/games`' `games` registry (built-in and
 * registered games), or any object of this shape.
 */
export interface EnvironmentRegistry {
  /** Makes the environment registered under `name` with its options; throws on bad options. */
  create(name: string, options?: unknown): EnvironmentV1
  /** Every name `create` knows. */
  names(): readonly string[]
}

export interface LoadRunConfigOptions {
  /** The environments the config's `environments[].game` names (e.g. `games` of `@ludic/games`). */
  environments: EnvironmentRegistry
  /** Prompts the config's `prompt` may name (e.g. a game's named prompts); other strings are `{observation}` templates. */
  prompts?: Readonly<Record<string, PromptTemplate>>
  /** Used instead of the config's `tokenizer`. */
  tokenizer?: TokenizerV1
  /** Used instead of the config's `model`. */
  model?: CausalLanguageModel
}

/**
 * Reads a run config file and makes what it names: the model (preset or checkpoint), the tokenizer, the
 * environments (by name, from `options.environments`), the estimator (advantages registry) and the policy
 * loss. The result goes to `createRlTrainer` (add `evaluate` and the like there). A missing file, bad JSON, an
 * unknown name or a bad field is a `ParseError` naming the file and the field.
 */
export async function loadRunConfig(path: string, options: LoadRunConfigOptions): Promise<RlTrainerConfig> {
  if (typeof options?.environments?.create !== 'function' || typeof options.environments.names !== 'function') {
    throw new InvalidArgumentError({
      argument: 'options.environments',
      value: options?.environments,
      message: 'must be an environment registry { create(name, options), names() } (e.g. games of @ludic/games)',
    })
  }
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (error) {
    throw new ParseError({ source: path, message: `cannot read the file (${(error as Error).message})`, cause: error })
  }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    throw new ParseError({ source: path, message: `not JSON (${(error as Error).message})`, cause: error })
  }
  const file = parseInput(runConfigFileSchema, json, { source: path })
  const base = dirname(path)
  const where = (field: string, error: unknown) => new ParseError({ source: path, path: field.split('.'), message: (error as Error).message, cause: error })

  let tokenizer = options.tokenizer
  if (tokenizer === undefined) {
    if (file.tokenizer === undefined) throw new ParseError({ source: path, path: ['tokenizer'], message: 'is required unless options.tokenizer is given' })
    tokenizer = await loadTokenizer(resolve(base, file.tokenizer.path)).catch((error: unknown) => {
      throw where('tokenizer.path', error)
    })
  }
  let model = options.model
  if (model === undefined) {
    try {
      model =
        'preset' in file.model
          ? createModel(file.model.preset, { vocabSize: tokenizer.vocabSize, seed: file.model.seed, overrides: file.model.overrides })
          : await loadModel(resolve(base, file.model.path))
    } catch (error) {
      throw where('model', error)
    }
  }
  const registry = options.environments
  const environments = file.environments.map(({ game, options: gameOptions }, index): (() => EnvironmentV1) => {
    if (!registry.names().includes(game))
      throw new ParseError({ source: path, path: ['environments', index, 'game'], message: `is not a registered environment (${registry.names().join(', ')})` })
    try {
      registry.create(game, gameOptions) // fail now, naming the entry, rather than in the first step
    } catch (error) {
      throw where(`environments.${index}.options`, error)
    }
    return () => registry.create(game, gameOptions)
  })
  let advantage: AdvantageEstimatorV1
  try {
    advantage = advantageEstimators.create(file.advantage.name, file.advantage.options)
  } catch (error) {
    throw where('advantage', error)
  }
  let policyLoss: PolicyLoss
  try {
    policyLoss = (createPolicyLoss as (name: string, options?: unknown) => ReturnType<typeof createPolicyLoss>)(file.policyLoss.name, file.policyLoss.options)
  } catch (error) {
    throw where('policyLoss', error)
  }
  const prompt = file.prompt
  const config: RlTrainerConfig = {
    model,
    tokenizer,
    environments,
    advantage,
    policyLoss,
    ...(prompt === undefined ? {} : { prompt: options.prompts !== undefined && Object.hasOwn(options.prompts, prompt) ? options.prompts[prompt]! : prompt }),
    ...(file.runDirectory === undefined ? {} : { runDirectory: resolve(base, file.runDirectory) }),
  }
  for (const key of ['kl', 'entropyCoefficient', 'optimizer', 'schedule', 'batch', 'seed', 'checkpointEvery', 'keepLast', 'resume', 'trainRoles'] as const) {
    if (file[key] !== undefined) (config as Record<string, unknown>)[key] = file[key]
  }
  return config
}
