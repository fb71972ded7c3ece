import './node-platform.js'

export { checkRlTrainerConfig, createRlTrainer, type RlRunOptions, type RlTrainer, type RlTrainerHooks } from './rl-trainer.js'
export type { RolloutBatch, RolloutSource, RolloutSourceContext } from './rollout-source.js'
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
export { cpoDefaultGroupSize, createCpoTrainer, type CpoTrainerConfig } from './cpo-trainer.js'
export {
  createTrainerSkeleton,
  runConfigFields,
  type TrainerControls,
  type TrainerParts,
  type TrainerRunOptions,
  type TrainerSkeleton,
  type TrainerUpdate,
} from './skeleton.js'
export { scoreRollout, type ScoredRollout } from './scored-rewards.js'
export {
  asyncRolloutConfigSchema,
  klConfigSchema,
  learnerPolicyId,
  rlBatchConfigSchema,
  rlTrainerConfigSchema,
  type AsyncRolloutConfig,
  type EvaluationContext,
  type EvaluationHook,
  type RlBatchConfig,
  type RlTrainerConfig,
} from './rl-config.js'
export {
  createSftTrainer,
  sftStep,
  sftTrainerConfigSchema,
  type SftExample,
  type SftStepMetrics,
  type SftTrainer,
  type SftTrainerConfig,
} from './sft-trainer.js'
export { warmUp, type WarmUpConfig, type WarmUpResult } from './warm-up.js'
export { optimizerConfigSchema, type OptimizerConfig } from './optimizer-config.js'
export { resolveSchedule, scheduleConfigSchema, type ScheduleConfig } from './schedule.js'
export { outcomeAdvantageBatch } from './outcome-rewards.js'
export {
  advantageBatchOf,
  buildExperience,
  rowsOf,
  withColumns,
  type Experience,
  type ExperienceOrigin,
  type TokenColumn,
} from './experience/experience.js'
export { criticConfigSchema, type CriticConfig } from './experience/critic.js'
export { responseLogprobs, type TokenSequence } from './sequences.js'
export { createMetricsLog, type MetricsLog, type StepMetrics, type UpdateStepMetrics } from './metrics-log.js'
export {
  maxTrajectoryLineBytes,
  trajectoriesFileName,
  trajectoryEpisodeRecordSchema,
  trajectoryFormat,
  trajectoryJudgementRecordSchema,
  trajectoryLogConfigSchema,
  trajectoryRecordSchema,
  trajectoryTurnRecordSchema,
  type TrajectoryEpisodeRecord,
  type TrajectoryJudgementRecord,
  type TrajectoryLogConfig,
  type TrajectoryRecord,
  type TrajectoryTurnRecord,
} from './trajectory-log.js'
export {
  createRunLoggers,
  loggerNames,
  plainConfig,
  redactSecrets,
  runConfigLoggersSchema,
  runLoggersSchema,
  type LoggerEntry,
  type LoggerName,
  type LoggerSpec,
  type RunLoggers,
  type RunLoggersOptions,
} from './loggers/run-loggers.js'
export { isRunLogger, type RunLoggerV1, type RunStartV1 } from './loggers/run-logger.js'
export { createJsonlLogger } from './loggers/jsonl-logger.js'
export { createTensorBoardLogger, type TensorBoardLoggerOptions } from './loggers/tensorboard-logger.js'
export { createWandbLogger, wandbLoggerConfigSchema, type WandbLoggerConfig, type WandbLoggerOptions } from './loggers/wandb-logger.js'
export { episodeTranscript } from './loggers/episode-transcript.js'
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
export {
  evaluateAgainst,
  evaluateAgainstOptionsSchema,
  wilsonInterval,
  type EvaluateAgainstOptions,
  type MatchFigures,
  type MatchResult,
} from './evaluation.js'
export { actionLogprobs, type ActionChoice } from './action-logprobs.js'
export type { CreateRlRolloutSetup, RlRolloutSetup } from './rollout-worker.js'
export {
  createPreferenceTrainer,
  preferenceLossConfigSchema,
  preferenceLossTypes,
  preferenceTrainerConfigSchema,
  type PairTrainer,
  type PreferenceEvaluation,
  type PreferenceLossConfig,
  type PreferenceLossType,
  type PreferenceRunOptions,
  type PreferenceStepMetrics,
  type PreferenceTrainer,
  type PreferenceTrainerConfig,
} from './preference-trainer.js'
export { readPreferencePairs } from './preference-file.js'
export {
  encodePreferencePair,
  truncatePreferencePair,
  type PreferenceEncodingOptions,
  type PreferencePairIds,
} from './preference-data.js'
export {
  characterArenaOptionsSchema,
  runCharacterArena,
  type ArenaEpisode,
  type ArenaFailure,
  type CharacterArenaComparison,
  type CharacterArenaOptions,
  type CharacterArenaProgress,
  type CharacterArenaResult,
} from './character-arena.js'
export {
  createRewardModelTrainer,
  rewardModelTrainerConfigSchema,
  type RewardModelEvaluation,
  type RewardModelRunOptions,
  type RewardModelStepMetrics,
  type RewardModelTrainer,
  type RewardModelTrainerConfig,
} from './reward-model-trainer.js'
export {
  alignDistilTrainerConfigSchema,
  contrastiveDpoConfigSchema,
  createAlignDistilTrainer,
  preferenceAccuracy,
  responseLogits,
  trainContrastiveDpoModels,
  type AlignDistilRunOptions,
  type AlignDistilStepMetrics,
  type AlignDistilTrainer,
  type AlignDistilTrainerConfig,
  type ContrastiveDpoConfig,
  type ContrastiveDpoModels,
  type PreferenceAccuracy,
} from './align-distil-trainer.js'
export {
  externalDemonstrationsConfigSchema,
  externalPolicyId,
  replayDemonstrations,
  type Demonstration,
  type DemonstrationBatch,
  type DemonstrationContext,
  type DemonstrationReplaySettings,
  type DemonstrationSource,
  type ExternalDemonstrationsConfig,
} from './external-demonstrations.js'
export {
  createFlowOfReasoningTrainer,
  flowOfReasoningTrainerConfigSchema,
  sampleStepwiseTrajectories,
  stepwiseForwardLogprobs,
  type FlowOfReasoningRunOptions,
  type FlowOfReasoningStepMetrics,
  type FlowOfReasoningTrainer,
  type FlowOfReasoningTrainerConfig,
  type StepwiseSamplingOptions,
} from './flow-of-reasoning-trainer.js'
export {
  createStepwiseEnvironments,
  type StepwiseEnvironmentOptions,
  type StepwiseEnvironments,
  type StepwiseEpisode,
  type StepwiseProblem,
  type StepwiseState,
} from './stepwise-environments.js'
export {
  createRewardReplayBuffer,
  rewardReplayBufferOptionsSchema,
  rewardReplayBufferStateSchema,
  type ReplayedTrajectory,
  type RewardReplayBuffer,
  type RewardReplayBufferOptions,
  type RewardReplayBufferState,
} from './reward-replay-buffer.js'
