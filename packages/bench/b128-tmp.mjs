import { createRandom, deriveSeed } from '@ludic/core'
import { createModel, generate, GenerationEngine } from '@ludic/model'
import { initTensors } from '@ludic/tensors'
await initTensors({ backend: 'wasm', verbose: false })
const model = createModel('small', { vocabSize: 320, seed: 0 })
const size = Number(process.env.SIZE ?? 128)
const random = createRandom(1)
const prompts = Array.from({ length: size }, () => Int32Array.from({ length: 16 }, () => random.nextInt(320)))
for (let r = 0; r < 2; r++) {
  let t = performance.now()
  await generate(model, { inputIds: prompts, maxNewTokens: 32, temperature: 1, stopTokenIds: [], seed: 0 })
  const g = (performance.now() - t) / 1000
  const engine = new GenerationEngine(model, { maxRows: size, maxSequenceLength: 48, kvCacheBytes: 2 ** 30, threads: Number(process.env.THREADS ?? 1) })
  t = performance.now()
  await Promise.all(prompts.map((promptIds, i) => engine.submit({ promptIds, sampling: { temperature: 1, topK: 0, topP: 1, minP: 0 }, maxNewTokens: 32, stopTokenIds: new Set(), stopStrings: [], random: createRandom(deriveSeed(0, i)) })))
  const e = (performance.now() - t) / 1000
  const s = engine.stats()
  console.log(size, 'generate', g.toFixed(2), 'engine', e.toFixed(2), 'prefill', s.prefillSeconds.toFixed(2), 'decode', s.decodeSeconds.toFixed(2), 'steps', s.decodeSteps)
  engine.dispose()
}
