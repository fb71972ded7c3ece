import { mkdir, writeFile } from 'node:fs/promises'
import { basename, extname, join, resolve } from 'node:path'
import { latestCheckpoint, saveModel } from '@ludic/model'
import { initTensors, type InitTensorsOptions } from '@ludic/tensors'
import { ParseError } from '@ludic/core'
import { applyConfigOverrides } from '@ludic/report'
import {
  checkRlTrainerConfig,
  createAlignDistilTrainer,
  createFlowOfReasoningTrainer,
  trainContrastiveDpoModels,
  createCpoTrainer,
  createPreferenceTrainer,
  createRewardModelTrainer,
  createRlTrainer,
  createSftTrainer,
  loadTrainingRun,
  readRunConfigFile,
  redactSecrets,
  refuseAnotherRun,
  type RunKind,
  type SftTrainerConfig,
  type StepMetrics,
  type TrainerControls,
  type TrainerRunOptions,
  type TokenizerFiles,
  type TrainingRun,
} from '@ludic/trainer'
import { type CommandContext, commandContext, log, progressStream } from '../context.js'
import { ConfigError } from '../errors.js'
import { importCommandPlugins } from '../plugins.js'
import { environmentRegistry, namedPrompts, opponentRegistry } from '../registries.js'
import { localModelDirectory } from '../sources.js'
import { runConfigFileName } from '../view/run-directories.js'

export interface TrainOptions {
  /** Replaces the config's `steps`. */
  steps?: number
  /** Replaces the config's `runDirectory` (relative to the working directory). Default: the config's, else `runs/<config name>-<time>`. */
  runDirectory?: string
  /** `path=value` fields set in the config before it is checked, e.g. `batch.episodesPerStep=4`. */
  set?: readonly string[]
  /** Continue from the run directory's latest checkpoint (every kind; with `checkpointEvery`). */
  resume?: boolean
  /**
   * Modules imported before the config is read (paths relative to the working directory), as its own `plugins:` are:
   * they register the games and estimators it names (`--plugin`).
   */
  plugins?: readonly string[]
}

/** What `ludic train` prints (as JSON with `--json`). */
export interface TrainSummary {
  kind: RunKind
  /** The config file, absolute. */
  config: string
  backend: string
  /** Updates taken in all (a resumed run counts those before it). */
  steps: number
  /** Stopped by Ctrl+C before the planned steps (exit code 130); RL and CPO runs save a checkpoint first. */
  interrupted: boolean
  seconds: number
  runDirectory: string
  /** The trained model with its tokenizer (`ludic serve` and `ludic eval` take it). */
  modelDirectory: string | undefined
  /** The SFT warm-up of an RL run. */
  warmUp?: { steps: number; nll: number | undefined }
  /** The last step's metrics. */
  last: Record<string, number>
  /** Held-out figures (preference and reward-model runs with held-out pairs). */
  evaluation?: Record<string, number>
}

const _tick = () => new Promise<void>((done) => setImmediate(done)) // lets the terminal, timers and Ctrl+C through

/**
 * `ludic train <config>`: reads the run config (YAML or JSON; see the README's "Config files"), trains with a
 * progress bar on stderr, writes the config as it ran (`run-config.json`, overrides applied), metrics (and, for RL,
 * checkpoints) into the run directory and the final model with its tokenizer into `<run directory>/model`, and returns
 * the summary. Ctrl+C stops after the current step.
 */
