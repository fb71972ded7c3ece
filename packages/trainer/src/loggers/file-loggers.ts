import { LudicError } from '@ludic/core'
import { isAbsolute } from 'node:path'
import { createJsonlLogger } from './jsonl-logger.js'
import type { RunLoggerV1 } from './run-logger.js'
import type { LoggerSpec, RunLoggersOptions } from './run-loggers.js'
import { createTensorBoardLogger } from './tensorboard-logger.js'
import { createWandbLogger, resolveWandbSettings, wandbOnlineProblem } from './wandb-logger.js'

/**
 * One of Ludic's loggers that write files or need Node (`metrics.jsonl`, TensorBoard's event files, W&B), made from its
 * spec: the Node entry's (`node-platform.ts`). A `LudicError` when it cannot work (`createRunLoggers` names the entry).
 */
export function createFileLogger(spec: LoggerSpec, options: RunLoggersOptions): RunLoggerV1 {
  const needDirectory = (directory: string, what: string) => {
    if (options.directory === undefined && !isAbsolute(directory))
      throw new LudicError(`needs config.runDirectory: ${what} go under it (or give an absolute directory)`)
  }
  switch (spec.kind) {
    case 'jsonl':
      return createJsonlLogger()
    case 'tensorboard':
      needDirectory(spec.directory ?? 'tensorboard', "TensorBoard's event files")
      return createTensorBoardLogger(spec.directory === undefined ? {} : { directory: spec.directory })
    case 'wandb': {
      const { kind: _, ...config } = spec
      const environment = options.environment ?? process.env
      const settings = resolveWandbSettings(config, environment)
      if (settings.mode === 'offline') needDirectory(settings.directory, "W&B's offline run files")
      else {
        const problem = wandbOnlineProblem(options.resolveWandbSdk === undefined ? {} : { resolveSdk: options.resolveWandbSdk }, environment)
        if (problem !== undefined) throw new LudicError(problem)
      }
      return createWandbLogger({ ...config, environment })
    }
  }
}
