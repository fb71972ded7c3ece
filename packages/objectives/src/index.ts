export {
  aggregateLoss,
  aggregateLossOptionsSchema,
  aggregationModes,
  aggregationModeSchema,
  type AggregateLossOptions,
  type AggregationMode,
} from './aggregate-loss.js'
export { readLossMetrics, type InputCheck, type LossMetricTensors, type ReadLossMetrics } from './loss-metrics.js'
export type { PolicyLoss, PolicyLossInputs, PolicyLossMetrics, PolicyLossMetricTensors, PolicyLossResult } from './policy-loss.js'
export {
  createPolicyLoss,
  policyLosses,
  policyLossNames,
  registerPolicyLoss,
  type PolicyLossFactory,
  type PolicyLossName,
  type PolicyLossOptionsArgument,
  type PolicyLossOptionsByName,
} from './create-policy-loss.js'
export { createPpoClipLoss, ppoClipOptionsSchema, type PpoClipOptions } from './ppo-clip-loss.js'
export { createGspoLoss, gspoOptionsSchema, type GspoOptions } from './gspo-loss.js'
export { createCispoLoss, cispoOptionsSchema, type CispoOptions } from './cispo-loss.js'
export { createPolicyGradientLoss, policyGradientOptionsSchema, type PolicyGradientOptions } from './policy-gradient-loss.js'
export { createDroLoss, droOptionsSchema, type DroOptions } from './dro-loss.js'
export { createGmpoLoss, gmpoOptionsSchema, type GmpoOptions } from './gmpo-loss.js'
export { createSapoLoss, sapoOptionsSchema, type SapoOptions } from './sapo-loss.js'
export { createDppoLoss, dppoOptionsSchema, type DppoDivergence, type DppoOptions } from './dppo-loss.js'
export {
  buildTruncatedPpoInputs,
  createTruncatedPpoLoss,
  truncatedPpoInputsOptionsSchema,
  truncatedPpoOptionsSchema,
  type TruncatedPpoInputs,
  type TruncatedPpoInputsOptions,
  type TruncatedPpoOptions,
  type TruncatedRollout,
} from './truncated-ppo.js'
export {
  exactKlEstimators,
  exactKlLoss,
  exactKlLossOptionsSchema,
  isExactKlEstimator,
  klEstimators,
  klEstimatorSchema,
  klLoss,
  klLossOptionsSchema,
  klPenalty,
  klTermEstimators,
  klTermEstimatorSchema,
  type ExactKlEstimator,
  type ExactKlLossOptions,
  type KlTermEstimator,
  type KlEstimator,
  type KlLossMetrics,
  type KlLossMetricTensors,
  type KlLossOptions,
} from './kl-penalty.js'
export {
  AdaptiveKlController,
  adaptiveKlControllerOptionsSchema,
  createKlController,
  FixedKlController,
  fixedKlControllerOptionsSchema,
  klControllerOptionsSchema,
  type AdaptiveKlControllerOptions,
  type FixedKlControllerOptions,
  type KlController,
  type KlControllerOptions,
} from './kl-controller.js'
export { entropyBonus, entropyBonusOptionsSchema, type EntropyBonusOptions } from './entropy-bonus.js'
export { valueLoss, valueLossOptionsSchema, type ValueLossInputs, type ValueLossOptions } from './value-loss.js'
export { sftLoss, sftLossOptionsSchema, type SftLossOptions } from './sft-loss.js'
export {
  createPreferenceLoss,
  dpoLossTypes,
  fDivergenceTypes,
  preferenceLossOptionsSchema,
  type DpoLossType,
  type FDivergenceType,
  type PreferenceLoss,
  type PreferenceLossInputs,
  type PreferenceLossMetrics,
  type PreferenceLossOptions,
  type PreferenceLossResult,
} from './preference-loss.js'
export { createSimpoLoss, simpoLossOptionsSchema, type SimpoLossInputs, type SimpoLossOptions } from './simpo-loss.js'
export { createOrpoLoss, orpoLossOptionsSchema, type OrpoLossInputs, type OrpoLossOptions } from './orpo-loss.js'
export { createKtoLoss, ktoLossOptionsSchema, type KtoLossInputs, type KtoLossOptions, type KtoLossResult } from './kto-loss.js'
export {
  bradleyTerryLossOptionsSchema,
  createBradleyTerryLoss,
  type BradleyTerryLossInputs,
  type BradleyTerryLossOptions,
} from './bradley-terry-loss.js'
export {
  alignDistilTeacher,
  alignDistilTeacherOptionsSchema,
  type AlignDistilTeacher,
  type AlignDistilTeacherInputs,
  type AlignDistilTeacherOptions,
} from './align-distil-teacher.js'
export {
  alignDistilLossOptionsSchema,
  createAlignDistilLoss,
  type AlignDistilLoss,
  type AlignDistilLossInputs,
  type AlignDistilLossMetrics,
  type AlignDistilLossMetricTensors,
  type AlignDistilLossOptions,
} from './align-distil-loss.js'
export {
  multipleImportanceSamplingOptionsSchema,
  multipleImportanceSamplingRatio,
  type MultipleImportanceSamplingOptions,
} from './multiple-importance-sampling.js'
export { createRlPlusLoss, rlPlusOptionsSchema, type RlPlusLoss, type RlPlusLossInputs, type RlPlusOptions } from './rl-plus-loss.js'
export {
  createTrajectoryBalanceLoss,
  logPartitionModes,
  trajectoryBalanceLoss,
  trajectoryBalanceOptionsSchema,
  type LogPartitionMode,
  type TrajectoryBalanceInputs,
  type TrajectoryBalanceMetrics,
  type TrajectoryBalanceMetricTensors,
  type TrajectoryBalanceOptions,
  type TrajectoryBalanceResult,
} from './trajectory-balance-loss.js'
export {
  createLogPartition,
  logPartitionOptionsSchema,
  logPartitionStateSchema,
  type LogPartition,
  type LogPartitionOptions,
  type LogPartitionState,
} from './log-partition.js'
