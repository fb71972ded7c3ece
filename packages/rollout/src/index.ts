// The Node entry: the browser entry (browser.ts: what plays episodes and turns them into training data), and what
// needs Node: asynchronous collection in worker threads, the OpenAI-compatible server and remote policy.
export * from './browser.js'
export { RemotePolicyError, type RemoteFailureKind } from './remote-policy-error.js'
export { createOpenAICompatiblePolicy, openAICompatiblePolicyOptionsSchema, type OpenAICompatiblePolicyOptions } from './openai-compatible-policy.js'
export {
  allowedHostRule,
  serveOpenAICompatible,
  serveOptionsSchema,
  type OpenAICompatibleServer,
  type ServeOptions,
  type ServerStats,
} from './openai-compatible-server.js'
export { policyMetricNames, type PolicyMetricsSource, type PolicyWithMetrics } from './openai-server-metrics.js'
export { AsyncCollectorError } from './async-collector-error.js'
export { createAsyncCollector, type AsyncBatch, type AsyncCollector, type AsyncCollectorStats } from './async-collector.js'
export type { CreateRolloutWorker, RolloutWorkerContext, RolloutWorkerSetup, VersionedPolicy } from './async-protocol.js'
export {
  isAdapterNotFound,
  loraAdapterServeOptionsSchema,
  type LoraAdapterLoader,
  type LoraAdapterLoadRequest,
  type LoraAdapterServeOptions,
} from './lora-adapters.js'
