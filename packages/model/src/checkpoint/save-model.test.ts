import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as tf from '@tensorflow/tfjs-core'
import { ParseError } from '@ludic/core'
import {
  bfloat16BitsToFloat32,
  float32ToBfloat16Bits,
  openSafetensors,
  readShardedSafetensors,
  writeSafetensorsFile,
  type SafetensorsTensorInput,
} from '@ludic/tensors'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createModel } from '../model/create-model.js'
import { initTestBackend } from '../test/init-test-backend.js'
import { CheckpointMismatchError } from './checkpoint-mismatch-error.js'
import { loadModel } from './load-model.js'
import { saveModel } from './save-model.js'

beforeAll(initTestBackend)

let directory: string
beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'ludic-model-checkpoint-'))
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

async function expectSameParameters(
  a: ReturnType<typeof createModel>,
  b: ReturnType<typeof createModel>,
  round?: (value: Float32Array) => Float32Array,
): Promise<void> {
  const left = a.parameters()
  const right = b.parameters()
  expect([...right.keys()]).toEqual([...left.keys()])
  for (const [name, variable] of left) {
    const expected = (await variable.data()) as Float32Array
    const actual = (await right.get(name)!.data()) as Float32Array
    expect(right.get(name)!.shape, name).toEqual(variable.shape)
    expect(Buffer.from(actual.buffer).equals(Buffer.from((round ? round(expected) : expected).buffer)), name).toBe(true)
  }
}

