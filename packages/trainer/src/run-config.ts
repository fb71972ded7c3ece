import { existsSync } from 'node:fs'
import { open, readFile, stat } from 'node:fs/promises'
import { dirname, extname, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { isDeepStrictEqual } from 'node:util'
import {
  createRandom,
  deriveSeed,
  InvalidArgumentError,
  ParseError,
  parseArgument,
  parseInput,
  parseJsonLines,
  pathBeyondDepth,
  type AdvantageEstimatorV1,
  type ChatMessage,
  type ChatTemplateFunction,
  type EnvironmentV1,
  type PolicyV1,
  type TokenizerV1,
  type TrajectoryScorerV1,
} from '@ludic/core'
import { advantageEstimators } from '@ludic/advantages'
import { createLocalPolicy, createModel, loadModel, presetNames, type CausalLanguageModel } from '@ludic/model'
import { policyLosses } from '@ludic/objectives'
import { randomLegalPlay, randomOpeningsOptionsSchema, renderPrompt, withRandomOpenings, type PromptTemplate, type RandomOpeningsOptions } from '@ludic/rollout'
import { chatTemplateRenderer, hasChatTemplate, loadTokenizer, renderChatTemplate, Tokenizer, trainBpe, trainBpeOptionsSchema } from '@ludic/tokenizer'
import { parse as parseYaml } from 'yaml'
import { z } from 'zod'
import { applyConfigOverrides, runConfigMaxDepth } from '@ludic/report'
import { alignDistilTrainerConfigSchema, type AlignDistilTrainerConfig } from './align-distil-trainer.js'
import { evaluateAgainst } from './evaluation.js'
import { flowOfReasoningTrainerConfigSchema, type FlowOfReasoningTrainerConfig } from './flow-of-reasoning-trainer.js'
import { plainConfig, runConfigLoggersSchema, type LoggerEntry } from './loggers/run-loggers.js'
import { criticConfigSchema } from './experience/critic.js'
import { optimizerConfigSchema } from './optimizer-config.js'
import { readPreferencePairs } from './preference-file.js'
import { preferenceTrainerConfigSchema, type PreferenceTrainerConfig } from './preference-trainer.js'
import { rewardModelTrainerConfigSchema, type RewardModelTrainerConfig } from './reward-model-trainer.js'
import { snapshotPoolConfigSchema } from './league/snapshot-pool.js'
import { klConfigSchema, opponentSeatsSchema, rlBatchConfigSchema, type EvaluationHook, type RlTrainerConfig } from './rl-config.js'
import { scheduleConfigSchema } from './schedule.js'
import { sftTrainerConfigSchema, type SftTrainerConfig } from './sft-trainer.js'
import { trajectoryLogConfigSchema } from './trajectory-log.js'

/*
 * A run as a file (YAML or JSON): a `kind` naming the training loop, and that loop's config with the model, the
 * tokenizer, the data and the named parts (environments, estimator, policy loss, opponents) given by name or
 * path rather than constructed. Paths are relative to the file. The trainers' own schemas give the fields.
 */

/** The training loops a run config names with `kind`. Default `rl`. */
export const runKinds = ['rl', 'cpo', 'sft', 'preference', 'reward-model', 'for', 'aligndistil'] as const
export type RunKind = (typeof runKinds)[number]

/** A preset made from scratch (`vocabSize` from the tokenizer), or a checkpoint directory (or what `resolveModelSource` resolves). */
const modelSourceSchema = z.union([
  z.strictObject({ preset: z.enum(presetNames), seed: z.number().int().default(0), overrides: z.record(z.string(), z.unknown()).default({}) }),
  z.strictObject({ path: z.string().min(1) }),
])

const trainBpeFields = trainBpeOptionsSchema.shape
/**
 * A directory with `tokenizer.json` (or the file), or a byte-level BPE trained before the run on the run's own
 * text (RL: random legal play of the environments, prompts and moves; SFT: prompts and responses; preference and
 * reward model: prompts and both responses). Default: the model's directory, when the model is a path.
 */
const tokenizerSourceSchema = z.union([
  z.strictObject({ path: z.string().min(1) }),
  z.strictObject({
    train: z.strictObject({
      vocabSize: trainBpeFields.vocabSize,
      preTokenizer: trainBpeFields.preTokenizer,
      minFrequency: trainBpeFields.minFrequency,
      /** The end token (a special token, the tokenizer's EOS). Default `<|end|>`. */
      endToken: z.string().min(1).default('<|end|>'),
      /** RL: random-play episodes of each environment whose text trains it. Default 64. */
      episodes: z.number().int().positive().max(100_000).default(64),
    }),
  }),
])

/** Fields every kind has. */
const commonFields = {
  kind: z.enum(runKinds).default('rl'),
  /** JavaScript modules imported before the file is checked (they call `registerGame`, `registerAdvantageEstimator`, `registerPolicyLoss`…). */
  plugins: z.array(z.string().min(1)).default([]),
  model: modelSourceSchema,
  tokenizer: tokenizerSourceSchema.optional(),
  /** A Jinja chat template (as a tokenizer's `chat_template`) rendering the messages into the prompt. Default: the tokenizer's. */
  chatTemplate: z.string().min(1).optional(),
  seed: z.number().int().optional(),
  /** Where metrics, checkpoints and the final model (`model/`) go. Relative to the file. */
  runDirectory: z.string().min(1).optional(),
  /**
   * Where each step's metrics go: `jsonl` (`metrics.jsonl`), `tensorboard` (event files under `<runDirectory>/tensorboard/`),
   * `wandb` (Weights & Biases: online with `WANDB_API_KEY` and `@wandb/sdk` installed, else offline files), or objects
   * `{ kind: tensorboard, directory }`, `{ kind: wandb, project, entity, name, mode: online | offline }`. Default `[jsonl]`.
   */
  loggers: runConfigLoggersSchema,
}

/** What is measured during an RL run: the model against each opponent on the training environments. */
const evaluationSchema = z.strictObject({
  /** Every k steps (and before the first and after the last). Default 10. */
  every: z.number().int().positive().default(10),
  /** Episodes per environment and opponent, seats alternating. Default 100. */
  episodes: z.number().int().positive().max(100_000).default(100),
  opponents: z.array(z.string().min(1)).min(1).default(['random']),
  /** Environment options that replace the training ones for evaluation (e.g. an invalid move as a plain loss). */
  environmentOptions: z.record(z.string(), z.unknown()).default({}),
  temperature: z.number().min(0).default(1),
})

/** Supervised updates on random legal play before RL, so a model made from scratch moves legally. */
const warmUpSchema = sftTrainerConfigSchema.pick({ batchSize: true, optimizer: true }).extend({
  steps: z.number().int().positive(),
  /** Random-play episodes of each environment giving the examples (each turn's prompt and its legal move). Default 64. */
  episodes: z.number().int().positive().max(100_000).default(64),
})

/** Seeds tried when a run config's `randomOpenings` is checked at load. */
const openingTrials = 16

/** An environment of the registry by name, with its options. */
const environmentEntryFields = { game: z.string().min(1), options: z.record(z.string(), z.unknown()).default({}) }

const rlFields = {
  ...commonFields,
  /** Total trainer steps (`ludic train` runs them; a resumed run continues to them). Default 100. */
  steps: z.number().int().min(0).default(100),
  environments: z
    .array(
      z.strictObject({
        ...environmentEntryFields,
        /**
         * Exploring starts (`withRandomOpenings` of `@ludic/rollout`): `{ share, minMoves, maxMoves }`, a share of the
         * training episodes started after a few uniformly random legal moves. The evaluations play the game itself.
         * Not for Flow of Reasoning (its trajectories start at the problem). Default: none.
         */
        randomOpenings: randomOpeningsOptionsSchema.optional(),
      }),
    )
    .min(1, 'needs at least one environment'),
  /** An estimator of the advantages registry (`rae`, `grpo`, … or one registered). Default `rae` (`grpo` for CPO). */
  advantage: z.strictObject({ name: z.string().min(1), options: z.record(z.string(), z.unknown()).optional() }).optional(),
  /** A policy loss of the objectives registry (`ppo-clip`, `gspo`, … or one a plugin registers with `registerPolicyLoss`). Default `ppo-clip`. */
  policyLoss: z.strictObject({ name: z.string().min(1), options: z.record(z.string(), z.unknown()).optional() }).default({ name: 'ppo-clip' }),
  kl: klConfigSchema.optional(),
  /** PPO's critic, for estimators that need values (`advantage: { name: gae }`): `{ model: separate | shared, … }`. Default: none. */
  critic: criticConfigSchema.optional(),
  entropyCoefficient: z.number().min(0).optional(),
  /** Recompute layer activations in the backward pass (less memory, one more forward pass). Default false. */
  recomputeLayers: z.boolean().optional(),
  optimizer: optimizerConfigSchema.optional(),
  schedule: scheduleConfigSchema.optional(),
  batch: rlBatchConfigSchema.optional(),
  /** A name of the prompts given to the loader (e.g. a game's named prompt) or a rollout string template with `{observation}`. */
  prompt: z.string().min(1).optional(),
  checkpointEvery: z.number().int().min(0).optional(),
  keepLast: z.number().int().positive().optional(),
  /** `trajectories.jsonl`: `{ enabled, episodesPerStep (a number or 'all'), maxLineBytes }`. Default: on, 4 episodes per step, 256 KiB lines. */
  trajectories: trajectoryLogConfigSchema.optional(),
  resume: z.boolean().optional(),
  trainRoles: z.array(z.string()).min(1).optional(),
  /**
   * Opponents in a share of the episodes, beside self-play: scripted players by name (`{ name: random, share: 0.2 }`;
   * `seats: { player1: 3, player0: 1 }` weighs the role it plays, `opponentSeatsSchema`) and, once at most, the league's pool of the learner's own snapshots (`{ pool: snapshots, share: 0.8, every: 10,
   * keep: 20, sampling: pfsp }`; see `snapshotPoolConfigSchema` for every field and its default).
   */
  opponents: z
    .array(
      z.discriminatedUnion('pool', [
        z.strictObject({ pool: z.undefined().optional(), name: z.string().min(1), share: z.number().gt(0).max(1), seats: opponentSeatsSchema.optional() }),
        snapshotPoolConfigSchema,
      ]),
    )
    .min(1)
    .optional(),
  warmUp: warmUpSchema.optional(),
  evaluation: evaluationSchema.optional(),
}

/**
 * The RL run file (`kind: rl`, the default): everything `createRlTrainer` takes, with the estimator, the policy
 * loss, the environments and the model named rather than constructed, plus the steps, an SFT warm-up on random
 * legal play and evaluations against named opponents.
 */
export const runConfigFileSchema = z.strictObject(rlFields)
export type RunConfigFile = z.input<typeof runConfigFileSchema>

/** A module whose default export (or `export`) makes the scorer from `options`: `(options) => TrajectoryScorerV1`. */
const scorerSourceSchema = z.strictObject({ module: z.string().min(1), export: z.string().min(1).default('default'), options: z.unknown().optional() })

/** CPO: the RL file with a scorer that judges each group (`createCpoTrainer`). */
export const cpoRunConfigFileSchema = z.strictObject({ ...rlFields, scorer: scorerSourceSchema })

const jsonSchedule = { schedule: scheduleConfigSchema.optional() }

/** A trainer config's fields that a run file does not give as they are: the loader makes them (or `commonFields` gives them). */
const madeByTheLoader = { model: true, tokenizer: true, seed: true, runDirectory: true, loggers: true, loggedConfig: true } as const
/** Likewise, a preference-pair trainer's data (the file names JSON Lines files) and chat template (a Jinja string). */
const pairsMadeByTheLoader = { pairs: true, heldOut: true, chatTemplate: true } as const

/** SFT (`createSftTrainer`): `data` is a JSON Lines file of `{ prompt, response }` texts. */
export const sftRunConfigFileSchema = sftTrainerConfigSchema
  .omit({ ...madeByTheLoader, examples: true, schedule: true })
  .extend({ ...commonFields, ...jsonSchedule, data: z.string().min(1), steps: z.number().int().positive() })

/** The DPO family (`createPreferenceTrainer`): `data` (and `heldOut`) are JSON Lines files of preference pairs (TRL's formats). */
export const preferenceRunConfigFileSchema = preferenceTrainerConfigSchema
  .omit({ ...madeByTheLoader, ...pairsMadeByTheLoader, reference: true, schedule: true })
  .extend({
    ...commonFields,
    ...jsonSchedule,
    data: z.string().min(1),
    heldOut: z.string().min(1).optional(),
    reference: z.enum(['initial', 'none']).optional(),
  })

/** A Bradley–Terry reward model (`createRewardModelTrainer`): `data` (and `heldOut`) are JSON Lines files of preference pairs. */
export const rewardModelRunConfigFileSchema = rewardModelTrainerConfigSchema.omit({ ...madeByTheLoader, ...pairsMadeByTheLoader, schedule: true }).extend({
  ...commonFields,
  ...jsonSchedule,
  data: z.string().min(1),
  heldOut: z.union([z.string().min(1), z.strictObject({ validationShare: z.number().gt(0).lt(1) })]).optional(),
  /** Updates; default `epochs` passes over the pairs. */
  steps: z.number().int().positive().optional(),
  evaluateEvery: z.number().int().min(0).default(0),
})

/** A module's prompt function `(view, history, context) => ChatMessage[]` (rollout's `PromptFunction`). */
const promptSourceSchema = z.strictObject({ module: z.string().min(1), export: z.string().min(1).default('default') })

/**
 * Flow of Reasoning (`createFlowOfReasoningTrainer`): `environments` names the step-wise tasks as the RL file does
 * (`{ game, options }` of the environments registry, one role each, with `legalActions`), `seeds` their reset seeds
 * (a list, or `{ from, count }`: the training problems), `prompt` a named prompt, a `{observation}` template or a
 * module's prompt function (`{ module, export }`), and
 * `solved` the least return that counts as solved. log R is the log of an episode's return, so the rewards must be
 * positive (`game-of-24-v1` with `successReward: 100, failureReward: 0.001` is FoR's). `steps` is the total (it also
 * sets the annealing).
 */
export const flowOfReasoningRunConfigFileSchema = flowOfReasoningTrainerConfigSchema
  .omit({
    ...madeByTheLoader,
    environments: true,
    seeds: true,
    prompt: true,
    chatTemplate: true,
    logReward: true,
    solved: true,
    backwardLogprob: true,
    onStep: true,
  })
  .extend({
    ...commonFields,
    environments: z.array(z.strictObject(environmentEntryFields)).min(1, 'needs at least one environment'),
    seeds: z.union([
      flowOfReasoningTrainerConfigSchema.shape.seeds,
      z.strictObject({ from: z.number().int().default(0), count: z.number().int().positive().max(1_000_000) }),
    ]),
    /** A named prompt or a `{observation}` template, or a module's prompt function (`{ module, export }`, TypeScript needs `NODE_OPTIONS="--import tsx"`). */
    prompt: z.union([z.string().min(1), promptSourceSchema]).optional(),
    solved: z.number().finite().optional(),
  })

/**
 * AlignDistil (`createAlignDistilTrainer`): `data` (and `heldOut`) are JSON Lines files of preference pairs; the two
 * teachers are trained first from the model on the same pairs (`trainContrastiveDpoModels`: DPO and reverse DPO for
 * `teachers.steps` updates at `teachers.learningRate`), as the paper does.
 */
export const alignDistilRunConfigFileSchema = alignDistilTrainerConfigSchema
  .omit({ ...madeByTheLoader, ...pairsMadeByTheLoader, dpoModel: true, reverseDpoModel: true, reference: true, schedule: true })
  .extend({
    ...commonFields,
    ...jsonSchedule,
    data: z.string().min(1),
    heldOut: z.string().min(1).optional(),
    teachers: z.strictObject({
      /** DPO updates of each teacher. */
      steps: z.number().int().positive(),
      /** The teachers' learning rate. Default 1e-6 (the preference trainer's). */
      learningRate: z.number().positive().optional(),
      /** The teachers' DPO β. Default: `loss.beta`. */
      beta: z.number().positive().optional(),
    }),
  })

/** Where a run config's environment names are looked up: `games` of `@ludic/games` (built-in and registered games), or any object of this shape. */
export interface EnvironmentRegistry {
  /** Makes the environment registered under `name` with its options; throws on bad options. */
  create(name: string, options?: unknown): EnvironmentV1
  /** Every name `create` knows. */
  names(): readonly string[]
}

/** Where a run config's opponent names are looked up (e.g. `random`): a policy per name and seed. */
export interface OpponentRegistry {
  create(name: string, options: { seed: number }): PolicyV1
  names(): readonly string[]
}

export interface LoadRunConfigOptions {
  /** The environments the config's `environments[].game` names (e.g. `games` of `@ludic/games`). */
  environments: EnvironmentRegistry
  /** Prompts the config's `prompt` may name (e.g. a game's named prompts); other strings are `{observation}` templates. */
  prompts?: Readonly<Record<string, PromptTemplate>>
  /** The opponents `evaluation.opponents` and `opponents[].name` name. Default: none (a config naming one is an error). */
  opponents?: OpponentRegistry
  /**
   * Turns a model or tokenizer `path` of the file into a local directory (e.g. a Hugging Face repo id, downloaded).
   * Default: the path relative to the file.
   */
  resolveSource?: (text: string, baseDirectory: string) => Promise<string>
  /** Used instead of the config's `tokenizer`. */
  tokenizer?: TokenizerV1
  /** Used instead of the config's `model`. */
  model?: CausalLanguageModel
  /** `path=value` entries set in the file's data before it is checked (`applyConfigOverrides`), e.g. `steps=2`. */
  overrides?: readonly string[]
  /** Limits on the file read (`readRunConfigFile`): its size and nesting. Default: 4 MiB, 64 deep. */
  limits?: RunConfigFileLimits
  /** Imports a plugin module (a `file:` URL). Default: `import()`. */
  importModule?: (url: string) => Promise<unknown>
}

/** A tokenizer's files, as `loadTokenizer` reads them back: written beside a run's final model. */
export interface TokenizerFiles {
  'tokenizer.json': unknown
  'tokenizer_config.json': Record<string, unknown>
}

interface LoadedParts {
  /** The file the run came from. */
  source: string
  model: CausalLanguageModel
  tokenizer: TokenizerV1
  tokenizerFiles: TokenizerFiles | undefined
  /** Absolute. */
  runDirectory: string | undefined
  /** The chat template as a function (the config's, else the tokenizer's), for rendering prompts. */
  chatTemplate: ChatTemplateFunction | undefined
  /** The file's `loggers`. */
  loggers: LoggerEntry[]
  /** The file's settings as checked (defaults filled in), for the loggers to record. */
  loggedConfig: Record<string, unknown>
}

/** An RL (or CPO) run, made: the trainer's config, its steps and the warm-up examples. */
export interface RlRun extends LoadedParts {
  kind: 'rl' | 'cpo'
  steps: number
  config: RlTrainerConfig
  warmUp: { config: SftTrainerConfig; steps: number } | undefined
}
export interface SftRun extends LoadedParts {
  kind: 'sft'
  steps: number
  config: SftTrainerConfig
}
export interface PreferenceRun extends LoadedParts {
  kind: 'preference'
  config: PreferenceTrainerConfig
}
export interface RewardModelRun extends LoadedParts {
  kind: 'reward-model'
  steps: number | undefined
  evaluateEvery: number
  config: RewardModelTrainerConfig
}
export interface FlowOfReasoningRun extends LoadedParts {
  kind: 'for'
  steps: number
  config: FlowOfReasoningTrainerConfig
}
export interface AlignDistilRun extends LoadedParts {
  kind: 'aligndistil'
  /** The config without its teachers (the caller trains them: `trainContrastiveDpoModels` with `teachers`). */
  config: Omit<AlignDistilTrainerConfig, 'dpoModel' | 'reverseDpoModel'>
  teachers: { steps: number; learningRate: number | undefined; beta: number | undefined }
}
/** What `loadTrainingRun` makes from a run config file, by `kind`. */
export type TrainingRun = RlRun | SftRun | PreferenceRun | RewardModelRun | FlowOfReasoningRun | AlignDistilRun

export const runConfigFileLimitsSchema = z
  .object({
    /** The largest run config file read, in bytes, checked before reading (a YAML file of tens of megabytes takes seconds and gigabytes to parse). Default: 4 MiB. */
    maxBytes: z
      .number()
      .int()
      .positive()
      .default(4 * 1024 * 1024),
    /** The deepest nesting of objects and arrays (deeper data overflowed the stack of every walk after parsing). Default: 64. */
    maxDepth: z.number().int().positive().default(runConfigMaxDepth),
  })
  .strict()
export type RunConfigFileLimits = z.input<typeof runConfigFileLimitsSchema>

/**
 * Reads a run config file: YAML (`.yaml`, `.yml`) or JSON, as plain data. A missing file or a syntax error is a
 * `ParseError` naming the file (its `cause` the file system's error, with `code: 'ENOENT'` for a missing one); so are
 * a file that is not a regular file, one larger than `limits.maxBytes` (refused before it is read), data nested deeper
 * than `limits.maxDepth` (at the path where it is) and YAML whose aliases expand past 100 (`maxAliasCount`).
 */
export async function readRunConfigFile(path: string, limits: RunConfigFileLimits = {}): Promise<unknown> {
  const { maxBytes, maxDepth } = parseArgument(runConfigFileLimitsSchema, limits, 'limits')
  let text: string
  try {
    text = await readTextFileAtMost(path, maxBytes)
  } catch (error) {
    if (ParseError.isInstance(error)) throw error
    throw new ParseError({ source: path, message: `cannot read the file (${(error as Error).message})`, cause: error })
  }
  const extension = extname(path).toLowerCase()
  const isYaml = extension === '.yaml' || extension === '.yml'
  let data: unknown
  try {
    data = isYaml ? parseYaml(text, { prettyErrors: true, maxAliasCount: 100 }) : JSON.parse(text)
  } catch (error) {
    const tooDeep = error instanceof RangeError || /Maximum call stack/.test((error as Error).message)
    throw new ParseError({
      source: path,
      message: tooDeep
        ? `is nested too deeply for the ${isYaml ? 'YAML' : 'JSON'} parser (more than limits.maxDepth, ${maxDepth}, is refused)`
        : `not ${isYaml ? 'YAML' : 'JSON'} (${(error as Error).message})`,
      cause: error,
    })
  }
  const tooDeep = pathBeyondDepth(data, maxDepth)
  if (tooDeep !== undefined)
    throw new ParseError({ source: path, path: tooDeep, message: `is nested more than ${maxDepth} objects and arrays deep (limits.maxDepth)` })
  return data
}

/** A regular file's text, refused (a `ParseError`) before reading when it is larger than `maxBytes`, or once it grows past. */
async function readTextFileAtMost(path: string, maxBytes: number): Promise<string> {
  const stats = await stat(path)
  if (!stats.isFile()) throw new ParseError({ source: path, message: 'is not a regular file' })
  const tooLarge = (size: string) => new ParseError({ source: path, message: `is ${size} bytes, more than the limit of ${maxBytes} (limits.maxBytes)` })
  if (stats.size > maxBytes) throw tooLarge(String(stats.size))
  const handle = await open(path, 'r')
  try {
    const buffer = Buffer.alloc(Math.min(stats.size, maxBytes) + 1)
    let length = 0
    for (;;) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length)
      if (bytesRead === 0) break
      length += bytesRead
      if (length === buffer.length) {
        if (length > maxBytes) throw tooLarge(`more than ${maxBytes}`)
        break // the file grew since stat: what was read is the file as it was
      }
    }
    return buffer.toString('utf8', 0, length)
  } finally {
    await handle.close()
  }
}

