import { InvalidArgumentError, LudicError, type AdvantageEstimatorV1, type Random } from '@ludic/core'
import type { AdamW, CausalLanguageModel } from '@ludic/model'
import type * as tf from '@tensorflow/tfjs-core'
import type { z } from 'zod'
import type { RunLoggers } from './loggers/run-loggers.js'
import type { StepMetrics } from './metrics-log.js'
import { nodePlatform } from './platform.js'

const resumeMarker = Symbol.for('ludic.error.ResumeError')

/**
 * A run asked to resume cannot continue from what its directory holds: checkpoints that none can be read
 * (`no-readable-checkpoint`), the KL term's reference weights missing or unreadable (`reference-missing`,
 * `reference-unreadable`), a separate critic's checkpoint of the same step (`critic-missing`, `critic-unreadable`), or
 * an advantage estimator's saved state that the configured estimator refuses (`estimator-state`: e.g. RAE's baselines
 * per role where the config asks for them per opponent). Nothing was trained and nothing written: training on as if resumed would start from the
 * wrong weights and overwrite the run's good ones. `ludic train` exits 3 (an input it needs cannot be read).
 */
export class ResumeError extends LudicError {
  private readonly [resumeMarker] = true
  override readonly name = 'ResumeError'
  readonly reason: 'no-readable-checkpoint' | 'reference-missing' | 'reference-unreadable' | 'critic-missing' | 'critic-unreadable' | 'estimator-state'
  readonly directory: string

  constructor(options: { reason: ResumeError['reason']; directory: string; message: string; cause?: unknown }) {
    super(options.message, options.cause === undefined ? {} : { cause: options.cause })
    this.reason = options.reason
    this.directory = options.directory
  }

  static override isInstance(error: unknown): error is ResumeError {
    return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[resumeMarker] === true
  }
}

/**
 * What a trainer continues from: the step reached, its generator, the metrics of every step so far and the trainer's
 * own state as plain data (its data position, a replay buffer, cached reference log-probs…).
 */
export interface RunProgress {
  step: number
  random: Random
  history: StepMetrics[]
  trainerState?: JsonValue
}

/** Plain JSON data (what a checkpoint's `extra` holds). */
export type JsonValue = z.core.util.JSONType

/**
 * A run directory: `metrics.jsonl` and `checkpoint-<step>/` folders holding the weights, the optimizer, the
 * generator, the estimator's state, the step and the metrics history, so a resumed run continues exactly (bit
 * for bit); the KL term's frozen reference model is saved once under `reference/`.
 *
 * Faults: a checkpoint that cannot be read (a file cut short by a crash, a missing tensor) is set aside as
 * `broken-checkpoint-<step>-<time>` and the run resumes from the newest one that loads, saying so through
 * `notify`; when none loads, or the KL reference (`reference/`) is missing or unreadable, `resume` throws a
 * `ResumeError` and leaves the directory as it was. `metrics.jsonl` never holds a step twice (the first line a
 * process writes drops every line from that step on, so a run killed before its first checkpoint starts its log
 * over), and a log cut short or deleted is rebuilt on resume from the checkpoint's history, saying so. `trajectories.jsonl`
 * follows the same rule (its lines of steps after the checkpoint are dropped on resume), and is not rebuilt.
 */
export interface RunState {
  readonly directory: string | undefined
  /** Gives a step's metrics to the run's loggers (`metrics.jsonl`: after any stale lines of that step or later; nothing without a directory). */
  log(metrics: StepMetrics): Promise<void>
  /**
   * Appends a step's lines to `trajectories.jsonl` (nothing without a directory), by the same rule: the first write of
   * the process drops the lines of that step or later.
   */
  logTrajectories(step: number, lines: readonly string[]): Promise<void>
  /** Gives a text of a step to the run's loggers (TensorBoard's text summaries). */
  text(tag: string, step: number, text: string): Promise<void>
  /** Closes the loggers (a later `log` starts them again). */
  closeLoggers(): Promise<void>
  /** Loads the latest checkpoint into the model, optimizer, estimator and reference; undefined when there is none. */
  resume(): Promise<RunProgress | undefined>
  /** Saves a checkpoint of `progress` now and returns its path. */
  checkpoint(progress: RunProgress): Promise<string>
  /** Creates the directory. */
  prepare(): Promise<void>
}

export interface RunStateOptions {
  directory: string | undefined
  keepLast: number
  model: CausalLanguageModel
  /**
   * The weights a checkpoint holds. Default `model.parameters()`; a trainer with parameters of its own beside the
   * model's (Flow of Reasoning's log Z) gives them all.
   */
  parameters?: ReadonlyMap<string, tf.Variable>
  optimizer: AdamW
  /** An advantage estimator with a state (saved and restored with each checkpoint). Default: none. */
  estimator?: AdvantageEstimatorV1 | undefined
  reference: CausalLanguageModel | undefined
  /**
   * The reference moves during the run (`kl.referenceSync`): saved beside each checkpoint under
   * `reference/checkpoint-<step>` and restored with it, instead of once. Default false.
   */
  referenceMoves?: boolean | undefined
  /**
   * A separate critic's trained parameters and optimizer: saved beside each checkpoint under `critic/checkpoint-<step>`
   * and restored with it (a shared critic's head is one of the model's parameters).
   */
  critic?: { parameters: ReadonlyMap<string, tf.Variable>; optimizer: AdamW } | undefined
  /** Told what the run state did that the user should know (a broken checkpoint set aside). */
  notify: (message: string) => void
  /** Where the steps' metrics go (`createRunLoggers`); started at the checkpoint's step on resume. */
  loggers: RunLoggers
}

/**
 * A run's state: in memory without a run directory (the loggers get each step; nothing to resume from or checkpoint
 * to), and the run directory's files with one (`run-directory.ts`, the Node entry's: in the browser entry
 * `config.runDirectory` is refused).
 */
export function createRunState(options: RunStateOptions): RunState {
  const { directory, loggers } = options
  if (directory !== undefined) return nodePlatform('config.runDirectory', directory).createRunDirectoryState({ ...options, directory })
  const needDirectory = (purpose: string): never => {
    throw new InvalidArgumentError({ argument: 'config.runDirectory', value: undefined, message: `is needed ${purpose}` })
  }
  return {
    directory,
    log: (metrics) => loggers.log(metrics),
    text: (tag, step, text) => loggers.text(tag, step, text),
    closeLoggers: () => loggers.close(),
    async logTrajectories() {},
    resume: async () => needDirectory('to resume'),
    checkpoint: async () => needDirectory('to save checkpoints'),
    async prepare() {},
  }
}

/**
 * A fresh run (one that does not resume) must not write into a directory that holds another run's checkpoints or KL
 * reference: it would mix with them (its checkpoints pruned against the other's, the other's reference taken for its
 * own, the other's metrics cut away). An `InvalidArgumentError` on `config.runDirectory`, before anything is made
 * (in the browser entry, which has no run directories, always).
 */
export function refuseAnotherRun(directory: string): void {
  nodePlatform('config.runDirectory', directory).refuseAnotherRun(directory)
}
