import { z } from 'zod'
import { loggingConfigFields } from './loggers/run-loggers.js'

/**
 * The run fields every trainer's config has, with the same names and defaults: where the run's files go, where its
 * metrics go, how often it checkpoints and whether it continues from its latest checkpoint.
 */
export const runConfigFields = {
  /** Where `metrics.jsonl` and `checkpoint-<step>/` go (and the trainer's own files). Default: none (nothing written). */
  runDirectory: z.string().min(1).optional(),
  /** Where each step's metrics go (`jsonl`, `tensorboard`, `wandb`, or a `RunLoggerV1`; see `runLoggersSchema`). Default `['jsonl']`. */
  loggers: loggingConfigFields.loggers,
  /** The configuration the loggers record. Default: this config's plain settings. */
  loggedConfig: loggingConfigFields.loggedConfig,
  /** Save a checkpoint every k steps (and after the last step of `run`). 0: never. Default 0. */
  checkpointEvery: z.number().int().min(0).default(0),
  /** Checkpoints kept. Default 2. */
  keepLast: z.number().int().positive().default(2),
  /** Continue from the latest checkpoint in `runDirectory`, if any, on the first `step`/`run`. Default false. */
  resume: z.boolean().default(false),
}