/**
 * Reads a run config file (YAML or JSON) of any `kind` and makes what it names: imports its `plugins`, then checks
 * every field at once (a `ParseError` whose `cause` is the `ZodError` listing every wrong field; an unknown game,
 * estimator or opponent lists the registered ones), then makes the model, the tokenizer (loaded or trained), the
 * data, the environments, the estimator, the policy loss, the warm-up examples and the evaluation hook. The result
 * goes to the kind's trainer (`createRlTrainer`, `createCpoTrainer`, `createSftTrainer`, `createPreferenceTrainer`,
 * `createRewardModelTrainer`).
 */
export async function loadTrainingRun(path: string, options: LoadRunConfigOptions): Promise<TrainingRun> {
  checkRegistries(options)
  const data = await readRunConfigFile(path, options.limits)
  const raw = options.overrides === undefined ? data : applyConfigOverrides(data, options.overrides)
  const base = dirname(resolve(path))
  await importConfigPlugins(raw, path, base, options.importModule ?? ((url) => import(url)))
  const { kind } = parseInput(z.object({ kind: commonFields.kind }), raw ?? {}, { source: path })
  const file = parseInput(checkedSchema(kind, options), raw, { source: path }) as { kind: RunKind }
  switch (file.kind) {
    case 'rl':
    case 'cpo':
      return loadRl(file as z.output<typeof cpoRunConfigFileSchema>, path, base, options)
    case 'sft':
      return loadSft(file as z.output<typeof sftRunConfigFileSchema>, path, base, options)
    case 'preference':
      return loadPreference(file as z.output<typeof preferenceRunConfigFileSchema>, path, base, options)
    case 'for':
      return loadFlowOfReasoning(file as z.output<typeof flowOfReasoningRunConfigFileSchema>, path, base, options)
    case 'aligndistil':
      return loadAlignDistil(file as z.output<typeof alignDistilRunConfigFileSchema>, path, base, options)
    default:
      return loadRewardModel(file as z.output<typeof rewardModelRunConfigFileSchema>, path, base, options)
  }
}

