// The browser entry (the `browser` export condition): everything but what needs Node's file system — loadModel and
// saveModel (modelFiles and loadModelFromFiles are their in-memory counterparts), LoRA adapter files and training
// checkpoints. Node's parts are not registered (see platform.ts): the host decoder runs on the calling thread, and the
// default parameter budget is browserParameterBytes.

// Configuration
export {
  modelConfigSchema,
  ropeScalingSchema,
  supportedArchitectures,
  supportedRopeScalingTypes,
  type Architecture,
  type ModelConfig,
  type RopeScaling,
} from './config/model-config.js'
export { parseHuggingFaceConfig, supportedHuggingFaceClasses, toHuggingFaceConfig } from './config/hugging-face-config.js'
export { presetConfig, presetNames, type PresetName } from './config/presets.js'

// The model
export { CausalLanguageModel, forwardOptionsSchema, type ForwardOptions, type LinearAdapter } from './model/causal-language-model.js'
export { createModel, createModelOptionsSchema, resolveConfig, type CreateModelOptions, type ModelSpecification } from './model/create-model.js'
export { KeyValueCache } from './model/key-value-cache.js'
export { ContextLengthError } from './model/context-length.js'
export type { IntegerMatrix } from './model/model-inputs.js'
export { architectureOf, type ArchitectureDefinition, type LayerParts, type LinearPart, type NormPart } from './model/architecture.js'
export { parameterSpecs, type ParameterInit, type ParameterSpec } from './model/parameter-shapes.js'
export { browserParameterBytes, countParameters, defaultMaxParameterBytes, type ParameterCount } from './model/parameter-budget.js'
export { matchesParameterNamePattern, parameterNamePatternSchema, type ParameterNamePattern } from './parameter-name-pattern.js'

// Checkpoints
export { CheckpointMismatchError, type MisshapedTensor } from './checkpoint/checkpoint-mismatch-error.js'
export {
  loadModelFromFiles,
  loadModelFromFilesOptionsSchema,
  modelFiles,
  modelFilesOptionsSchema,
  type LoadModelFromFilesOptions,
  type ModelFiles,
  type ModelFilesInput,
  type ModelFilesOptions,
} from './checkpoint/model-files.js'

// Generation
export {
  generate,
  modelGenerateOptionsSchema,
  type DecodePath,
  type DecodeThreads,
  type GeneratedSequence,
  type ModelGenerateOptions,
} from './generation/generate.js'
export {
  createGenerationEngine,
  GenerationEngine,
  generationEngineOptionsSchema,
  kvPageBytes,
  type EngineSequence,
  type EngineStats,
  type EngineSubmitControls,
  type GenerationEngineOptions,
} from './generation/engine.js'
export type { GenerationRow } from './generation/generate.js'
export { sampleToken, type SampledToken, type SamplingParameters } from './generation/sampling.js'

// Training support: log-probabilities, heads, LoRA
export {
  sequenceLogprobs,
  sequenceLogprobsOptionsSchema,
  type PaddedSequences,
  type RaggedSequences,
  type SequenceLogprobs,
  type SequenceLogprobsOptions,
} from './sequence-logprobs.js'
export { sequenceValues, sequenceValuesOptionsSchema, type SequenceValues, type SequenceValuesOptions } from './sequence-values.js'
export {
  createRewardHead,
  createValueHead,
  scalarHeadOptionsSchema,
  scoreWeightName,
  type RewardHead,
  type ScalarHeadOptions,
  type ValueHead,
} from './heads/scalar-heads.js'
export { createCriticModel, type CriticModel, type CriticModelOptions } from './heads/critic-model.js'
export {
  applyLora,
  attachedLoraAdapters,
  attachLora,
  loraOptionsSchema,
  type LoraAdapters,
  type LoraConfig,
  type LoraOptions,
  type LoraPlan,
} from './lora/apply-lora.js'

// Policy
export { checkVocabularyFits } from './policy/check-vocabulary-fits.js'
export { createLocalPolicy, localPolicyOptionsSchema, type LocalPolicy, type LocalPolicyOptions } from './policy/create-local-policy.js'
export { createPromptEncoder, type PromptEncoderOptions } from './policy/prompt-encoder.js'

// Optimizer, gradient clipping, schedules, training checkpoints (src/training)
export {
  adamWOptionsSchema,
  adamWStepOptionsSchema,
  createAdamW,
  type AdamW,
  type AdamWHyperparameters,
  type AdamWOptions,
  type AdamWState,
  type AdamWStepOptions,
} from './training/adamw.js'
export { clipGradientsByGlobalNorm, type ClippedGradients } from './training/clip-gradients-by-global-norm.js'
export { computeGradients } from './training/compute-gradients.js'
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
} from './training/learning-rate-schedules.js'
export { NonFiniteGradientError } from './training/non-finite-gradient-error.js'