export async function train(configPath: string, options: TrainOptions = {}, partialContext: Partial<CommandContext> = {}): Promise<TrainSummary> {
  const context = commandContext(partialContext)
  const started = performance.now()
  const config = resolve(context.cwd, configPath)
  // A missing or broken file fails before the backend starts: a missing one exits 3, one that is not YAML or JSON 2.
  const raw = (await readRunConfigFile(config).catch((error: unknown) => {
    throw ParseError.isInstance(error) ? new ConfigError(error, undefined) : error
  })) as Record<string, unknown> | null
  await importCommandPlugins(options.plugins, context.cwd)
  const runtime = await initTensors({ ...(context.backend === undefined ? {} : { backend: context.backend as InitTensorsOptions['backend'] }), verbose: false })
  const overrides = [...(options.set ?? [])]
  if (options.steps !== undefined) overrides.push(`steps=${options.steps}`)
  if (options.resume === true) overrides.push('resume=true')
  if (context.seed !== undefined) overrides.push(`seed=${context.seed}`)
  if (options.runDirectory !== undefined) overrides.push(`runDirectory=${JSON.stringify(resolve(context.cwd, options.runDirectory))}`)
  else if (typeof raw?.runDirectory !== 'string') {
    const stamp = new Date().toISOString().replaceAll(':', '-').replace(/\..*$/, '')
    overrides.push(`runDirectory=${JSON.stringify(resolve(context.cwd, 'runs', `${basename(config, extname(config))}-${stamp}`))}`)
  }
  log(context, `backend ${runtime.backend}; reading ${config}`)
  let run: TrainingRun
  try {
    run = await loadTrainingRun(config, {
      environments: environmentRegistry,
      prompts: namedPrompts,
      opponents: opponentRegistry,
      overrides,
      resolveSource: (text, base) => localModelDirectory(text, { base, signal: context.signal }),
    })
  } catch (error) {
    throw ParseError.isInstance(error) && error.source === config ? new ConfigError(error, applyConfigOverrides(raw, overrides)) : error
  }
  const runDirectory = run.runDirectory!
  await mkdir(runDirectory, { recursive: true })
  log(context, `${run.kind} run in ${runDirectory}`)
  const summary: TrainSummary = {
    kind: run.kind,
    config,
    backend: runtime.backend,
    steps: 0,
    interrupted: false,
    seconds: 0,
    runDirectory,
    modelDirectory: undefined,
    last: {},
  }
  // The config as it ran (the file with --set, --steps, --seed and the run directory applied), for `ludic view` and
  // whoever reads the run later; written once the trainer accepted the directory (a refused one is left as it was).
  // A secret in it (a judge's API key in a scorer's options) is replaced by "<redacted>": run directories get shared.
  const saveConfig = () => writeFile(join(runDirectory, runConfigFileName), `${JSON.stringify(redactSecrets(applyConfigOverrides(raw, overrides)), null, 2)}\n`)
  try {
    await trainRun(run, summary, context, saveConfig)
    if (!summary.interrupted || run.kind === 'rl' || run.kind === 'cpo') summary.modelDirectory = await saveFinalModel(run, runDirectory)
  } finally {
    run.model.dispose()
  }
  summary.seconds = Number(((performance.now() - started) / 1000).toFixed(1))
  return summary
}