/**
 * Reads an RL run config file and makes what it names (see `loadTrainingRun`); the result goes to `createRlTrainer`
 * (its warm-up and steps, if any, are left out: `loadTrainingRun` gives them).
 */
export async function loadRunConfig(path: string, options: LoadRunConfigOptions): Promise<RlTrainerConfig> {
  const run = await loadTrainingRun(path, options)
  if (run.kind !== 'rl') throw new ParseError({ source: path, path: ['kind'], message: `is '${run.kind}'; loadRunConfig reads RL runs (use loadTrainingRun)` })
  return run.config
}

function checkRegistries(options: LoadRunConfigOptions): void {
  if (typeof options?.environments?.create !== 'function' || typeof options.environments.names !== 'function') {
    throw new InvalidArgumentError({
      argument: 'options.environments',
      value: options?.environments,
      message: 'must be an environment registry { create(name, options), names() } (e.g. games of @ludic/games)',
    })
  }
}

async function importConfigPlugins(raw: unknown, path: string, base: string, importModule: (url: string) => Promise<unknown>): Promise<void> {
  const { plugins } = parseInput(z.object({ plugins: commonFields.plugins }), raw ?? {}, { source: path })
  await importPlugins(plugins, { base, source: path, path: ['plugins'], importModule })
}

