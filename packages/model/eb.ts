import '@tensorflow/tfjs-node'
import * as tf from '@tensorflow/tfjs-core'
import { createRandom, deriveSeed } from '@ludic/core'
import { createModel, GenerationEngine } from './src/index.js'
import { setPlatform } from './src/platform.js'
if (process.env.NOHELP) setPlatform({ samplingHelper: undefined })
const backend = process.argv[2] ?? 'tensorflow'
await tf.setBackend(backend === 'wasm' ? 'cpu' : backend)
const preset = (process.argv[3] ?? 'small') as 'small'
const batch = Number(process.argv[4] ?? 128)
const model = createModel(preset, { vocabSize: 4096, seed: 0 })
const prompts = Array.from({ length: batch }, (_, r) => Int32Array.from({ length: 16 }, (_, i) => (r * 31 + i * 7) % 4096))
async function once() {
  const engine = new GenerationEngine(model, { maxRows: batch, maxSequenceLength: 48, kvCacheBytes: 2 ** 31, products: (process.argv[5] ?? "host") as "host", prefillChunkTokens: Number(process.argv[6] ?? 256) })
  const t = performance.now()
  const out = await Promise.all(prompts.map((promptIds, index) => engine.submit({ promptIds, sampling: { temperature: 1, topK: 0, topP: 1, minP: 0 }, maxNewTokens: 32, stopTokenIds: new Set(), stopStrings: [], random: createRandom(deriveSeed(0, index)) })))
  const ms = performance.now() - t
  engine.dispose()
  return { ms, first: out[0]!.tokenIds.slice(0, 8) }
}
await once()
for (let i = 0; i < 3; i++) { const r = await once(); console.log(backend, preset, batch, r.ms.toFixed(0), 'ms', ((batch * 32) / r.ms * 1000).toFixed(0), 'tok/s', Array.from(r.first).join(',')) }
