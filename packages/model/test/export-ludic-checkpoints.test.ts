import { join } from 'node:path'
import * as tf from '@tensorflow/tfjs-core'
import { writeSafetensorsFile } from '@ludic/tensors'
import { beforeAll, it } from 'vitest'
import { loadModel } from '../src/checkpoint/load-model.js'
import { saveModel, type SaveModelOptions } from '../src/checkpoint/save-model.js'
import { createModel } from '../src/model/create-model.js'
import { applyLora } from '../src/lora/apply-lora.js'
import { saveLoraAdapter } from '../src/lora/lora-adapter-files.js'
import type { CausalLanguageModel } from '../src/model/causal-language-model.js'
import { initTestBackend } from '../src/test/init-test-backend.js'
import { fixturesDirectory, variantNames } from './reference-fixtures.js'

/**
 * Writes checkpoints saved by Ludic, with Ludic's logits beside them, for scripts/check-ludic-checkpoints.py
 * to load in transformers. Runs only when LUDIC_EXPORT_CHECKPOINTS names the output directory.
 */
const output = process.env.LUDIC_EXPORT_CHECKPOINTS

beforeAll(initTestBackend)

/** Fixed inputs: one full row and one left-padded row. */
const inputIds = [
  [3, 17, 4, 9, 22, 8, 1, 11, 15, 30],
  [0, 0, 0, 0, 5, 12, 7, 19, 2, 6],
]
const attentionMask = [
  [1, 1, 1, 1, 1, 1, 1, 1, 1, 1],
  [0, 0, 0, 0, 1, 1, 1, 1, 1, 1],
]

async function exportModel(name: string, model: CausalLanguageModel, options: SaveModelOptions = {}): Promise<void> {
  const path = join(output!, name)
  await saveModel(model, path, options)
  // Logits of the saved weights (rounded when saved in 16 bits), as Ludic computes them.
  const reloaded = await loadModel(path)
  const logits = reloaded.forward(inputIds, { attentionMask })
  await writeSafetensorsFile(join(path, 'ludic-logits.safetensors'), {
    input_ids: { shape: [2, 10], data: Int32Array.from(inputIds.flat()) },
    attention_mask: { shape: [2, 10], data: Int32Array.from(attentionMask.flat()) },
    logits: { shape: logits.shape, data: (await logits.data()) as Float32Array },
  })
  logits.dispose()
  reloaded.dispose()
}

it.runIf(output !== undefined)('[opt-in] exports Ludic checkpoints for transformers (LUDIC_EXPORT_CHECKPOINTS)', async () => {
  for (const variant of variantNames) {
    const model = await loadModel(join(fixturesDirectory, variant))
    await exportModel(`${variant}-resaved`, model)
    model.dispose()
  }
  const created: [string, Parameters<typeof createModel>[0], Parameters<typeof createModel>[1], SaveModelOptions][] = [
    ['tiny-preset', 'tiny', { vocabSize: 64, seed: 1 }, {}],
    ['tiny-preset-bf16', 'tiny', { vocabSize: 64, seed: 2, overrides: { numKeyValueHeads: 2, tieWordEmbeddings: false } }, { dtype: 'bfloat16' }],
    [
      'qwen2-created-sharded',
      {
        model_type: 'qwen2',
        vocab_size: 64,
        hidden_size: 32,
        intermediate_size: 48,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        num_key_value_heads: 2,
        initializer_range: 0.2,
      },
      { seed: 3 },
      { maxShardBytes: 20_000 },
    ],
    [
      'qwen3-created',
      {
        model_type: 'qwen3',
        vocab_size: 64,
        hidden_size: 32,
        intermediate_size: 48,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        num_key_value_heads: 2,
        head_dim: 16,
        initializer_range: 0.2,
        tie_word_embeddings: true,
      },
      { seed: 4 },
      {},
    ],
    [
      'mistral-created',
      {
        model_type: 'mistral',
        vocab_size: 64,
        hidden_size: 32,
        intermediate_size: 48,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        num_key_value_heads: 1,
        sliding_window: 4,
        initializer_range: 0.2,
      },
      { seed: 5 },
      { dtype: 'float16' },
    ],
    [
      'gpt2-created-untied',
      { model_type: 'gpt2', vocab_size: 64, n_embd: 32, n_layer: 2, n_head: 4, n_positions: 32, initializer_range: 0.2, tie_word_embeddings: false },
      { seed: 7 },
      { dtype: 'bfloat16' },
    ],
    [
      'llama3-created',
      {
        model_type: 'llama',
        vocab_size: 64,
        hidden_size: 32,
        intermediate_size: 48,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        num_key_value_heads: 2,
        initializer_range: 0.2,
        rope_scaling: { rope_type: 'llama3', factor: 8, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 8 },
        rope_theta: 500000,
        attention_bias: true,
      },
      { seed: 6 },
      {},
    ],
  ]
  for (const [name, specification, options, saveOptions] of created) {
    const model = createModel(specification, options)
    await exportModel(name, model, saveOptions)
    model.dispose()
  }
  // A LoRA adapter made by Ludic on the qwen2 fixture, for PEFT (random B, so it changes the logits).
  const base = await loadModel(join(fixturesDirectory, 'qwen2'))
  const adapters = applyLora(base, { rank: 2, alpha: 4, targetModules: ['q_proj', 'k_proj', 'o_proj', 'up_proj'], seed: 8 })
  let seed = 100
  for (const [name, variable] of adapters.parameters()) {
    if (name.includes('lora_B')) tf.tidy(() => variable.assign(tf.randomNormal(variable.shape, 0, 0.3, 'float32', seed++)))
  }
  const adapterDirectory = join(output!, 'adapters', 'qwen2-lora-ludic')
  await saveLoraAdapter(adapters, adapterDirectory, { baseModel: join(fixturesDirectory, 'qwen2') })
  const logits = base.forward(inputIds, { attentionMask })
  await writeSafetensorsFile(join(adapterDirectory, 'ludic-logits.safetensors'), {
    input_ids: { shape: [2, 10], data: Int32Array.from(inputIds.flat()) },
    attention_mask: { shape: [2, 10], data: Int32Array.from(attentionMask.flat()) },
    logits: { shape: logits.shape, data: (await logits.data()) as Float32Array },
  })
  logits.dispose()
  base.dispose()

  // The same for GPT-2, whose Conv1D layers PEFT adapts with fan_in_fan_out.
  const gpt2 = await loadModel(join(fixturesDirectory, 'gpt2'))
  const gpt2Adapters = applyLora(gpt2, { rank: 2, alpha: 4, targetModules: ['c_attn', 'c_fc'], seed: 9 })
  for (const [name, variable] of gpt2Adapters.parameters()) {
    if (name.includes('lora_B')) tf.tidy(() => variable.assign(tf.randomNormal(variable.shape, 0, 0.3, 'float32', seed++)))
  }
  const gpt2Directory = join(output!, 'adapters', 'gpt2-lora-ludic')
  await saveLoraAdapter(gpt2Adapters, gpt2Directory, { baseModel: join(fixturesDirectory, 'gpt2') })
  const gpt2Logits = gpt2.forward(inputIds, { attentionMask })
  await writeSafetensorsFile(join(gpt2Directory, 'ludic-logits.safetensors'), {
    input_ids: { shape: [2, 10], data: Int32Array.from(inputIds.flat()) },
    attention_mask: { shape: [2, 10], data: Int32Array.from(attentionMask.flat()) },
    logits: { shape: gpt2Logits.shape, data: (await gpt2Logits.data()) as Float32Array },
  })
  gpt2Logits.dispose()
  gpt2.dispose()
})
