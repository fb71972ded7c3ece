import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError, ParseError } from '@ludic/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadModel } from '../checkpoint/load-model.js'
import { saveModel } from '../checkpoint/save-model.js'
import { initTestBackend } from '../test/init-test-backend.js'
import { tensorAllocations } from '../test/tensor-allocations.js'
import { createModel, resolveConfig } from './create-model.js'
import { countParameters, defaultMaxParameterBytes } from './parameter-budget.js'
import { parameterSpecs } from './parameter-shapes.js'

beforeAll(initTestBackend)

let directory: string
beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'ludic-model-budget-'))
  const model = createModel('tiny', { vocabSize: 64, seed: 1, overrides: { hiddenSize: 16, intermediateSize: 32 } })
  await saveModel(model, directory)
  model.dispose()
})
afterAll(async () => {
  await rm(directory, { recursive: true, force: true, maxRetries: 5 })
})

/** The saved tiny checkpoint with config.json fields replaced. */
async function withConfig(fields: Record<string, unknown>): Promise<string> {
  const folder = await mkdtemp(join(directory, 'variant-'))
  const config = JSON.parse(await readFile(join(directory, 'config.json'), 'utf8')) as Record<string, unknown>
  await writeFile(join(folder, 'config.json'), JSON.stringify({ ...config, ...fields }))
  await writeFile(join(folder, 'model.safetensors'), await readFile(join(directory, 'model.safetensors')))
  return folder
}

describe('the parameter budget', () => {
  it('countParameters is the sum of parameterSpecs for every architecture and switch', () => {
    const configs = [
      resolveConfig('tiny', 300),
      resolveConfig('tiny', 300, { tieWordEmbeddings: false, attentionBias: true, attentionOutputBias: true, mlpBias: true, numKeyValueHeads: 2 }),
      resolveConfig('tiny', 300, { architecture: 'qwen3', queryKeyNorm: true, attentionBias: true, headDim: 48 }),
      resolveConfig({ model_type: 'gpt2', vocab_size: 50, n_embd: 16, n_layer: 3, n_head: 2, n_positions: 20 }),
      resolveConfig({ model_type: 'gpt2', vocab_size: 50, n_embd: 16, n_inner: 24, n_layer: 1, n_head: 2, tie_word_embeddings: false }),
    ]
    for (const config of configs) {
      const listed = parameterSpecs(config).reduce((total, spec) => total + spec.shape.reduce((product, size) => product * size, 1), 0)
      expect(countParameters(config).total).toBe(listed)
    }
  })

  it('loadModel refuses a config.json with absurd sizes before reading weights: a ParseError naming the field', async () => {
    const before = tf.memory().numTensors
    for (const [fields, path] of [
      [{ num_hidden_layers: 1e7 }, 'num_hidden_layers'], // used to kill the process
      [{ vocab_size: 1e12 }, 'vocab_size'], // used to be a raw RangeError
      [{ intermediate_size: 1e8 }, 'intermediate_size'], // one layer alone is too large
    ] as const) {
      // The weights file is not a safetensors file at all: reading it first would fail on it, not on the config.
      const folder = await withConfig(fields)
      await writeFile(join(folder, 'model.safetensors'), 'not a safetensors file')
      const { allocations, error } = await tensorAllocations(() => loadModel(folder))
      expect(ParseError.isInstance(error)).toBe(true)
      expect((error as ParseError).path).toEqual([path])
      expect((error as Error).message).toMatch(/implies .* parameters, .* as float32 .* more than maxParameterBytes .* pass a larger maxParameterBytes/)
      expect(allocations).toBe(0)
    }
    // vocab 4e7 (16 GB here) spent most of a minute and gigabytes before failing: a budget refuses it at once.
    await expect(loadModel(await withConfig({ vocab_size: 4e7 }), { maxParameterBytes: 2 ** 30 })).rejects.toThrow(/vocab_size.*1\.07 GB/)
    expect(tf.memory().numTensors).toBe(before)
    const model = await loadModel(directory, { maxParameterBytes: 1e6 }) // the tiny model: ~100 kB
    model.dispose()
  })

  it('createModel refuses presets and configurations past the budget: an InvalidArgumentError naming the option', () => {
    const before = tf.memory().numTensors
    expect(() => createModel('tiny', { vocabSize: 1e12 })).toThrow(InvalidArgumentError)
    expect(() => createModel('tiny', { vocabSize: 1e12 })).toThrow(/options\.vocabSize/)
    expect(() => createModel('tiny', { vocabSize: 259, overrides: { numHiddenLayers: 1e7 } })).toThrow(/options\.overrides\.numHiddenLayers/)
    expect(() => createModel('tiny', { vocabSize: 4e7, maxParameterBytes: 2 ** 30 })).toThrow(/options\.vocabSize.*20\.5 GB as float32/)
    expect(() => createModel({ model_type: 'gpt2', n_layer: 1e7 })).toThrow(/specification\.n_layer/)
    expect(() => createModel('base', { vocabSize: 259, maxParameterBytes: 1e6 })).toThrow(/Invalid argument 'specification'/)
    expect(tf.memory().numTensors).toBe(before)
  })

  it('defaults to half of the memory, at most 3 GiB on WebAssembly', () => {
    const budget = defaultMaxParameterBytes()
    expect(budget).toBeGreaterThan(0)
    if (tf.getBackend() === 'wasm') expect(budget).toBeLessThanOrEqual(3 * 2 ** 30)
  })
})
