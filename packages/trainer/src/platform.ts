import { InvalidArgumentError } from '@ludic/core'
import type { CausalLanguageModel } from '@ludic/model'
import type { ProgressBar, ProgressBarOptions } from '@ludic/report'
import type { LoggerSpec, RunLoggersOptions } from './loggers/run-loggers.js'
import type { RunLoggerV1 } from './loggers/run-logger.js'
import type { RolloutSource, RolloutSourceContext } from './rollout-source.js'
import type { RunState, RunStateOptions } from './run-state.js'
import type { SnapshotFiles } from './league/snapshot-files.js'

/**
 * The trainers' Node-only parts: files, worker threads, the terminal. The Node entry (`index.ts`) registers them
 * (`node-platform.ts`); the browser entry (`browser.ts`) does not, so a browser-safe module reaches them only through
 * `nodePlatform`, which refuses the option that needs them, by name, when this is the browser entry.
 */
export interface TrainerPlatform {
  /** A run directory's state: `checkpoint-<step>/`, the KL reference, `trajectories.jsonl` (`config.runDirectory`). */
  createRunDirectoryState(options: RunStateOptions & { directory: string }): RunState
  /** Refuses a fresh run into a directory that holds another run's checkpoints (`refuseAnotherRun`). */
  refuseAnotherRun(directory: string): void
  /** A logger that writes files or needs Node (`metrics.jsonl` in a run directory, TensorBoard, W&B). */
  createFileLogger(spec: LoggerSpec, options: RunLoggersOptions): RunLoggerV1
  /** Collection in worker threads (`config.asyncRollout`). */
  createAsyncRolloutSource(context: RolloutSourceContext): RolloutSource
  /** A progress bar on a terminal (`run({ progress })`). */
  createProgressBar(total: number, options: ProgressBarOptions): ProgressBar
  /** The league's snapshot files under `<runDirectory>/league/` (`opponents` with a snapshot pool and a run directory). */
  snapshotFiles(runDirectory: string): SnapshotFiles
  /** Saves a model's weights and config as files in `<runDirectory>/model` (the reward model trainer's, at the end of `run`). */
  saveRunModel(model: CausalLanguageModel, runDirectory: string): Promise<void>
}

let registered: TrainerPlatform | undefined

/**
 * Registers the Node-only parts (the Node entry does, on import); returns what was registered before. `undefined`
 * takes them away again, as in the browser entry (tests of the browser entry's refusals).
 */
export function setTrainerPlatform(platform: TrainerPlatform | undefined): TrainerPlatform | undefined {
  const previous = registered
  registered = platform
  return previous
}

/** What the refusals say: the option needs the Node entry. */
export const nodeEntryNeeded =
  "needs the Node entry of @ludic/trainer (files, worker threads, a terminal): the browser entry keeps a run in memory (metrics through run's onStep or a RunLoggerV1 object)"

/**
 * The Node-only parts, for `argument` (an option whose `value` needs them). In the browser entry (nothing registered)
 * an `InvalidArgumentError` naming the option and saying it needs the Node entry.
 */
export function nodePlatform(argument: string, value: unknown): TrainerPlatform {
  if (registered === undefined) throw new InvalidArgumentError({ argument, value, message: nodeEntryNeeded })
  return registered
}