export interface ImportPluginsOptions {
  /** Relative paths are taken from here (a config's folder, or the working directory for `--plugin`). */
  base: string
  /** What names the plugins, for errors: the config file, or `--plugin`. */
  source: string
  /** Where the list sits in `source`, for errors. Default `[]` (`--plugin[0]`); a config's is `['plugins']`. */
  path?: readonly (string | number)[]
  /** Imports a module (a `file:` URL). Default: `import()`. */
  importModule?: (url: string) => Promise<unknown>
}

/**
 * Imports plugin modules in order: JavaScript files (paths relative to `base`) that register what a config or a
 * command names when they are imported (`registerGame`, `registerAdvantageEstimator`, `registerPolicyLoss`…). A run config's `plugins` and
 * the command line's `--plugin` both go through here. A missing file is a `ParseError` at `source`'s `path[index]`
 * whose `cause` has `code: 'ENOENT'`; a module that fails to import is a `ParseError` with the import's error as cause.
 */
export async function importPlugins(plugins: readonly string[], options: ImportPluginsOptions): Promise<void> {
  const importModule = options.importModule ?? ((url: string) => import(url))
  const at = options.path ?? []
  for (const [index, plugin] of plugins.entries()) await importFile(plugin, options.base, options.source, [...at, index], importModule)
}

