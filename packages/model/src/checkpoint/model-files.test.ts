import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError, ParseError } from '@ludic/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { CausalLanguageModel } from '../model/causal-language-model.js'
import { createModel } from '../model/create-model.js'
import { initTestBackend } from '../test/init-test-backend.js'
import { CheckpointMismatchError } from './checkpoint-mismatch-error.js'
import { loadModel } from './load-model.js'
import { loadModelFromFiles, modelFiles } from './model-files.js'
import { saveModel } from './save-model.js'

beforeAll(initTestBackend)

let directory: string
beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'ludic-model-files-'))
})
afterAll(async () => {
  await rm(directory, { recursive: true, force: true, maxRetries: 5 })
})

const smallQwen3 = {
  model_type: 'qwen3',
  vocab_size: 40,
  hidden_size: 16,
  intermediate_size: 24,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  head_dim: 8,
  tie_word_embeddings: false,
}
const ids = [
  [1, 5, 9, 30],
  [2, 7, 11, 39],
]

function logits(model: CausalLanguageModel): number[] {
  const output = model.forward(ids)
  const values = Array.from(output.dataSync())
  output.dispose()
  return values
}

describe('modelFiles / loadModelFromFiles', () => {
  it("gives saveModel's files byte for byte; written to a folder, loadModel loads them with the same logits", async () => {
    const model = createModel(smallQwen3, { seed: 4 })
    for (const dtype of ['float32', 'bfloat16'] as const) {
      const files = await modelFiles(model, { dtype })
      expect(Object.keys(files).sort()).toEqual(['config.json', 'generation_config.json', 'model.safetensors'])
      const saved = join(directory, `saved-${dtype}`)
      await saveModel(model, saved, { dtype })
      for (const [name, contents] of Object.entries(files)) {
        const onDisk = await readFile(join(saved, name))
        expect(Buffer.from(typeof contents === 'string' ? new TextEncoder().encode(contents) : contents).equals(onDisk), name).toBe(true)
      }
      const written = join(directory, `written-${dtype}`)
      await rm(written, { recursive: true, force: true })
      await mkdir(written, { recursive: true })
      for (const [name, contents] of Object.entries(files)) await writeFile(join(written, name), contents)
      const fromDisk = await loadModel(written)
      const fromSaved = await loadModel(saved)
      expect(logits(fromDisk)).toEqual(logits(fromSaved))
      if (dtype === 'float32') expect(logits(fromDisk)).toEqual(logits(model))
      fromDisk.dispose()
      fromSaved.dispose()
    }
    model.dispose()
  })

  it("loads a saveModel folder's files read as bytes (Uint8Array or ArrayBuffer) with the same logits", async () => {
    const model = createModel('tiny', { vocabSize: 48, seed: 5, overrides: { numHiddenLayers: 1 } })
    const saved = join(directory, 'tiny')
    await saveModel(model, saved)
    const configBytes = await readFile(join(saved, 'config.json'))
    const weights = await readFile(join(saved, 'model.safetensors'))
    const fromText = await loadModelFromFiles({ 'config.json': configBytes.toString('utf8'), 'model.safetensors': new Uint8Array(weights) })
    const arrayBuffer = weights.buffer.slice(weights.byteOffset, weights.byteOffset + weights.byteLength) as ArrayBuffer
    const fromBuffers = await loadModelFromFiles({ 'config.json': new Uint8Array(configBytes), 'model.safetensors': arrayBuffer }, { maxContextTokens: 16 })
    const fromNode = await loadModel(saved)
    expect(logits(fromText)).toEqual(logits(fromNode))
    expect(logits(fromBuffers)).toEqual(logits(model))
    expect(fromBuffers.maxContextTokens).toBe(16)
    for (const loaded of [fromText, fromBuffers, fromNode]) loaded.dispose()
    model.dispose()
  })

  it('refuses bad input with typed errors naming the file, before building anything', async () => {
    const model = createModel('tiny', { vocabSize: 32, seed: 6, overrides: { numHiddenLayers: 1 } })
    const files = await modelFiles(model)
    const other = await modelFiles(createModel('tiny', { vocabSize: 40, seed: 6, overrides: { numHiddenLayers: 1 } }))
    const numTensors = tf.memory().numTensors
    const rejects = (input: unknown, options?: unknown) => loadModelFromFiles(input as Parameters<typeof loadModelFromFiles>[0], options as never)
    await expect(rejects(null)).rejects.toThrow(InvalidArgumentError)
    await expect(rejects('model-folder')).rejects.toThrow(/files/)
    await expect(rejects({ 'model.safetensors': files['model.safetensors'] })).rejects.toThrow(/config\.json.*is missing/)
    await expect(rejects({ 'config.json': files['config.json'] })).rejects.toThrow(/model\.safetensors.*is missing/)
    await expect(rejects({ ...files, 'model.safetensors.index.json': '{}' })).rejects.toThrow(/sharded checkpoint needs loadModel/)
    await expect(rejects({ ...files, 'model.safetensors': [1, 2, 3] })).rejects.toThrow(InvalidArgumentError)
    await expect(rejects({ ...files, 'config.json': '{ not json' })).rejects.toThrow(ParseError)
    await expect(rejects({ ...files, 'config.json': new Uint8Array([0xff, 0xfe]) })).rejects.toThrow(/UTF-8/)
    await expect(rejects({ ...files, 'model.safetensors': new Uint8Array(12) })).rejects.toThrow(ParseError)
    await expect(rejects({ ...files, 'config.json': other['config.json'] })).rejects.toThrow(CheckpointMismatchError)
    await expect(rejects(files, { maxParameterBytes: 1000 })).rejects.toThrow(ParseError)
    await expect(rejects(files, { maxContextTokens: -1 })).rejects.toThrow(InvalidArgumentError)
    await expect(modelFiles({} as CausalLanguageModel)).rejects.toThrow(InvalidArgumentError)
    expect(tf.memory().numTensors).toBe(numTensors)
    model.dispose()
  })
})
