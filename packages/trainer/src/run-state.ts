import { mkdir, rename } from 'node:fs/promises'
import { join } from 'node:path'
import { InvalidArgumentError, ParseError, type AdvantageEstimatorV1, type Random } from '@ludic/core'
import {
  latestCheckpoint,
  listCheckpoints,
  loadTrainingCheckpoint,
  saveTrainingCheckpoint,
  type AdamW,
  type CausalLanguageModel,
  type LoadedTrainingCheckpoint,
} from '@ludic/model'
import { createMetricsLog, type MetricsLog, type StepMetrics } from './metrics-log.js'

/** What a trainer continues from: the step reached, its generator and the metrics of every step so far. */
export interface RunProgress {
  step: number
  random: Random
  history: StepMetrics[]
}

/**
 * A run directory: `metrics.jsonl` and `checkpoint-<step>/` folders holding the weights, the optimizer, the
 * generator, the estimator's state, the step and the metrics history, so a resumed run continues exactly (bit
 * for bit); the KL term's frozen reference model is saved once under `reference/`.
 *
 * Faults: a checkpoint that cannot be read (a file cut short by a crash, a missing tensor) is set aside as
 * `broken-checkpoint-<step>-<time>` and the run resumes from the newest one that loads, saying so through
 * `notify`; `metrics.jsonl` never holds a step twice (the first line a process writes drops every line from
 * that step on, so a run killed before its first checkpoint starts its log over).
 */
export interface RunState {
  readonly directory: string | undefined
  /** Appends a step's metrics to `metrics.jsonl` (nothing without a directory), after any stale lines of that step or later. */
  log(metrics: StepMetrics): Promise<void>
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
  optimizer: AdamW
  estimator: AdvantageEstimatorV1
  reference: CausalLanguageModel | undefined
  /** Told what the run state did that the user should know (a broken checkpoint set aside). */
  notify: (message: string) => void
}

export function createRunState({ directory, keepLast, model, optimizer, estimator, reference, notify }: RunStateOptions): RunState {
  const metricsLog: MetricsLog | undefined = directory === undefined ? undefined : createMetricsLog(join(directory, 'metrics.jsonl'))
  const needDirectory = (purpose: string): string => {
    if (directory === undefined) throw new InvalidArgumentError({ argument: 'config.runDirectory', value: undefined, message: `is needed ${purpose}` })
    return directory
  }
  let logChecked = false
  /** The newest checkpoint that loads; those that do not are renamed out of the way. */
  const loadNewest = async (runDirectory: string): Promise<LoadedTrainingCheckpoint | undefined> => {
    for (const { step, path } of (await listCheckpoints(runDirectory)).reverse()) {
      try {
        return await loadTrainingCheckpoint(path, { parameters: model.parameters(), optimizer })
      } catch (error) {
        if (!ParseError.isInstance(error)) throw error
        const aside = join(runDirectory, `broken-checkpoint-${step}-${Date.now()}`)
        await rename(path, aside)
        notify(`checkpoint-${step} cannot be read (${(error as Error).message}); set aside as ${aside}, resuming from the previous checkpoint if any`)
      }
    }
    return undefined
  }
  return {
    directory,
    async log(metrics) {
      if (metricsLog === undefined) return
      if (!logChecked) await metricsLog.truncateAfter(metrics.step - 1)
      logChecked = true
      await metricsLog.append(metrics)
    },
    async resume() {
      const runDirectory = needDirectory('to resume')
      const loaded = await loadNewest(runDirectory)
      if (loaded === undefined) return undefined
      const extra = (loaded.extra ?? {}) as { estimatorState?: unknown; history?: StepMetrics[] }
      if (extra.estimatorState !== undefined && extra.estimatorState !== null) estimator.setState?.(extra.estimatorState)
      if (reference !== undefined) {
        const referenceCheckpoint = await latestCheckpoint(join(runDirectory, 'reference'))
        if (referenceCheckpoint !== undefined) await loadTrainingCheckpoint(referenceCheckpoint, { parameters: reference.parameters() })
      }
      await metricsLog?.truncateAfter(loaded.step)
      return { step: loaded.step, random: loaded.random, history: extra.history ?? [] }
    },
    async checkpoint({ step, random, history }) {
      const runDirectory = needDirectory('to save checkpoints')
      if (reference !== undefined && (await latestCheckpoint(join(runDirectory, 'reference'))) === undefined) {
        await saveTrainingCheckpoint(join(runDirectory, 'reference'), { parameters: reference.parameters(), randomState: random.getState(), step: 0 })
      }
      const extra = { estimatorState: (estimator.getState?.() ?? null) as never, history: history as never }
      await saveTrainingCheckpoint(runDirectory, { parameters: model.parameters(), optimizer, randomState: random.getState(), step, extra }, { keepLast })
      return join(runDirectory, `checkpoint-${step}`)
    },
    async prepare() {
      if (directory !== undefined) await mkdir(directory, { recursive: true })
    },
  }
}
