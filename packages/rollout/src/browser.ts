/**
 * `@ludic/rollout` in a browser (the `browser` export condition): what plays episodes and turns them into training
 * data, with the same names and meanings as the Node entry. Node-only, and so only in the Node entry: asynchronous
 * collection in worker threads (`createAsyncCollector`, `@ludic/rollout/worker`), the OpenAI-compatible server
 * (sockets) and the OpenAI-compatible remote policy.
 */
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
export { randomOpeningsOptionsSchema, withRandomOpenings, type RandomOpeningsOptions } from './random-openings.js'
export { trajectoryToSamples, type TrajectorySampleOptions } from './trajectory-samples.js'
export { GenerationBatchError } from './generation-batch-error.js'
export { asyncCollectorOptionsSchema, type AsyncCollectorOptions } from './async-collector-options.js'
export {
  createBatchingPolicy,
  batchingPolicyOptionsSchema,
  type BatchingPolicy,
  type BatchingPolicyOptions,
  type BatchingStats,
} from './batching-policy.js'
