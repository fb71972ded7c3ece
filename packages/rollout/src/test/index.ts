// `@ludic/rollout/test`: a soak harness for OpenAI-compatible servers (concurrent good clients beside hostile ones,
// RSS, tensors and /health sampled as it goes). Outside this repository, pass `server` (how to start yours).
export {
  answer,
  badRequests,
  postStatus,
  runSoak,
  tinyModelServer,
  type BadRequest,
  type MemorySample,
  type ServerProcess,
  type SoakOptions,
  type SoakReport,
  type SoakServer,
} from './soak.js'
