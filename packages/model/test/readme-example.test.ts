import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { initTensors } from '@ludic/tensors'
import { expect, it } from 'vitest'
import { createModel, generate, loadModel, saveModel } from '../src/index.js'
import { fixturesDirectory } from './reference-fixtures.js'

it('runs the README example (on a fixture checkpoint)', async () => {
  const out = await mkdtemp(join(tmpdir(), 'ludic-readme-'))
  await initTensors({ backend: 'wasm', verbose: false })
  const model = createModel('tiny', { vocabSize: 259, seed: 1 }) // d=128, 2 layers, 4 heads
  const [sample] = await generate(model, { inputIds: [[1, 2, 3]], maxNewTokens: 8, temperature: 0.8, seed: 7 })
  expect(sample!.tokenIds).toHaveLength(8)
  expect(sample!.logprobs).toHaveLength(8)
  expect(sample!.finishReason).toBe('length')
  const smol = await loadModel(join(fixturesDirectory, 'llama-gqa-tied')) // config.json + model.safetensors (or shards)
  const logits = smol.forward([[1, 33, 14]]) // [batch, time, vocab]
  expect(logits.shape).toEqual([1, 3, 64])
  await saveModel(smol, join(out, 'smol'), { dtype: 'bfloat16' })
  logits.dispose()
  smol.dispose()
  model.dispose()
  await rm(out, { recursive: true, force: true, maxRetries: 5 })
})
