import { readdirSync } from 'node:fs'
import { mkdir, rename } from 'node:fs/promises'
import type * as tf from '@tensorflow/tfjs-core'
import { join } from 'node:path'
import { InvalidArgumentError, LudicError, ParseError, type AdvantageEstimatorV1, type Random } from '@ludic/core'
import {
  latestCheckpoint,
  listCheckpoints,
  loadTrainingCheckpoint,
  saveTrainingCheckpoint,
  type AdamW,
  type CausalLanguageModel,
  type LoadedTrainingCheckpoint,
} from '@ludic/model'
import type { RunLoggers } from './loggers/run-loggers.js'
import type { StepMetrics } from './metrics-log.js'
import type { z } from 'zod'
import { trajectoriesFileName } from './trajectory-log.js'
import { createTrajectoryFile, type TrajectoryFile } from './trajectory-writer.js'

const resumeMarker = Symbol.for('ludic.error.ResumeError')

/**
 * A run asked to resume cannot continue from what its directory holds: checkpoints that none can be read
 * (`no-readable-checkpoint`), the KL term's reference weights missing or unreadable (`reference-missing`,
 * `reference-unreadable`), or a separate critic's checkpoint of the same step (`critic-missing`, `critic-unreadable`). Nothing was trained and nothing written: training on as if resumed would start from the
 * wrong weights and overwrite the run's good ones. `ludic train` exits 3 (an input it needs cannot be read).
 */
export class ResumeError extends LudicError {
  private readonly [resumeMarker] = true
  override readonly name = 'ResumeError'
  readonly reason: 'no-readable-checkpoint' | 'reference-missing' | 'reference-unreadable' | 'critic-missing' | 'critic-unreadable'
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
   * A separate critic's trained parameters and optimizer: saved beside each checkpoint under `critic/checkpoint-<step>`
   * and restored with it (a shared critic's head is one of the model's parameters).
   */
  critic?: { parameters: ReadonlyMap<string, tf.Variable>; optimizer: AdamW } | undefined
  /** Told what the run state did that the user should know (a broken checkpoint set aside). */
  notify: (message: string) => void
  /** Where the steps' metrics go (`createRunLoggers`); started at the checkpoint's step on resume. */
  loggers: RunLoggers
}