/**
 * Imports the module at `relative` (a path from `base`), returning its file and exports: a missing file is a
 * `ParseError` at `source`'s `path` whose `cause` has `code: 'ENOENT'`; a module that fails to import is a
 * `ParseError` there with the import's error as cause.
 */
async function importFile(
  relative: string,
  base: string,
  source: string,
  path: readonly (string | number)[],
  importModule: (url: string) => Promise<unknown> = (url) => import(url),
): Promise<{ file: string; exports: Record<string, unknown> }> {
  const file = resolve(base, relative)
  if (!existsSync(file)) throw new ParseError({ source, path, message: `no such file: ${file}`, cause: Object.assign(new Error(file), { code: 'ENOENT' }) })
  try {
    return { file, exports: (await importModule(pathToFileURL(file).href)) as Record<string, unknown> }
  } catch (error) {
    throw new ParseError({ source, path, message: `cannot import ${file} (${describeError(error)})`, cause: error })
  }
}

const describeError = (error: unknown) => (error instanceof Error ? error.message : String(error))

/**
 * The kind's schema with the names checked against the registries (so one pass reports every wrong field, an
 * unknown name with the registered ones) and each named part made once to check its options.
 */
function checkedSchema(kind: RunKind, options: LoadRunConfigOptions): z.ZodType {
  if (kind === 'sft') return sftRunConfigFileSchema
  if (kind === 'preference') return preferenceRunConfigFileSchema
  if (kind === 'reward-model') return rewardModelRunConfigFileSchema
  if (kind === 'aligndistil') return alignDistilRunConfigFileSchema
  const registry = options.environments
  const games = [...registry.names()]
  const opponents = [...(options.opponents?.names() ?? [])]
  const named = (names: readonly string[], what: string) =>
    names.length === 0
      ? z.string().refine(() => false, `names no registered ${what} (none are registered)`)
      : z.enum(names as [string, ...string[]], { error: `is not a registered ${what} (${names.join(', ')})` })
  /**
   * An entry's game made now, naming the entry, rather than in the first step; with `randomOpenings`, openings tried
   * too (every one of `openingTrials` seeds opened): refused where the game lists no moves, or where every opening
   * ends the game (and would be dropped, leaving the option without effect).
   */
  const gameMade = (
    entry: { game: string; options: Record<string, unknown>; randomOpenings?: RandomOpeningsOptions | undefined },
    context: z.RefinementCtx,
  ) => {
    let game: EnvironmentV1
    try {
      game = registry.create(entry.game, entry.options)
    } catch (error) {
      context.addIssue({ code: 'custom', path: ['options'], message: describeError(error) })
      return
    }
    if (entry.randomOpenings === undefined) return
    try {
      const opened = withRandomOpenings(game, { ...entry.randomOpenings, share: 1 })
      const plain = registry.create(entry.game, entry.options)
      const seeds = Array.from({ length: openingTrials }, (_, seed) => seed)
      if (seeds.every((seed) => isDeepStrictEqual(opened.reset(seed), plain.reset(seed))))
        context.addIssue({
          code: 'custom',
          path: ['randomOpenings', 'minMoves'],
          message: `every opening of ${entry.randomOpenings.minMoves ?? 1}–${entry.randomOpenings.maxMoves} moves ended ${entry.game} (or was invalid, or paid a reward) in ${openingTrials} trial resets: it would have no effect`,
        })
    } catch (error) {
      context.addIssue({ code: 'custom', path: ['randomOpenings'], message: describeError(error) })
    }
  }
  const gameEntry = { game: named(games, 'environment'), options: environmentEntryFields.options }
  const environment = z.strictObject({ ...gameEntry, randomOpenings: randomOpeningsOptionsSchema.optional() }).superRefine(gameMade)
  const advantage = z
    .strictObject({ name: named(advantageEstimators.names(), 'advantage estimator'), options: z.record(z.string(), z.unknown()).optional() })
    .superRefine((entry, context) => {
      try {
        advantageEstimators.create(entry.name, entry.options)
      } catch (error) {
        context.addIssue({ code: 'custom', path: ['options'], message: describeError(error) })
      }
    })
  const policyLoss = z
    .strictObject({ name: named(policyLosses.names(), 'policy loss'), options: z.record(z.string(), z.unknown()).optional() })
    .superRefine((entry, context) => {
      try {
        policyLosses.create(entry.name, entry.options)
      } catch (error) {
        context.addIssue({ code: 'custom', path: ['options'], message: describeError(error) })
      }
    })
  if (kind === 'for')
    return flowOfReasoningRunConfigFileSchema.extend({
      environments: z
        .array(
          z
            .strictObject({
              ...gameEntry,
              randomOpenings: z.never({ error: 'is not for kind: for (its trajectories start at the problem)' }).optional(),
            })
            .superRefine(gameMade),
        )
        .min(1, 'needs at least one environment'),
    })
  const fields = {
    environments: z.array(environment).min(1, 'needs at least one environment'),
    advantage: advantage.optional(),
    policyLoss: policyLoss.default({ name: 'ppo-clip' }),
    opponents: z
      .array(
        z.discriminatedUnion('pool', [
          z.strictObject({
            pool: z.undefined().optional(),
            name: named(opponents, 'opponent'),
            share: z.number().gt(0).max(1),
            seats: opponentSeatsSchema.optional(),
          }),
          snapshotPoolConfigSchema,
        ]),
      )
      .min(1)
      .optional(),
    evaluation: evaluationSchema.extend({ opponents: z.array(named(opponents, 'opponent')).min(1).default(['random']) }).optional(),
  }
  return (kind === 'cpo' ? cpoRunConfigFileSchema : runConfigFileSchema).extend(fields)
}

