/**
 * `@ludic/trainer` in a browser (the `browser` export condition): the trainers and their parts with the same names and
 * meanings as the Node entry, a run kept in memory (each step's metrics through `run`'s `onStep` or a `RunLoggerV1`
 * object). Node-only, and so only in the Node entry: run directories (`config.runDirectory`: checkpoints, resume,
 * `metrics.jsonl`, `trajectories.jsonl`), the file loggers (`jsonl` with a run directory, `tensorboard`, `wandb`),
 * collection in worker threads (`config.asyncRollout`, the disaggregated source), the terminal's progress bar
 * (`run({ progress })`), run config files (`loadRunConfig`), `readPreferencePairs` and LoRA adapters from files. Given
 * here, such an option is refused when the trainer is built (or `run` called), with an `InvalidArgumentError` naming it.
 */
export { checkRlTrainerConfig, createRlTrainer, type RlRunOptions, type RlTrainer, type RlTrainerHooks } from './rl-trainer.js'
export type { RolloutBatch, RolloutSource, RolloutSourceContext } from './rollout-source.js'
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
  opponentSeatsSchema,
  rlBatchConfigSchema,
  rlTrainerConfigSchema,
  type AsyncRolloutConfig,
  type EvaluationContext,
  type EvaluationHook,
  type RlBatchConfig,
  type RlTrainerConfig,
} from './rl-config.js'
export {
  defaultSnapshotPoolBytes,
  pfspWeightings,
  snapshotPoolConfigSchema,
  SnapshotPool,
  snapshotSamplings,
  type PfspWeighting,
  type SnapshotPoolConfig,
  type SnapshotPoolState,
  type SnapshotSampling,
} from './league/snapshot-pool.js'
export { PoolRatings, type LeagueGame } from './league/pool-ratings.js'
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
export type { StepMetrics, UpdateStepMetrics } from './metrics-log.js'
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
export { episodeTranscript } from './loggers/episode-transcript.js'
export {
  evaluateAgainst,
  evaluateAgainstOptionsSchema,
  wilsonInterval,
  type EvaluateAgainstOptions,
  type MatchFigures,
  type MatchResult,
} from './evaluation.js'
export { actionLogprobs, type ActionChoice } from './action-logprobs.js'
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
