import { InvalidArgumentError, yieldToEventLoop, type AdvantageEstimatorV1, type Random } from '@ludic/core'
import type { AdamW, CausalLanguageModel } from '@ludic/model'
import type * as tf from '@tensorflow/tfjs-core'
import type { z } from 'zod'
import { createRunLoggers, type loggingConfigFields, warnNotify } from './loggers/run-loggers.js'
import type { StepMetrics } from './metrics-log.js'
import type { ProgressStream } from '@ludic/report'
import { nodePlatform } from './platform.js'
export { runConfigFields } from './run-config-fields.js'
import { createRunState, refuseAnotherRun, type JsonValue, type RunState, type RunStateOptions } from './run-state.js'

/** `run`'s options, the same for every trainer. */
export interface TrainerRunOptions<Metrics extends StepMetrics = StepMetrics> {
  /**
   * Run until this many steps have been taken in total (a resumed run continues to it; a trainer that has taken them
   * already takes none). Default: the trainer's planned steps (where it has them).
   */
  steps?: number
  onStep?: (metrics: Metrics) => void | Promise<void>
  /** A progress bar on stderr (`true`) or on a stream (the Node entry's: refused in the browser entry). Default false. */
  progress?: boolean | ProgressStream
  /** Stops after the current step (which is checkpointed when checkpoints are on). */
  signal?: AbortSignal
  /** The progress bar's label. Default: the trainer's name. */
  label?: string
}

/** One update of a trainer: its metrics, and what it writes after they are logged (`trajectories.jsonl`, a text). */
export interface TrainerUpdate<Metrics extends StepMetrics> {
  metrics: Metrics
  record?: () => Promise<void>
}

/** What a trainer gives the skeleton: only what is its own. */
export interface TrainerParts<Metrics extends StepMetrics> {
  /** The trainer's name: the loggers' `trainer` and the progress bar's default label. */
  name: string
  model: CausalLanguageModel
  optimizer: AdamW
  /** The config's run fields, parsed (`runConfigFields`). */
  run: {
    runDirectory?: string | undefined
    loggers: z.output<typeof loggingConfigFields.loggers>
    loggedConfig?: Record<string, unknown> | undefined
    checkpointEvery: number
    keepLast: number
    resume: boolean
  }
  /** The configuration the loggers record when the config gives no `loggedConfig`. */
  plainConfig: () => Record<string, unknown>
  notify?: ((message: string) => void) | undefined
  /** The weights a checkpoint holds (default `model.parameters()`). */
  parameters?: ReadonlyMap<string, tf.Variable>
  /** A frozen reference model saved once under `reference/` and restored on resume (the run's starting weights). */
  reference?: CausalLanguageModel | undefined
  /** The reference moves during the run (`kl.referenceSync`): saved with every checkpoint instead of once. */
  referenceMoves?: boolean | undefined
  /** An advantage estimator whose state each checkpoint holds (RL). */
  estimator?: AdvantageEstimatorV1 | undefined
  /** A separate critic's parameters and optimizer, saved beside each checkpoint (RL; see `RunStateOptions.critic`). */
  critic?: RunStateOptions['critic']
  /**
   * The trainer's own update, its batch and its loss, as step `stepIndex + 1` (0-based `stepIndex`: the schedules'
   * position). Evaluations due at that step are the trainer's.
   */
  update(stepIndex: number): Promise<TrainerUpdate<Metrics>>
  /** The trainer's generator (saved with each checkpoint; restored through `restore`). */
  random(): Random
  /** The trainer's own state beside the weights, optimizer and generator, as plain data (its data position…). */
  saveState(): JsonValue
  /** Restores what `saveState` gave, with the generator of the same checkpoint. */
  restoreState(state: JsonValue | undefined, random: Random): void
  /** The progress bar's figures of a step. */
  progressFields(metrics: Metrics): Record<string, number>
  /** Called when `run` has taken its steps, before the last checkpoint (stops rollout workers). */
  finish?: () => Promise<void>
  /** Frees what the trainer made (the optimizer's moments, a reference copy…); also when the skeleton refuses the config. */
  dispose(): void
}