/** Makes the model and the tokenizer (loaded, or trained on `corpus()`), and resolves the run directory. */
/** The fields every kind has, parsed. */
type CommonFields = z.output<z.ZodObject<typeof commonFields>>

async function loadParts(file: CommonFields, path: string, base: string, options: LoadRunConfigOptions, corpus: () => string[]): Promise<LoadedParts> {
  const where = (field: string, error: unknown) => new ParseError({ source: path, path: field.split('.'), message: describeError(error), cause: error })
  const locate = async (text: string, field: string): Promise<string> => {
    try {
      return options.resolveSource === undefined ? resolve(base, text) : await options.resolveSource(text, base)
    } catch (error) {
      throw where(field, error)
    }
  }
  let tokenizer = options.tokenizer
  let tokenizerFiles: TokenizerFiles | undefined
  if (tokenizer === undefined) {
    const source = file.tokenizer ?? ('path' in file.model ? { path: file.model.path } : undefined)
    if (source === undefined) throw new ParseError({ source: path, path: ['tokenizer'], message: 'is required with a preset model (a path, or { train: … })' })
    if ('train' in source) {
      const { endToken, episodes: _, ...bpe } = source.train
      const config: Record<string, unknown> = { eos_token: endToken, ...(file.chatTemplate === undefined ? {} : { chat_template: file.chatTemplate }) }
      let json: unknown
      try {
        json = trainBpe(corpus(), { ...bpe, specialTokens: [endToken] })
        tokenizer = Tokenizer.fromJSON(json, config)
      } catch (error) {
        throw where('tokenizer.train', error)
      }
      tokenizerFiles = { 'tokenizer.json': json, 'tokenizer_config.json': config }
    } else {
      const directory = await locate(source.path, file.tokenizer === undefined ? 'model.path' : 'tokenizer.path')
      try {
        tokenizer = await loadTokenizer(directory)
        tokenizerFiles = await readTokenizerFiles(directory, file.chatTemplate)
      } catch (error) {
        throw where(file.tokenizer === undefined ? 'tokenizer' : 'tokenizer.path', error)
      }
    }
  }
  let model = options.model
  if (model === undefined) {
    const source = file.model
    const directory = 'path' in source ? await locate(source.path, 'model.path') : undefined
    try {
      model =
        directory === undefined
          ? createModel((source as { preset: (typeof presetNames)[number] }).preset, {
              vocabSize: tokenizer.vocabSize,
              seed: (source as { seed: number }).seed,
              overrides: (source as { overrides: Record<string, unknown> }).overrides,
            })
          : await loadModel(directory)
    } catch (error) {
      throw where('model', error)
    }
  }
  return {
    source: path,
    model,
    tokenizer,
    tokenizerFiles,
    runDirectory: file.runDirectory === undefined ? undefined : resolve(base, file.runDirectory),
    chatTemplate: chatTemplateFunction(tokenizer, file.chatTemplate),
    loggers: file.loggers,
    loggedConfig: plainConfig(file),
  }
}

/** `tokenizer.json` and `tokenizer_config.json` of a directory (or of a `tokenizer.json` path), the chat template replaced when given. */
async function readTokenizerFiles(location: string, chatTemplate: string | undefined): Promise<TokenizerFiles> {
  const file = location.endsWith('.json') ? location : resolve(location, 'tokenizer.json')
  const configFile = resolve(dirname(file), 'tokenizer_config.json')
  const config = existsSync(configFile) ? (JSON.parse(await readFile(configFile, 'utf8')) as Record<string, unknown>) : {}
  return {
    'tokenizer.json': JSON.parse(await readFile(file, 'utf8')),
    'tokenizer_config.json': chatTemplate === undefined ? config : { ...config, chat_template: chatTemplate },
  }
}

/** The prompt renderer of `createLocalPolicy`: a Jinja template with the tokenizer's special tokens, else the tokenizer's template. */
function chatTemplateFunction(tokenizer: TokenizerV1, template: string | undefined): ChatTemplateFunction | undefined {
  if (template === undefined) return tokenizer.applyChatTemplate?.bind(tokenizer)
  return chatTemplateRenderer(tokenizer, template)
}

/** The factories of a file's `environments` (`{ game, options }` of the registry). */
function environmentFactories(entries: readonly { game: string; options: Record<string, unknown> }[], options: LoadRunConfigOptions): (() => EnvironmentV1)[] {
  const registry = options.environments
  return entries.map(
    ({ game, options: gameOptions }) =>
      () =>
        registry.create(game, gameOptions),
  )
}

/** The training environments: the file's, each with its `randomOpenings` (exploring starts) where it names them. */
function trainingEnvironments(
  entries: readonly { randomOpenings?: RandomOpeningsOptions | undefined }[],
  factories: readonly (() => EnvironmentV1)[],
): (() => EnvironmentV1)[] {
  return factories.map((make, index) => {
    const openings = entries[index]!.randomOpenings
    return openings === undefined ? make : () => withRandomOpenings(make(), openings)
  })
}

/** A file's `prompt`: a name of the prompts given to the loader, else a `{observation}` template. Default `'{observation}'`. */
function namedPrompt(name: string | undefined, options: LoadRunConfigOptions): PromptTemplate {
  if (name === undefined) return '{observation}'
  return options.prompts !== undefined && Object.hasOwn(options.prompts, name) ? options.prompts[name]! : name
}

/** Renders messages without a tokenizer: the config's template with the end token, else the user contents. */
function corpusRenderer(chatTemplate: string | undefined, endToken: string): (messages: readonly ChatMessage[]) => string {
  if (chatTemplate === undefined) return (messages) => messages.map((message) => message.content).join('\n')
  return (messages) => renderChatTemplate(chatTemplate, { messages: [...messages], addGenerationPrompt: true, specialTokens: { eos_token: endToken } })
}

