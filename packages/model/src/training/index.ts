export {
  adamWOptionsSchema,
  adamWStepOptionsSchema,
  createAdamW,
  type AdamW,
  type AdamWHyperparameters,
  type AdamWOptions,
  type AdamWState,
  type AdamWStepOptions,
} from './adamw.js'
export { clipGradientsByGlobalNorm, type ClippedGradients } from './clip-gradients-by-global-norm.js'
export { computeGradients } from './compute-gradients.js'
export {
  constantSchedule,
  constantScheduleOptionsSchema,
  warmupCosineSchedule,
  warmupCosineScheduleOptionsSchema,
  warmupLinearSchedule,
  warmupLinearScheduleOptionsSchema,
  type ConstantScheduleOptions,
  type LearningRateSchedule,
  type WarmupCosineScheduleOptions,
  type WarmupLinearScheduleOptions,
} from './learning-rate-schedules.js'
export { latestCheckpoint, listCheckpoints, type CheckpointEntry } from './list-checkpoints.js'
export { loadTrainingCheckpoint, type LoadedTrainingCheckpoint, type TrainingCheckpointTargets } from './load-training-checkpoint.js'
export { NonFiniteGradientError } from './non-finite-gradient-error.js'
export { matchesAnyPattern, type ParameterNamePattern } from './parameter-name-patterns.js'
export {
  saveTrainingCheckpoint,
  saveTrainingCheckpointOptionsSchema,
  type SaveTrainingCheckpointOptions,
  type TrainingCheckpointContents,
} from './save-training-checkpoint.js'
export { checkpointFileNames } from './training-checkpoint-format.js'
