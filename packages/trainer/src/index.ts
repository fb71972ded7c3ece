// The Node entry: the browser entry (browser.ts: every trainer, kept in memory), Node's parts registered first
// (node-platform.ts: run directories, file loggers, worker-thread collection, the terminal's progress bar), and what
// needs Node outright: disaggregated rollouts, LoRA adapter publishing, run config files, metrics files.
import './node-platform.js'
export * from './browser.js'
export {
  createDisaggregatedRolloutSource,
  disaggregatedRolloutOptionsSchema,
  type DisaggregatedRolloutOptions,
  type DisaggregatedRolloutSource,
  type DisaggregatedRolloutStats,
} from './disaggregated-rollout.js'
export {
  createLoraAdapterPublisher,
  LoraPublishError,
  loraAdapterPublisherOptionsSchema,
  type LoraAdapterPublisher,
  type LoraAdapterPublisherOptions,
  type LoraPublishFailure,
  type SavedLoraAdapter,
} from './lora-adapter-publisher.js'
export { refuseAnotherRun, ResumeError } from './run-state.js'
export { createLocalLoraAdapters, localLoraAdaptersOptionsSchema, type LocalLoraAdapters, type LocalLoraAdaptersOptions } from './local-lora-adapters.js'
export { createMetricsLog, type MetricsLog } from './metrics-log.js'
export { createJsonlLogger } from './loggers/jsonl-logger.js'
export { createTensorBoardLogger, type TensorBoardLoggerOptions } from './loggers/tensorboard-logger.js'
export { createWandbLogger, wandbLoggerConfigSchema, type WandbLoggerConfig, type WandbLoggerOptions } from './loggers/wandb-logger.js'
export {
  cpoRunConfigFileSchema,
  importPlugins,
  loadRunConfig,
  loadTrainingRun,
  preferenceRunConfigFileSchema,
  readRunConfigFile,
  rewardModelRunConfigFileSchema,
  flowOfReasoningRunConfigFileSchema,
  alignDistilRunConfigFileSchema,
  runConfigFileLimitsSchema,
  runConfigFileSchema,
  runKinds,
  sftRunConfigFileSchema,
  type EnvironmentRegistry,
  type ImportPluginsOptions,
  type LoadRunConfigOptions,
  type RunConfigFileLimits,
  type OpponentRegistry,
  type PreferenceRun,
  type RewardModelRun,
  type FlowOfReasoningRun,
  type AlignDistilRun,
  type RlRun,
  type RunConfigFile,
  type RunKind,
  type SftRun,
  type TokenizerFiles,
  type TrainingRun,
} from './run-config.js'
export type { CreateRlRolloutSetup, RlRolloutSetup } from './rollout-worker.js'
export { readPreferencePairs } from './preference-file.js'