async function loadRl(file: z.output<typeof cpoRunConfigFileSchema>, path: string, base: string, options: LoadRunConfigOptions): Promise<RlRun> {
  const environments = environmentFactories(file.environments, options)
  const prompt = namedPrompt(file.prompt, options)
  const seed = file.seed ?? 0
  /**
   * Random legal play of each environment (`randomLegalPlay`: every turn's prompt and the move played, each
   * environment's moves drawn from its own stream), rendered by `chatTemplate`.
   */
  const play = (episodes: number, chatTemplate: (messages: readonly ChatMessage[]) => string) => {
    try {
      return environments.flatMap(
        (environment, index) =>
          randomLegalPlay({
            environment,
            games: episodes,
            seed,
            random: createRandom(deriveSeed('ludic.random-play', seed, index)),
            prompt,
            chatTemplate,
            responses: 'played',
            distinct: false,
          }).examples,
      )
    } catch (error) {
      throw new ParseError({ source: path, path: ['environments'], message: describeError(error), cause: error })
    }
  }
  const parts = await loadParts(file, path, base, options, () => {
    const train = (file.tokenizer as { train: { episodes: number; endToken: string } }).train
    return play(train.episodes, corpusRenderer(file.chatTemplate, train.endToken)).map((example) => `${example.prompt}${example.response}`)
  })
  const { model, tokenizer } = parts
  const advantage: AdvantageEstimatorV1 | undefined =
    file.advantage === undefined ? undefined : advantageEstimators.create(file.advantage.name, file.advantage.options)
  const policyLoss = policyLosses.create(file.policyLoss.name, file.policyLoss.options)
  const opponentOf = (name: string, opponentSeed: number) => options.opponents!.create(name, { seed: opponentSeed })
  const config: RlTrainerConfig = {
    model,
    tokenizer,
    environments: trainingEnvironments(file.environments, environments),
    ...(advantage === undefined ? {} : { advantage }),
    policyLoss,
    prompt,
    ...(file.chatTemplate === undefined ? {} : { chatTemplate: file.chatTemplate }),
    ...(parts.runDirectory === undefined ? {} : { runDirectory: parts.runDirectory }),
    loggers: parts.loggers,
    loggedConfig: parts.loggedConfig,
    ...(file.opponents === undefined
      ? {}
      : {
          opponents: file.opponents.map((opponent, index) =>
            opponent.pool === 'snapshots'
              ? opponent
              : {
                  policy: opponentOf(opponent.name, deriveSeed('ludic.run-config.opponent', seed, index)),
                  share: opponent.share,
                  ...(opponent.seats === undefined ? {} : { seats: opponent.seats }),
                },
          ),
        }),
  }
  for (const key of [
    'kl',
    'critic',
    'entropyCoefficient',
    'recomputeLayers',
    'optimizer',
    'schedule',
    'batch',
    'seed',
    'checkpointEvery',
    'keepLast',
    'resume',
    'trainRoles',
    'trajectories',
  ] as const) {
    if (file[key] !== undefined) (config as Record<string, unknown>)[key] = file[key]
  }
  if (file.evaluation !== undefined) {
    config.evaluate = evaluationHook(file.evaluation, file, prompt, options, seed)
    config.evaluateEvery = file.evaluation.every
  }
  if (file.kind === 'cpo') (config as RlTrainerConfig & { scorer: TrajectoryScorerV1 }).scorer = await loadScorer(file.scorer, path, base)

  let warmUp: RlRun['warmUp']
  if (file.warmUp !== undefined) {
    const { steps, episodes, ...settings } = file.warmUp
    const render = parts.chatTemplate
    if (render === undefined)
      throw new ParseError({ source: path, path: ['chatTemplate'], message: 'is needed for warmUp: the tokenizer has no chat template' })
    const examples = play(episodes, (messages) => render(messages, { addGenerationPrompt: true }))
    warmUp = {
      steps,
      config: {
        model,
        tokenizer,
        examples: examples.map(({ prompt, response }) => ({ prompt, response })),
        ...settings,
        seed,
      },
    }
  }
  return { ...parts, kind: file.kind === 'cpo' ? 'cpo' : 'rl', steps: file.steps, config, warmUp }
}

/** The evaluation hook: the model (its policy with the run's prompt and chat template) against each opponent. */
function evaluationHook(
  evaluation: z.output<typeof evaluationSchema>,
  file: z.output<typeof runConfigFileSchema>,
  prompt: PromptTemplate,
  options: LoadRunConfigOptions,
  seed: number,
): EvaluationHook {
  const registry = options.environments
  const environments = file.environments.map(
    ({ game, options: gameOptions }) =>
      () =>
        registry.create(game, { ...gameOptions, ...evaluation.environmentOptions }),
  )
  const maxTokens = file.batch?.maxTokens ?? 256
  return async ({ step, model, tokenizer }) => {
    const learner = createLocalPolicy({
      model,
      tokenizer,
      id: 'learner',
      seed,
      maxBatch: 64,
      ...(file.chatTemplate === undefined ? {} : { chatTemplate: file.chatTemplate }),
    })
    const metrics: Record<string, number> = {}
    for (const name of evaluation.opponents) {
      const matchSeed = seed + 1 + step
      const match = await evaluateAgainst({
        learner,
        opponent: options.opponents!.create(name, { seed: matchSeed }),
        environments,
        episodes: evaluation.episodes,
        seed: matchSeed,
        prompt,
        generation: { maxTokens, temperature: evaluation.temperature },
      })
      metrics[`${name}/winRate`] = match.winRate
      metrics[`${name}/winRateLow`] = match.winRateInterval[0]
      metrics[`${name}/winRateHigh`] = match.winRateInterval[1]
      metrics[`${name}/meanReward`] = match.meanReward
      metrics[`${name}/invalidRate`] = match.invalidRate
    }
    return metrics
  }
}

/**
 * The function `source.export` of the file's module `source.module` (a path from the run file's folder), for the field
 * `field` (`scorer`, `prompt`): a missing file, a failed import or an export that is not a function is a `ParseError`
 * naming `<field>.module` and the function's `signature`.
 */
async function importFunctionExport(
  source: { module: string; export: string },
  path: string,
  base: string,
  field: string,
  signature: string,
): Promise<{ exported: (...args: never[]) => unknown; fail: (message: string) => ParseError }> {
  const { file, exports } = await importFile(source.module, base, path, [field, 'module'])
  const fail = (message: string) => new ParseError({ source: path, path: [field, 'module'], message })
  const exported = exports[source.export]
  if (typeof exported !== 'function') throw fail(`${file} has no function export '${source.export}' ${signature}`)
  return { exported: exported as (...args: never[]) => unknown, fail: (message) => fail(`'${source.export}' of ${file} ${message}`) }
}

async function loadPromptFunction(source: z.output<typeof promptSourceSchema>, path: string, base: string): Promise<PromptTemplate> {
  return (await importFunctionExport(source, path, base, 'prompt', '(view, history, context) => ChatMessage[]')).exported as PromptTemplate
}

async function loadScorer(source: z.output<typeof scorerSourceSchema>, path: string, base: string): Promise<TrajectoryScorerV1> {
  const { exported: factory, fail } = await importFunctionExport(source, path, base, 'scorer', '(options) => TrajectoryScorerV1')
  const scorer = await (factory as (options: unknown) => unknown)(source.options)
  if (typeof scorer !== 'object' || scorer === null || typeof (scorer as TrajectoryScorerV1).score !== 'function')
    throw fail('did not return a TrajectoryScorerV1 (an object with score(group))')
  return scorer as TrajectoryScorerV1
}

/** The file's fields that go to the trainer as they are: all but those the loader turns into objects. */
function trainerFields(file: Record<string, unknown>, ...made: string[]): Record<string, unknown> {
  const loaderFields = ['kind', 'plugins', 'model', 'tokenizer', 'chatTemplate', 'runDirectory', 'loggers', 'data', 'heldOut', ...made]
  return Object.fromEntries(Object.entries(file).filter(([name, value]) => !loaderFields.includes(name) && value !== undefined))
}