async function trainRun(run: TrainingRun, summary: TrainSummary, context: CommandContext, saveConfig: () => Promise<void>): Promise<void> {
  const { signal } = context
  const progress = progressStream(context)
  if (run.kind !== 'rl' && run.kind !== 'cpo') await saveConfig()
  switch (run.kind) {
    case 'rl':
    case 'cpo': {
      const resuming = run.config.resume === true && (await latestCheckpoint(run.runDirectory!)) !== undefined
      // Before the warm-up: a fresh run into a directory that holds another run is refused (--resume continues it),
      // and so is a config the trainer would refuse (an estimator whose needs it does not meet).
      if (run.config.resume !== true) refuseAnotherRun(run.runDirectory!)
      if (run.kind === 'rl') checkRlTrainerConfig(run.config)
      await saveConfig()
      if (run.warmUp !== undefined && !resuming) {
        const history = await sftSteps(run.warmUp.config, run.warmUp.steps, 'warm-up', context)
        summary.warmUp = { steps: history.length, nll: history.at(-1)?.loss }
        log(context, `warm-up: ${history.length} steps, nll ${history.at(-1)?.loss.toFixed(3) ?? 'n/a'}`)
        if (signal.aborted) {
          summary.interrupted = true
          return
        }
      }
      // What the trainer did that the user must know (a checkpoint set aside, a metrics log rebuilt): on stderr, even with --quiet.
      const notify = (message: string) => context.stderr.write(`warning: ${message}\n`)
      const trainer =
        run.kind === 'cpo'
          ? createCpoTrainer({ ...(run.config as Parameters<typeof createCpoTrainer>[0]), notify })
          : createRlTrainer({ ...run.config, notify })
      try {
        await trainer.run({ steps: run.steps, progress, signal })
        if (signal.aborted && trainer.stepCount < run.steps) {
          summary.interrupted = true
          const checkpoint = await trainer.checkpoint()
          log(context, `interrupted after step ${trainer.stepCount}; checkpoint ${checkpoint} (run again with --resume to continue)`)
        }
        summary.steps = trainer.stepCount
        summary.last = { ...(trainer.history.at(-1) ?? {}) }
        const evaluation = Object.fromEntries(Object.entries(summary.last).filter(([name]) => name.startsWith('eval/')))
        if (Object.keys(evaluation).length > 0) summary.evaluation = evaluation
      } finally {
        await trainer.close()
        trainer.dispose()
      }
      return
    }
    case 'sft': {
      await trainToTotal(createSftTrainer(run.config), run.steps, summary, { progress, signal }, context)
      return
    }
    case 'preference': {
      const trainer = createPreferenceTrainer(run.config)
      await trainToTotal(trainer, trainer.plannedSteps, summary, { progress, signal }, context, trainer.heldOutPairs.length > 0 ? trainer.evaluate : undefined)
      return
    }
    case 'for': {
      await trainToTotal(createFlowOfReasoningTrainer(run.config), run.steps, summary, { progress, signal }, context)
      return
    }
    case 'aligndistil': {
      // The teachers first: DPO and reverse DPO from the model on the same pairs (the paper's contrastive teachers).
      const { model, tokenizer, pairs, loss, batchSize, chatTemplate, maxLength, maxPromptLength, seed } = run.config
      const { dpoModel, reverseDpoModel } = await trainContrastiveDpoModels({
        model,
        tokenizer,
        pairs,
        steps: run.teachers.steps,
        loss: { type: 'sigmoid', beta: run.teachers.beta ?? loss?.beta ?? 0.1 },
        ...(run.teachers.learningRate === undefined ? {} : { optimizer: { learningRate: run.teachers.learningRate } }),
        ...(batchSize === undefined ? {} : { batchSize }),
        ...(chatTemplate === undefined ? {} : { chatTemplate }),
        ...(maxLength === undefined ? {} : { maxLength }),
        ...(maxPromptLength === undefined ? {} : { maxPromptLength }),
        ...(seed === undefined ? {} : { seed }),
        loggers: [],
      })
      try {
        const trainer = createAlignDistilTrainer({ ...run.config, dpoModel, reverseDpoModel })
        await trainToTotal(
          trainer,
          trainer.plannedSteps,
          summary,
          { progress, signal },
          context,
          trainer.heldOutPairs.length > 0 ? () => trainer.evaluate() : undefined,
        )
      } finally {
        dpoModel.dispose()
        reverseDpoModel.dispose()
      }
      return
    }
    case 'reward-model': {
      const trainer = createRewardModelTrainer(run.config)
      // The trainer saves the model with its reward head into `<run directory>/model` at the end of `run`.
      const { history, evaluation } = await trainer.run({
        ...(run.steps === undefined ? {} : { steps: run.steps }),
        evaluateEvery: run.evaluateEvery,
        progress,
      })
      summary.steps = trainer.stepCount
      summary.last = { ...(history.at(-1) ?? {}) }
      if (evaluation !== undefined) summary.evaluation = { ...evaluation }
      await writeTokenizerFiles(run.tokenizerFiles, join(run.runDirectory!, 'model'))
      trainer.dispose()
      return
    }
  }
}

/**
 * Runs a trainer to `total` steps (a resumed run continues to it; Ctrl+C stops after the current step) and fills the
 * summary: steps, whether it stopped short, the last step's metrics and, where given, the held-out evaluation.
 */
