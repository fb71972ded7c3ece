import { ParseError } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { createModel, resolveConfig } from '../model/create-model.js'
import { parseHuggingFaceConfig, toHuggingFaceConfig } from './hugging-face-config.js'

const base = { vocab_size: 100, hidden_size: 64, intermediate_size: 128, num_hidden_layers: 2, num_attention_heads: 4 }

describe('parseHuggingFaceConfig', () => {
  it('fills in transformers defaults per architecture', () => {
    const llama = parseHuggingFaceConfig({ ...base, model_type: 'llama' })
    expect(llama).toMatchObject({
      numKeyValueHeads: 4,
      headDim: 16,
      rmsNormEps: 1e-6,
      ropeTheta: 10000,
      ropeScaling: null,
      attentionBias: false,
      bosTokenId: 1,
      eosTokenIds: [2],
      tieWordEmbeddings: false,
      maxPositionEmbeddings: 2048,
    })
    const qwen2 = parseHuggingFaceConfig({ ...base, model_type: 'qwen2', attention_bias: false })
    expect(qwen2).toMatchObject({ attentionBias: true, attentionOutputBias: false, queryKeyNorm: false, eosTokenIds: [], bosTokenId: null })
    const qwen3 = parseHuggingFaceConfig({ ...base, model_type: 'qwen3' })
    expect(qwen3).toMatchObject({ headDim: 128, queryKeyNorm: true, attentionBias: false })
    const mistral = parseHuggingFaceConfig({ ...base, model_type: 'mistral' })
    expect(mistral).toMatchObject({ slidingWindow: 4096, headDim: 16 })
    expect(parseHuggingFaceConfig({ ...base, model_type: 'mistral', sliding_window: null }).slidingWindow).toBeNull()
  })

  it('reads GPT-2 configs (n_embd, n_layer, …) with GPT2Config defaults', () => {
    const gpt2 = parseHuggingFaceConfig({ model_type: 'gpt2', vocab_size: 100, n_embd: 64, n_layer: 2, n_head: 4 })
    expect(gpt2).toMatchObject({
      architecture: 'gpt2',
      hiddenSize: 64,
      intermediateSize: 256,
      numKeyValueHeads: 4,
      headDim: 16,
      maxPositionEmbeddings: 1024,
      rmsNormEps: 1e-5,
      tieWordEmbeddings: true,
      bosTokenId: null,
      eosTokenIds: [],
    })
    expect(parseHuggingFaceConfig({ model_type: 'gpt2' })).toMatchObject({
      vocabSize: 50257,
      hiddenSize: 768,
      numHiddenLayers: 12,
      bosTokenId: 50256,
      eosTokenIds: [50256],
    })
    expect(() => parseHuggingFaceConfig({ model_type: 'gpt2', activation_function: 'relu' })).toThrow(
      /activation_function: unsupported activation "relu"; supported: gelu_new, gelu_pytorch_tanh/,
    )
    expect(() => parseHuggingFaceConfig({ model_type: 'gpt2', scale_attn_by_inverse_layer_idx: true })).toThrow(/scale_attn_by_inverse_layer_idx/)
    const config = parseHuggingFaceConfig({
      model_type: 'gpt2',
      vocab_size: 100,
      n_embd: 64,
      n_layer: 2,
      n_head: 4,
      n_inner: 96,
      bos_token_id: 3,
      eos_token_id: 4,
    })
    expect(parseHuggingFaceConfig(JSON.parse(JSON.stringify(toHuggingFaceConfig(config))))).toEqual(config)
  })

  it('reads both RoPE layouts: rope_parameters (transformers 5) and rope_theta + rope_scaling', () => {
    const scaling = { rope_type: 'llama3', factor: 8, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 8192 }
    const expected = {
      ropeTheta: 500000,
      ropeScaling: { type: 'llama3', factor: 8, lowFrequencyFactor: 1, highFrequencyFactor: 4, originalMaxPositionEmbeddings: 8192 },
    }
    expect(parseHuggingFaceConfig({ ...base, model_type: 'llama', rope_parameters: { ...scaling, rope_theta: 500000 } })).toMatchObject(expected)
    expect(parseHuggingFaceConfig({ ...base, model_type: 'llama', rope_theta: 500000, rope_scaling: scaling })).toMatchObject(expected)
    expect(parseHuggingFaceConfig({ ...base, model_type: 'llama', rope_scaling: { type: 'linear', factor: 2 } }).ropeScaling).toEqual({
      type: 'linear',
      factor: 2,
    })
  })

  it('names the field, the value and what is supported', () => {
    expect(() => parseHuggingFaceConfig({ ...base, model_type: 'gpt_neox' })).toThrow(
      /model_type: unsupported model_type "gpt_neox"; supported: llama, qwen2, qwen3, mistral, gpt2/,
    )
    expect(() => parseHuggingFaceConfig({ ...base, model_type: 'llama', hidden_act: 'gelu' })).toThrow(/hidden_act: unsupported activation "gelu"/)
    expect(() => parseHuggingFaceConfig({ ...base, model_type: 'llama', rope_scaling: { rope_type: 'dynamic', factor: 2 } })).toThrow(
      /supported: default, linear, llama3/,
    )
    expect(() => parseHuggingFaceConfig({ ...base, model_type: 'qwen2', use_sliding_window: true })).toThrow(/use_sliding_window/)
    expect(() => parseHuggingFaceConfig({ ...base, model_type: 'llama', num_key_value_heads: 3 })).toThrow(/numKeyValueHeads.*multiple/)
    expect(() => parseHuggingFaceConfig({ ...base, model_type: 'llama', vocab_size: -1 })).toThrow(ParseError)
    expect(() => parseHuggingFaceConfig({ ...base, model_type: 'llama', eos_token_id: 100 })).toThrow(/eosTokenIds.0.*outside the vocabulary/)
  })

  it('writes a config.json that reads back to the same configuration', () => {
    for (const json of [
      {
        ...base,
        model_type: 'llama',
        rope_theta: 500000,
        rope_scaling: { rope_type: 'llama3', factor: 8, low_freq_factor: 1, high_freq_factor: 4, original_max_position_embeddings: 64 },
        attention_bias: true,
        mlp_bias: true,
        eos_token_id: [2, 3],
      },
      { ...base, model_type: 'qwen2', tie_word_embeddings: true },
      { ...base, model_type: 'qwen3', head_dim: 32 },
      { ...base, model_type: 'mistral', sliding_window: 16, num_key_value_heads: 2 },
    ]) {
      const config = parseHuggingFaceConfig(json)
      expect(parseHuggingFaceConfig(JSON.parse(JSON.stringify(toHuggingFaceConfig(config))))).toEqual(config)
    }
  })
})