const sftRecordSchema = z.strictObject({ prompt: z.string(), response: z.string() })

async function readJsonLines<Schema extends z.ZodType>(path: string, field: string, schema: Schema, base: string): Promise<z.output<Schema>[]> {
  const file = resolve(base, path)
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch (error) {
    throw new ParseError({ source: file, message: `cannot read the ${field} file (${describeError(error)})`, cause: error })
  }
  return parseJsonLines(text, schema, file)
}

async function readPairs(path: string, field: string, base: string) {
  const file = resolve(base, path)
  if (!existsSync(file))
    throw new ParseError({ source: file, message: `cannot read the ${field} file (no such file)`, cause: Object.assign(new Error(file), { code: 'ENOENT' }) })
  return readPreferencePairs(file)
}

/** Texts of preference pairs for training a tokenizer: every prompt and response, messages flattened. */
function pairTexts(pairs: readonly { prompt?: unknown; chosen: unknown; rejected: unknown }[]): string[] {
  const text = (value: unknown): string =>
    typeof value === 'string' ? value : Array.isArray(value) ? value.map((message) => (message as ChatMessage).content).join('\n') : ''
  return pairs.flatMap((pair) => [text(pair.prompt), text(pair.chosen), text(pair.rejected)]).filter((value) => value.length > 0)
}

async function loadSft(file: z.output<typeof sftRunConfigFileSchema>, path: string, base: string, options: LoadRunConfigOptions): Promise<SftRun> {
  const records = await readJsonLines(file.data, 'data', sftRecordSchema, base)
  const parts = await loadParts(file, path, base, options, () => records.map((record) => `${record.prompt}${record.response}`))
  const config = {
    ...trainerFields(file, 'steps'),
    model: parts.model,
    tokenizer: parts.tokenizer,
    examples: records,
    ...(parts.runDirectory === undefined ? {} : { runDirectory: parts.runDirectory }),
    loggers: parts.loggers,
    loggedConfig: parts.loggedConfig,
  } as SftTrainerConfig
  return { ...parts, kind: 'sft', steps: file.steps, config }
}

/** What the preference and reward-model trainers both take from a loaded run: model, tokenizer, pairs and places. */
function pairRunFields<Pairs, HeldOut>(parts: LoadedParts, pairs: Pairs, heldOut: HeldOut | undefined) {
  return {
    model: parts.model,
    tokenizer: parts.tokenizer,
    pairs,
    ...(heldOut === undefined ? {} : { heldOut }),
    ...(parts.chatTemplate === undefined ? {} : { chatTemplate: parts.chatTemplate }),
    ...(parts.runDirectory === undefined ? {} : { runDirectory: parts.runDirectory }),
    loggers: parts.loggers,
    loggedConfig: parts.loggedConfig,
  }
}

async function loadPreference(
  file: z.output<typeof preferenceRunConfigFileSchema>,
  path: string,
  base: string,
  options: LoadRunConfigOptions,
): Promise<PreferenceRun> {
  const pairs = await readPairs(file.data, 'data', base)
  const heldOut = file.heldOut === undefined ? undefined : await readPairs(file.heldOut, 'heldOut', base)
  const parts = await loadParts(file, path, base, options, () => pairTexts(pairs))
  const config = {
    ...trainerFields(file),
    ...pairRunFields(parts, pairs, heldOut),
  } as PreferenceTrainerConfig
  return { ...parts, kind: 'preference', config }
}

async function loadRewardModel(
  file: z.output<typeof rewardModelRunConfigFileSchema>,
  path: string,
  base: string,
  options: LoadRunConfigOptions,
): Promise<RewardModelRun> {
  const pairs = await readPairs(file.data, 'data', base)
  const heldOut = typeof file.heldOut === 'string' ? await readPairs(file.heldOut, 'heldOut', base) : file.heldOut
  const parts = await loadParts(file, path, base, options, () => pairTexts(pairs))
  const config = {
    ...trainerFields(file, 'steps', 'evaluateEvery'),
    ...pairRunFields(parts, pairs, heldOut),
  } as RewardModelTrainerConfig
  return { ...parts, kind: 'reward-model', steps: file.steps, evaluateEvery: file.evaluateEvery, config }
}

async function loadFlowOfReasoning(
  file: z.output<typeof flowOfReasoningRunConfigFileSchema>,
  path: string,
  base: string,
  options: LoadRunConfigOptions,
): Promise<FlowOfReasoningRun> {
  const environments = environmentFactories(file.environments, options)
  const prompt = typeof file.prompt === 'object' ? await loadPromptFunction(file.prompt, path, base) : namedPrompt(file.prompt, options)
  const seeds = Array.isArray(file.seeds) ? file.seeds : Array.from({ length: file.seeds.count }, (_, index) => (file.seeds as { from: number }).from + index)
  // The tokenizer's corpus: each problem's first prompt and the actions legal there.
  const parts = await loadParts(file, path, base, options, () => {
    const render = corpusRenderer(file.chatTemplate, (file.tokenizer as { train: { endToken: string } }).train.endToken)
    return environments.flatMap((make) => {
      const environment = make()
      return seeds.flatMap((seed) => {
        const view = environment.reset(seed)
        const messages = renderPrompt(prompt, view, [], { environmentId: environment.id, role: view.role, turnIndex: 0, seed })
        return [render(messages), ...(view.legalActions ?? [])]
      })
    })
  })
  const config = {
    ...trainerFields(file, 'environments', 'seeds', 'prompt'),
    model: parts.model,
    tokenizer: parts.tokenizer,
    environments,
    seeds,
    prompt,
    // A tokenizer without a chat template (one the file trains) reads the messages' contents, as its corpus did.
    ...(file.chatTemplate !== undefined
      ? { chatTemplate: file.chatTemplate }
      : hasChatTemplate(parts.tokenizer)
        ? {}
        : { chatTemplate: corpusRenderer(undefined, '') }),
    ...(parts.runDirectory === undefined ? {} : { runDirectory: parts.runDirectory }),
    loggers: parts.loggers,
    loggedConfig: parts.loggedConfig,
  } as FlowOfReasoningTrainerConfig
  return { ...parts, kind: 'for', steps: file.steps, config }
}

async function loadAlignDistil(
  file: z.output<typeof alignDistilRunConfigFileSchema>,
  path: string,
  base: string,
  options: LoadRunConfigOptions,
): Promise<AlignDistilRun> {
  const pairs = await readPairs(file.data, 'data', base)
  const heldOut = file.heldOut === undefined ? undefined : await readPairs(file.heldOut, 'heldOut', base)
  const parts = await loadParts(file, path, base, options, () => pairTexts(pairs))
  const config = { ...trainerFields(file, 'teachers'), ...pairRunFields(parts, pairs, heldOut) } as AlignDistilRun['config']
  const { steps, learningRate, beta } = file.teachers
  return { ...parts, kind: 'aligndistil', config, teachers: { steps, learningRate, beta } }
}
