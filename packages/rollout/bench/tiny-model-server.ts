// A server process for soak and fault tests: a tiny local model (random weights, byte tokenizer) on the
// WebAssembly backend behind serveOpenAICompatible, with its tensor count in GET /stats. Prints one JSON line,
// { "url": … }, once listening; exits 1 after a fatal policy fault (as `ludic serve` does), 0 on SIGTERM.
//   node --import tsx --conditions=@ludic/source packages/rollout/bench/tiny-model-server.ts [--api-key K] [--port P] …
import { parseArgs } from 'node:util'
import { createByteTokenizer } from '@ludic/core/test'
import { createLocalPolicy, createModel } from '@ludic/model'
import { serveOpenAICompatible } from '@ludic/rollout'
import { initTensors } from '@ludic/tensors'
import * as tf from '@tensorflow/tfjs-core'

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    'api-key': { type: 'string' },
    backend: { type: 'string', default: 'wasm' },
    'headers-timeout-ms': { type: 'string', default: '10000' },
    'request-timeout-ms': { type: 'string', default: '30000' },
    'generation-timeout-ms': { type: 'string', default: '300000' },
  },
})

await initTensors({ backend: values.backend as 'wasm', verbose: false })
const model = createModel('tiny', { vocabSize: 259, seed: 1 })
const tokenizer = createByteTokenizer()
const policy = createLocalPolicy({ model, tokenizer, maxBatch: 16, id: 'tiny' })
const server = await serveOpenAICompatible(policy, {
  port: Number(values.port),
  ...(values['api-key'] === undefined ? {} : { apiKey: values['api-key'] }),
  tokenizer,
  maxContextTokens: model.maxContextTokens,
  headersTimeoutMs: Number(values['headers-timeout-ms']),
  requestTimeoutMs: Number(values['request-timeout-ms']),
  generationTimeoutMs: Number(values['generation-timeout-ms']),
  batching: { windowMs: 5, maxBatchSize: 16 },
  extraStats: () => ({ tensors: tf.memory().numTensors }),
  onFatalError: (error) => {
    console.error('fatal policy error; exiting for a supervisor to restart the server:', error)
    void server.close().then(() => process.exit(1))
  },
})
console.log(JSON.stringify({ url: server.url, pid: process.pid }))
process.once('SIGTERM', () => {
  void server.close().then(() => {
    model.dispose()
    process.exit(0)
  })
})