export function createRunState(options: RunStateOptions): RunState {
  const { directory, keepLast, model, optimizer, estimator, reference, critic, notify, loggers } = options
  const weights = () => options.parameters ?? model.parameters()
  const trajectoryFile: TrajectoryFile | undefined = directory === undefined ? undefined : createTrajectoryFile(join(directory, trajectoriesFileName))
  const needDirectory = (purpose: string): string => {
    if (directory === undefined) throw new InvalidArgumentError({ argument: 'config.runDirectory', value: undefined, message: `is needed ${purpose}` })
    return directory
  }
  /**
   * The newest checkpoint that loads; the newer ones that do not are then renamed out of the way. Undefined when there
   * is none; a `ResumeError` when there are some and none loads (they stay where they are, for the user to look at).
   */
  const loadNewest = async (runDirectory: string): Promise<LoadedTrainingCheckpoint | undefined> => {
    const checkpoints = await listCheckpoints(runDirectory)
    const broken: { step: number; path: string; error: Error }[] = []
    for (const { step, path } of [...checkpoints].reverse()) {
      try {
        const loaded = await loadTrainingCheckpoint(path, { parameters: weights(), optimizer })
        for (const newer of broken) {
          const aside = join(runDirectory, `broken-checkpoint-${newer.step}-${Date.now()}`)
          await rename(newer.path, aside)
          notify(`checkpoint-${newer.step} cannot be read (${newer.error.message}); set aside as ${aside}, resuming from checkpoint-${step}`)
        }
        return loaded
      } catch (error) {
        if (!ParseError.isInstance(error)) throw error
        broken.push({ step, path, error })
      }
    }
    if (broken.length === 0) return undefined
    // The failed loads may have written into the model and optimizer: the caller must not train on (and does not).
    throw new ResumeError({
      reason: 'no-readable-checkpoint',
      directory: runDirectory,
      message:
        `cannot resume: none of the ${broken.length} checkpoint(s) in ${runDirectory} can be read ` +
        `(${broken.map(({ step, error }) => `checkpoint-${step}: ${error.message}`).join('; ')}); nothing was trained or overwritten`,
      cause: broken[0]!.error,
    })
  }
  /** A separate critic's checkpoint of `step` (`critic/checkpoint-<step>`): missing or unreadable is a `ResumeError`. */
  const loadCritic = async (runDirectory: string, step: number, target: NonNullable<RunStateOptions['critic']>) => {
    const saved = join(runDirectory, 'critic', `checkpoint-${step}`)
    try {
      await loadTrainingCheckpoint(saved, target)
    } catch (error) {
      const missing = (error as { code?: unknown }).code === 'ENOENT' || (error as { cause?: { code?: unknown } }).cause?.code === 'ENOENT'
      if (!missing && !LudicError.isInstance(error)) throw error
      throw new ResumeError({
        reason: missing ? 'critic-missing' : 'critic-unreadable',
        directory: runDirectory,
        message: `cannot resume: the critic of checkpoint-${step} (${saved}) ${missing ? 'is missing' : `cannot be read (${(error as Error).message})`}`,
        cause: error,
      })
    }
  }
  /** The KL reference's weights, saved once under `reference/`: missing or unreadable is a `ResumeError`. */
  const loadReference = async (runDirectory: string, model: CausalLanguageModel) => {
    const folder = join(runDirectory, 'reference')
    const saved = await latestCheckpoint(folder)
    if (saved === undefined) {
      throw new ResumeError({
        reason: 'reference-missing',
        directory: runDirectory,
        message:
          `cannot resume: ${folder} is missing, and the KL term's reference (the weights the run started from) cannot be rebuilt from a ` +
          'checkpoint; restore it, or start a new run (a run without the kl term needs none)',
      })
    }
    try {
      await loadTrainingCheckpoint(saved, { parameters: model.parameters() })
    } catch (error) {
      if (!LudicError.isInstance(error)) throw error
      throw new ResumeError({
        reason: 'reference-unreadable',
        directory: runDirectory,
        message: `cannot resume: the KL term's reference in ${saved} cannot be read (${(error as Error).message})`,
        cause: error,
      })
    }
  }
  return {
    directory,
    log: (metrics) => loggers.log(metrics),
    text: (tag, step, text) => loggers.text(tag, step, text),
    closeLoggers: () => loggers.close(),
    async logTrajectories(step, lines) {
      await trajectoryFile?.write(step, lines)
    },
    async resume() {
      const runDirectory = needDirectory('to resume')
      const loaded = await loadNewest(runDirectory)
      if (loaded === undefined) return undefined
      const extra = (loaded.extra ?? {}) as { estimatorState?: unknown; history?: StepMetrics[]; trainerState?: JsonValue }
      if (reference !== undefined) await loadReference(runDirectory, reference)
      if (critic !== undefined) await loadCritic(runDirectory, loaded.step, critic)
      if (extra.estimatorState !== undefined && extra.estimatorState !== null) estimator?.setState?.(extra.estimatorState)
      const history = extra.history ?? []
      // The loggers continue from the checkpoint's step (metrics.jsonl keeps its lines up to it, rebuilt when some are missing).
      await loggers.start({ step: loaded.step, history })
      // The episodes of steps after the checkpoint are played again: their old lines go.
      await trajectoryFile?.keepThrough(loaded.step)
      return { step: loaded.step, random: loaded.random, history, ...(extra.trainerState === undefined ? {} : { trainerState: extra.trainerState }) }
    },
    async checkpoint({ step, random, history, trainerState }) {
      const runDirectory = needDirectory('to save checkpoints')
      if (reference !== undefined && (await latestCheckpoint(join(runDirectory, 'reference'))) === undefined) {
        await saveTrainingCheckpoint(join(runDirectory, 'reference'), { parameters: reference.parameters(), randomState: random.getState(), step: 0 })
      }
      const extra = {
        estimatorState: (estimator?.getState?.() ?? null) as never,
        history: history as never,
        ...(trainerState === undefined ? {} : { trainerState }),
      }
      // The critic's first: a checkpoint of the run exists only once its critic's does.
      if (critic !== undefined)
        await saveTrainingCheckpoint(join(runDirectory, 'critic'), { ...critic, randomState: random.getState(), step }, { keepLast: keepLast + 1 })
      await saveTrainingCheckpoint(runDirectory, { parameters: weights(), optimizer, randomState: random.getState(), step, extra }, { keepLast })
      return join(runDirectory, `checkpoint-${step}`)
    },
    async prepare() {
      if (directory !== undefined) await mkdir(directory, { recursive: true })
    },
  }
}

/**
 * A fresh run (one that does not resume) must not write into a directory that holds another run's checkpoints or KL
 * reference: it would mix with them (its checkpoints pruned against the other's, the other's reference taken for its
 * own, the other's metrics cut away). An `InvalidArgumentError` on `config.runDirectory`, before anything is made.
 */
export function refuseAnotherRun(directory: string): void {
  let names: string[]
  try {
    names = readdirSync(directory)
  } catch {
    return // no directory yet: nothing to mix with
  }
  const held = names.filter((name) => /^checkpoint-\d+$/.test(name) || name === 'reference').sort()
  if (held.length === 0) return
  throw new InvalidArgumentError({
    argument: 'config.runDirectory',
    value: directory,
    message:
      `holds another run (${held.slice(0, 3).join(', ')}${held.length > 3 ? ', …' : ''}): continue it with config.resume ` +
      '(ludic train --resume), or give another run directory; nothing was written',
  })
}
