export {
  collect,
  collectOptionsSchema,
  generationOptionsSchema,
  type CollectOptions,
  type CollectResult,
  type GenerationOptions,
  type PoliciesOption,
  type PolicyContext,
} from './collect.js'
export {
  runEpisodes,
  type EnvironmentSource,
  type EpisodeFailure,
  type EpisodeFailureStage,
  type EpisodePlan,
  type RunEpisodesOptions,
} from './episode-runner.js'
export { defaultPromptTemplate, historyTurn, renderPrompt, type PromptContext, type PromptFunction, type PromptTemplate } from './prompt-template.js'
export {
  gameSeedStride,
  randomLegalPlay,
  type RandomLegalPlay,
  type RandomLegalPlayExample,
  type RandomLegalPlayOptions,
} from './random-legal-play.js'
export { trajectoryToSamples, type TrajectorySampleOptions } from './trajectory-samples.js'
export { GenerationBatchError } from './generation-batch-error.js'
export { RemotePolicyError, type RemoteFailureKind } from './remote-policy-error.js'
export {
  createBatchingPolicy,
  batchingPolicyOptionsSchema,
  type BatchingPolicy,
  type BatchingPolicyOptions,
  type BatchingStats,
} from './batching-policy.js'
export {
  createOpenAICompatiblePolicy,
  openAICompatiblePolicyOptionsSchema,
  type OpenAICompatiblePolicyOptions,
} from './openai-compatible-policy.js'
export {
  allowedHostRule,
  serveOpenAICompatible,
  serveOptionsSchema,
  type OpenAICompatibleServer,
  type ServeOptions,
  type ServerStats,
} from './openai-compatible-server.js'
export { AsyncCollectorError } from './async-collector-error.js'
export { asyncCollectorOptionsSchema, type AsyncCollectorOptions } from './async-collector-options.js'
export { createAsyncCollector, type AsyncBatch, type AsyncCollector, type AsyncCollectorStats } from './async-collector.js'
export type { CreateRolloutWorker, RolloutWorkerContext, RolloutWorkerSetup } from './async-protocol.js'
export {
  isAdapterNotFound,
  loraAdapterServeOptionsSchema,
  type LoraAdapterLoader,
  type LoraAdapterLoadRequest,
  type LoraAdapterServeOptions,
} from './lora-adapters.js'