describe('presets and createModel', () => {
  it('has tiny, small and base presets', () => {
    expect(resolveConfig('tiny', 4096)).toMatchObject({
      hiddenSize: 128,
      numHiddenLayers: 2,
      numAttentionHeads: 4,
      headDim: 32,
      tieWordEmbeddings: true,
      architecture: 'llama',
    })
    expect(resolveConfig('small', 4096)).toMatchObject({ hiddenSize: 256, numHiddenLayers: 4, numAttentionHeads: 4 })
    expect(resolveConfig('base', 4096)).toMatchObject({ hiddenSize: 512, numHiddenLayers: 8, numAttentionHeads: 8, headDim: 64 })
  })

  it('rejects unknown presets, a missing vocabulary size and bad overrides', () => {
    expect(() => createModel('huge' as 'tiny', { vocabSize: 10 })).toThrow(/unknown preset; presets: tiny, small, base/)
    expect(() => createModel('tiny')).toThrow(/options\.vocabSize.*required/)
    expect(() => createModel('tiny', { vocabSize: 10, overrides: { numKeyValueHeads: 3 } })).toThrow(/options\.overrides\.numKeyValueHeads/)
    expect(() => createModel('tiny', { vocabSize: 10, overrides: { architecture: 'gemma' } })).toThrow(/options\.overrides\.architecture/)
  })
})
