/**
 * `@ludic/rollout/worker`: the plumbing for packages that start their own worker threads (the trainer's
 * rollout worker), apart from the user-facing API of the main entry (`createAsyncCollector` and the
 * `RolloutWorkerSetup` a worker module returns stay there).
 */
export { withoutSourceCondition } from './async-collector.js'
export {
  deserializeError,
  deserializeFailures,
  serializeError,
  serializeFailures,
  type SerializedBatch,
  type SerializedError,
  type SerializedFailure,
} from './async-protocol.js'
export { builtModulePath } from './built-module-path.js'
export { exportedFunction, importModule } from './import-module.js'