async function trainToTotal(
  trainer: TrainerControls<StepMetrics> & { run(options: TrainerRunOptions & { steps: number }): Promise<unknown> },
  total: number,
  summary: TrainSummary,
  options: Pick<TrainerRunOptions, 'progress' | 'signal'>,
  context: CommandContext,
  evaluate?: () => Promise<object>,
): Promise<void> {
  try {
    await trainer.run({ ...options, steps: total })
    summary.steps = trainer.stepCount
    summary.interrupted = trainer.stepCount < total
    // Stopped by Ctrl+C: a checkpoint of the step reached, so that --resume continues (as an RL run's).
    if (summary.interrupted && options.signal?.aborted === true && trainer.stepCount > 0) {
      const checkpoint = await trainer.checkpoint()
      log(context, `interrupted after step ${trainer.stepCount}; checkpoint ${checkpoint} (run again with --resume to continue)`)
    }
    summary.last = { ...(trainer.history.at(-1) ?? {}) }
    if (evaluate !== undefined) summary.evaluation = { ...(await evaluate()) } as Record<string, number>
  } finally {
    trainer.dispose()
  }
}

/** An RL run's SFT warm-up: updates with a progress bar, stopping at Ctrl+C; it logs nothing (the run's metrics are RL's). */
async function sftSteps(config: SftTrainerConfig, steps: number, label: string, context: CommandContext) {
  const trainer = createSftTrainer({ ...config, loggers: [] })
  try {
    return await trainer.run({ steps, progress: progressStream(context), signal: context.signal, label })
  } finally {
    trainer.dispose()
  }
}

/** `<run directory>/model`: the weights (`saveModel`) and the tokenizer's files, loadable by `loadModel` and `loadTokenizer`. */
async function saveFinalModel(run: TrainingRun, runDirectory: string): Promise<string> {
  const directory = join(runDirectory, 'model')
  if (run.kind !== 'reward-model') await saveModel(run.model, directory)
  await writeTokenizerFiles(run.tokenizerFiles, directory)
  return directory
}

async function writeTokenizerFiles(files: TokenizerFiles | undefined, directory: string): Promise<void> {
  if (files === undefined) return
  await mkdir(directory, { recursive: true })
  for (const [name, content] of Object.entries(files)) await writeFile(join(directory, name), `${JSON.stringify(content, null, 2)}\n`)
}

/** The summary as lines of text. */
export function trainSummaryText(summary: TrainSummary): string {
  const number = (value: number) => (Number.isInteger(value) ? String(value) : value.toPrecision(3))
  const figures = (metrics: Record<string, number>) =>
    Object.entries(metrics)
      .filter(([name]) => name !== 'step' && !name.startsWith('eval/'))
      .slice(0, 12)
      .map(([name, value]) => `${name} ${number(value)}`)
      .join(', ')
  const lines = [
    `${summary.interrupted ? 'interrupted' : 'trained'} ${summary.kind} (${basename(summary.config)}): ${summary.steps} steps in ${summary.seconds} s on ${summary.backend}`,
  ]
  if (summary.warmUp !== undefined) lines.push(`  warm-up: ${summary.warmUp.steps} steps, nll ${summary.warmUp.nll?.toFixed(3) ?? 'n/a'}`)
  if (Object.keys(summary.last).length > 0) lines.push(`  last step: ${figures(summary.last)}`)
  const evaluation = summary.evaluation ?? {}
  // An RL evaluation: per opponent, the win rate with its 95% interval.
  const opponents = Object.keys(evaluation)
    .map((name) => /^eval\/(.+)\/winRate$/.exec(name)?.[1])
    .filter((name) => name !== undefined)
  for (const opponent of opponents) {
    const figure = (name: string) => evaluation[`eval/${opponent}/${name}`]
    lines.push(
      `  against ${opponent}: win rate ${number(figure('winRate')!)} [${number(figure('winRateLow') ?? Number.NaN)}, ${number(figure('winRateHigh') ?? Number.NaN)}] (95%), ` +
        `mean reward ${number(figure('meanReward') ?? Number.NaN)}, invalid moves ${number(figure('invalidRate') ?? Number.NaN)}`,
    )
  }
  if (opponents.length === 0 && Object.keys(evaluation).length > 0) lines.push(`  held out: ${figures(evaluation)}`)
  lines.push(`  run directory: ${summary.runDirectory}`)
  if (summary.modelDirectory !== undefined) lines.push(`  model: ${summary.modelDirectory} (ludic serve and ludic eval take it)`)
  return lines.join('\n')
}