describe('saveModel / loadModel', () => {
  it('round-trips float32 weights bit for bit, with Hugging Face names, and the same logits', async () => {
    const model = createModel(smallQwen3, { seed: 3 })
    const path = join(directory, 'qwen3-f32')
    await saveModel(model, path)
    const loaded = await loadModel(path)
    await expectSameParameters(model, loaded)
    const file = await openSafetensors(join(path, 'model.safetensors'))
    expect(file.names).toContain('model.layers.1.self_attn.q_norm.weight')
    expect(file.info('model.layers.0.self_attn.k_proj.weight')).toMatchObject({ dtype: 'F32', shape: [16, 16] })
    expect(file.metadata).toEqual({ format: 'pt' })
    await file.close()
    const config = JSON.parse(await readFile(join(path, 'config.json'), 'utf8')) as Record<string, unknown>
    expect(config).toMatchObject({ model_type: 'qwen3', architectures: ['Qwen3ForCausalLM'], head_dim: 8, dtype: 'float32', tie_word_embeddings: false })
    const ids = [[1, 5, 9, 30]]
    const [before, after] = [model.forward(ids), loaded.forward(ids)]
    expect(Array.from(after.dataSync())).toEqual(Array.from(before.dataSync()))
    tf.dispose([before, after])
    model.dispose()
    loaded.dispose()
  })

  it('writes bfloat16 and float16 (rounded to nearest even) and reads them back as float32', async () => {
    const model = createModel('tiny', { vocabSize: 48, seed: 1 })
    for (const dtype of ['bfloat16', 'float16'] as const) {
      const path = join(directory, `tiny-${dtype}`)
      await saveModel(model, path, { dtype })
      const file = await openSafetensors(join(path, 'model.safetensors'))
      expect(file.info('model.norm.weight').dtype).toBe(dtype === 'bfloat16' ? 'BF16' : 'F16')
      await file.close()
      const loaded = await loadModel(path)
      if (dtype === 'bfloat16')
        await expectSameParameters(model, loaded, (values) => values.map((value) => bfloat16BitsToFloat32(float32ToBfloat16Bits(value))))
      else expect(loaded.parameters().size).toBe(model.parameters().size)
      loaded.dispose()
    }
    model.dispose()
  })

  it('saves no lm_head.weight when embeddings are tied, and one when they are not', async () => {
    const tied = createModel('tiny', { vocabSize: 32, seed: 2, overrides: { numHiddenLayers: 1 } })
    const untied = createModel('tiny', { vocabSize: 32, seed: 2, overrides: { numHiddenLayers: 1, tieWordEmbeddings: false } })
    await saveModel(tied, join(directory, 'tied'))
    await saveModel(untied, join(directory, 'untied'))
    const tiedFile = await openSafetensors(join(directory, 'tied', 'model.safetensors'))
    const untiedFile = await openSafetensors(join(directory, 'untied', 'model.safetensors'))
    expect(tiedFile.names).not.toContain('lm_head.weight')
    expect(untiedFile.names).toContain('lm_head.weight')
    await Promise.all([tiedFile.close(), untiedFile.close()])
    tied.dispose()
    untied.dispose()
  })

  it('writes and reads a sharded checkpoint with an index', async () => {
    const model = createModel(smallQwen3, { seed: 4 })
    const path = join(directory, 'sharded')
    await saveModel(model, path, { maxShardBytes: 4000 })
    const reader = await readShardedSafetensors(path)
    expect(reader.files.length).toBeGreaterThan(1)
    await reader.close()
    const loaded = await loadModel(path)
    await expectSameParameters(model, loaded)
    model.dispose()
    loaded.dispose()
  })

  it('refuses integer weights by name before reading any, the reads in flight settled and no tensor left', async () => {
    const model = createModel(smallQwen3, { seed: 6 })
    const path = join(directory, 'integer-weights')
    await saveModel(model, path)
    const tensors = new Map<string, SafetensorsTensorInput>()
    for (const [name, variable] of model.parameters()) {
      const size = variable.shape.reduce((a, b) => a * b, 1)
      const shape = variable.shape
      tensors.set(name, name === 'model.layers.1.mlp.down_proj.weight' ? { shape, data: new Int32Array(size) } : { shape, data: new Float32Array(size) })
    }
    await writeSafetensorsFile(join(path, 'model.safetensors'), tensors)
    const before = tf.memory().numTensors
    const error = await loadModel(path).catch((caught: unknown) => caught)
    expect(ParseError.isInstance(error)).toBe(true)
    expect((error as ParseError).message).toMatch(/model\.layers\.1\.mlp\.down_proj\.weight.*has dtype I32; weights must be F32, F16 or BF16/)
    expect(tf.memory().numTensors).toBe(before)
    model.dispose()
  })

  it('lists every missing, unexpected and misshaped tensor in one error', async () => {
    const model = createModel(smallQwen3, { seed: 5 })
    const path = join(directory, 'mismatch')
    await saveModel(model, path)
    const tensors = new Map<string, { shape: number[]; data: Float32Array }>()
    for (const [name, variable] of model.parameters()) {
      if (name === 'model.layers.1.mlp.up_proj.weight') continue // missing
      const shape = name === 'model.norm.weight' ? [17] : variable.shape // misshaped
      tensors.set(name, { shape, data: new Float32Array(shape.reduce((a, b) => a * b, 1)) })
    }
    tensors.set('model.layers.0.mlp.extra.weight', { shape: [2], data: new Float32Array(2) }) // unexpected
    await writeSafetensorsFile(join(path, 'model.safetensors'), tensors, { metadata: { format: 'pt' } })
    const error = await loadModel(path).catch((caught: unknown) => caught)
    expect(CheckpointMismatchError.isInstance(error)).toBe(true)
    expect(ParseError.isInstance(error)).toBe(true)
    const mismatch = error as CheckpointMismatchError
    expect(mismatch.missing).toEqual(['model.layers.1.mlp.up_proj.weight'])
    expect(mismatch.unexpected).toEqual(['model.layers.0.mlp.extra.weight'])
    expect(mismatch.misshaped).toEqual([{ name: 'model.norm.weight', expected: [16], actual: [17] }])
    expect(mismatch.message).toMatch(
      /missing 1: model\.layers\.1\.mlp\.up_proj\.weight; unexpected 1: .*misshaped 1: model\.norm\.weight is \[17\], expected \[16\]/,
    )
    model.dispose()
  })

  it('loads GPT-2 checkpoints in the original layout (no transformer. prefix, attention-mask buffers)', async () => {
    const model = createModel({ model_type: 'gpt2', vocab_size: 30, n_embd: 16, n_layer: 2, n_head: 2, n_positions: 12 }, { seed: 6 })
    const path = join(directory, 'gpt2-original')
    await saveModel(model, path)
    const tensors = new Map<string, { shape: number[]; data: Float32Array }>()
    for (const [name, variable] of model.parameters())
      tensors.set(name.replace(/^transformer\./, ''), { shape: variable.shape, data: variable.dataSync() as Float32Array })
    for (const layer of [0, 1]) tensors.set(`h.${layer}.attn.bias`, { shape: [1, 1, 12, 12], data: new Float32Array(144) })
    await writeSafetensorsFile(join(path, 'model.safetensors'), tensors, { metadata: { format: 'pt' } })
    const loaded = await loadModel(path)
    await expectSameParameters(model, loaded)
    expect(() => loaded.forward([[1, 2]], { positions: [[11, 12]] })).toThrow(/positions.*value: 12.*learned positions 0 … 11/)
    model.dispose()
    loaded.dispose()
  })

  it('refuses an unsupported model_type or RoPE type, naming what is supported', async () => {
    const path = join(directory, 'unsupported')
    const model = createModel('tiny', { vocabSize: 16, overrides: { numHiddenLayers: 1 } })
    await saveModel(model, path)
    model.dispose()
    const config = JSON.parse(await readFile(join(path, 'config.json'), 'utf8')) as Record<string, unknown>
    await writeFile(join(path, 'config.json'), JSON.stringify({ ...config, model_type: 'gemma' }))
    await expect(loadModel(path)).rejects.toThrow(/unsupported model_type "gemma"; supported: llama, qwen2, qwen3, mistral, gpt2/)
    await writeFile(
      join(path, 'config.json'),
      JSON.stringify({ ...config, rope_scaling: null, rope_parameters: { rope_type: 'yarn', factor: 4, rope_theta: 10000 } }),
    )
    await expect(loadModel(path)).rejects.toThrow(/rope_parameters\.rope_type.*unsupported RoPE type "yarn"; supported: default, linear, llama3/)
    await writeFile(join(path, 'config.json'), JSON.stringify({ ...config, architectures: ['LlamaForTokenClassification'] }))
    await expect(loadModel(path)).rejects.toThrow(/unsupported architecture "LlamaForTokenClassification"; supported: LlamaForCausalLM/)
  })
})
