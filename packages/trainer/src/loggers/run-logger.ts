import type { StepMetrics } from '../metrics-log.js'

/**
 * What a logger is told when a run starts (or continues) writing: once per process before its first step's
 * metrics, again after `close` if the trainer goes on.
 */
export interface RunStartV1 {
  /** The run directory (absolute or as given); undefined when the trainer writes no files. */
  directory: string | undefined
  /** The training loop: `self-play`, `rl`, `cpo`, `flow-of-reasoning`, `align-distil`, `preference`, `reward-model` or `sft`. */
  trainer: string
  /** The run's configuration as plain data (numbers, strings, booleans, arrays and objects of them). */
  config: Readonly<Record<string, unknown>>
  /**
   * Set when the run continues from the checkpoint of this step: the steps after it are logged (again), and what a
   * logger holds of them from before must give way to the new ones.
   */
  resumedAtStep?: number
  /** The metrics of the steps up to `resumedAtStep`, as the checkpoint saved them (a resumed run only). */
  history?: readonly StepMetrics[]
  /** Tells the user what the logger did that they should know (a log rebuilt); the trainer's `notify`. */
  notify: (message: string) => void
}

/**
 * A destination of a run's metrics (`metrics.jsonl`, TensorBoard, Weights & Biases, or a user's own): the trainers
 * call it in order, `start`, then `log` once per step (steps increasing) with `text` between, then `close`.
 * A logger's failure (a full disk) stops the run, as a failure to write `metrics.jsonl` always has.
 */
export interface RunLoggerV1 {
  readonly specificationVersion: 'v1'
  /** Names the logger in errors and messages (`tensorboard`). */
  readonly name: string
  start(run: RunStartV1): void | Promise<void>
  /** One step's metrics. A value that is not finite (NaN, ±Infinity) is the logger's to record or leave out (see each). */
  log(metrics: StepMetrics): void | Promise<void>
  /** A text at a step (tag `episodes/sample`: a transcript of one of the step's episodes; `config`: the run's configuration). */
  text(tag: string, step: number, text: string): void | Promise<void>
  /** Writes what is pending and lets go of files and connections. */
  close(): void | Promise<void>
}

export const isRunLogger = (value: unknown): value is RunLoggerV1 =>
  typeof value === 'object' &&
  value !== null &&
  (value as RunLoggerV1).specificationVersion === 'v1' &&
  typeof (value as RunLoggerV1).name === 'string' &&
  (['start', 'log', 'text', 'close'] as const).every((method) => typeof (value as RunLoggerV1)[method] === 'function')