/** What every trainer has: `step`, `run`, `resume`, `checkpoint`, the step count and the history. */
export interface TrainerSkeleton<Metrics extends StepMetrics> {
  /** Steps taken so far (restored on resume). */
  readonly stepCount: number
  /** Metrics of every step so far (restored on resume). */
  readonly history: readonly Metrics[]
  /** The run directory's state: loggers, `trajectories.jsonl`, checkpoints. */
  readonly runState: RunState
  /** One update (resuming first when the config asks), its metrics logged, a checkpoint when one is due. */
  step(): Promise<Metrics>
  /** Steps until `steps` have been taken in total, the signal aborts, or none are left; returns this call's metrics. */
  run(options: TrainerRunOptions<Metrics> & { steps: number }): Promise<Metrics[]>
  /** Loads the latest checkpoint of the run directory; returns its step (undefined when there is none). */
  resume(): Promise<number | undefined>
  /** Saves a checkpoint of the current state now and returns its path. */
  checkpoint(): Promise<string>
  /** Closes the loggers (`run` does when it ends). */
  close(): Promise<void>
  /** Closes the loggers and frees what the trainer made (`TrainerParts.dispose`). */
  dispose(): void
}

/**
 * The loop every trainer repeats, written once (TRL's trainers share `transformers.Trainer` the same way): the
 * loggers, made when the trainer is (so a logger that cannot work is refused before anything trains), given every
 * step's metrics and closed when `run` ends; the progress bar; the abort signal; `onStep`; a checkpoint every
 * `checkpointEvery` steps and after the last step of `run` (the weights, the optimizer, the generator, the metrics
 * and the trainer's own state: `run-state.ts`); resume from the latest checkpoint, bit for bit. `run({ steps })`
 * means the total to reach, so a resumed run continues to it. Each trainer keeps only its batch and its loss
 * (`update`) and the state they need.
 */
export function createTrainerSkeleton<Metrics extends StepMetrics>(parts: TrainerParts<Metrics>): TrainerSkeleton<Metrics> {
  try {
    return createSkeleton(parts)
  } catch (error) {
    parts.dispose() // a config refused leaves nothing made behind (and a model as it was)
    throw error
  }
}

function createSkeleton<Metrics extends StepMetrics>(parts: TrainerParts<Metrics>): TrainerSkeleton<Metrics> {
  const { run: fields } = parts
  // The run directory's files are the Node entry's: in the browser entry the option is refused here, before anything is made.
  if (fields.runDirectory !== undefined) nodePlatform('config.runDirectory', fields.runDirectory)
  for (const [field, needed] of [
    ['checkpointEvery', fields.checkpointEvery > 0 ? `${fields.checkpointEvery}` : undefined],
    ['resume', fields.resume ? 'true' : undefined],
  ] as const) {
    if (needed !== undefined && fields.runDirectory === undefined)
      throw new InvalidArgumentError({ argument: 'config.runDirectory', value: undefined, message: `is needed with config.${field} = ${needed}` })
  }
  // Refused before anything is made: a fresh run into a directory that holds another run.
  if (fields.runDirectory !== undefined && !fields.resume) refuseAnotherRun(fields.runDirectory)
  const notify = parts.notify ?? warnNotify
  const loggers = createRunLoggers({
    loggers: fields.loggers,
    directory: fields.runDirectory,
    trainer: parts.name,
    config: fields.loggedConfig ?? parts.plainConfig(),
    notify,
  })
  const runState = createRunState({
    directory: fields.runDirectory,
    keepLast: fields.keepLast,
    model: parts.model,
    ...(parts.parameters === undefined ? {} : { parameters: parts.parameters }),
    optimizer: parts.optimizer,
    reference: parts.reference,
    referenceMoves: parts.referenceMoves,
    estimator: parts.estimator,
    critic: parts.critic,
    notify,
    loggers,
  })
  let stepCount = 0
  let history: Metrics[] = []
  let resumeChecked = !fields.resume

  async function resume(): Promise<number | undefined> {
    resumeChecked = true
    const progress = await runState.resume()
    if (progress === undefined) return undefined
    stepCount = progress.step
    history = progress.history as Metrics[]
    parts.restoreState(progress.trainerState, progress.random)
    return stepCount
  }
  const checkpoint = () => runState.checkpoint({ step: stepCount, random: parts.random(), history, trainerState: parts.saveState() })

  async function step(): Promise<Metrics> {
    if (!resumeChecked) await resume()
    const { metrics, record } = await parts.update(stepCount)
    stepCount++
    history.push(metrics)
    await runState.log(metrics)
    await record?.()
    if (fields.checkpointEvery > 0 && stepCount % fields.checkpointEvery === 0) await checkpoint()
    return metrics
  }

  return {
    get stepCount() {
      return stepCount
    },
    get history() {
      return history
    },
    runState,
    step,
    async run({ steps, onStep, progress = false, signal, label = parts.name }) {
      if (!Number.isInteger(steps) || steps < 0)
        throw new InvalidArgumentError({ argument: 'options.steps', value: steps, message: 'must be a non-negative integer (the total step count to reach)' })
      // A terminal's progress bar is the Node entry's (in a browser, `onStep` gives each step's metrics).
      const createBar = progress === false ? undefined : nodePlatform('options.progress', progress === true ? true : 'a stream').createProgressBar
      if (!resumeChecked) await resume()
      await runState.prepare()
      const bar = createBar?.(steps, { label, ...(progress === true || progress === false ? {} : { stream: progress }) })
      bar?.update(Math.min(stepCount, steps))
      const taken: Metrics[] = []
      try {
        while (stepCount < steps && signal?.aborted !== true) {
          const metrics = await step()
          taken.push(metrics)
          bar?.update(stepCount, parts.progressFields(metrics))
          await onStep?.(metrics)
          await yieldToEventLoop() // let the terminal and signals through
        }
      } finally {
        await runState.closeLoggers()
      }
      bar?.finish()
      await parts.finish?.()
      const last = history.at(-1)
      if (fields.checkpointEvery > 0 && last !== undefined && last.step === stepCount && stepCount % fields.checkpointEvery !== 0) await checkpoint()
      return taken
    },
    resume,
    checkpoint,
    close: () => runState.closeLoggers(),
    dispose() {
      void runState.closeLoggers()
      parts.dispose()
    },
  }
}

/** A generator's state as plain data, and back (a trainer's second generator in its saved state). */
export const randomStateOf = (random: Random): number[] => [...random.getState()]

/** What every trainer has beside its own members (each trainer's interface extends it). */
export interface TrainerControls<Metrics extends StepMetrics> {
  readonly optimizer: AdamW
  /** Updates taken so far (restored on resume). */
  readonly stepCount: number
  /** Metrics of every step so far (restored on resume). */
  readonly history: readonly Metrics[]
  /** One update; its metrics go to the loggers, and a checkpoint is saved when one is due. */
  step(): Promise<Metrics>
  /** Loads the latest checkpoint of `runDirectory`; returns its step (undefined when there is none). */
  resume(): Promise<number | undefined>
  /** Saves a checkpoint now (weights, optimizer, generator, data position, the trainer's state) and returns its path. */
  checkpoint(): Promise<string>
  /** Closes the loggers (`run` does when it ends). */
  close(): Promise<void>
  /** Frees what the trainer made (the optimizer's moments…; the model stays) and closes the loggers. */
  dispose(): void
}

/**
 * A trainer: its own members (`run`, `evaluate`, its pairs…) with the skeleton's `stepCount`, `history`, `step`,
 * `resume`, `checkpoint`, `close` and `dispose`.
 */
export function trainerWith<Metrics extends StepMetrics, Own extends { optimizer: AdamW }>(
  skeleton: TrainerSkeleton<Metrics>,
  own: Own,
): Own & TrainerControls<Metrics> {
  const trainer = Object.defineProperties(own, {
    stepCount: { get: () => skeleton.stepCount, enumerable: true },
    history: { get: () => skeleton.history, enumerable: true },
  }) as Own & TrainerControls<Metrics>
  return Object.assign(trainer, {
    step: skeleton.step,
    resume: skeleton.resume,
    checkpoint: skeleton.checkpoint,
    close: skeleton.close,
    dispose: skeleton.dispose,
  })
}
