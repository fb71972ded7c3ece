import { describe, expect, it } from 'vitest'
import type { ModelConfig } from '../config/model-config.js'
import { architectureOf, type LinearPart, type NormPart } from './architecture.js'
import { resolveConfig } from './create-model.js'
import { countParameters } from './parameter-budget.js'
import { parameterSpecs } from './parameter-shapes.js'

/** Every parameter name one block's parts and the model's own parts (embedding, positions, final norm, head) name. */
function namedByParts(config: ModelConfig): string[] {
  const definition = architectureOf(config)
  const linear = (part: LinearPart) => [`${part.name}.weight`, ...(part.bias ? [`${part.name}.bias`] : [])]
  const norm = (part: NormPart | undefined) => (part === undefined ? [] : [`${part.name}.weight`, ...(part.bias ? [`${part.name}.bias`] : [])])
  const names = [definition.embedding, ...(definition.positionEmbedding === undefined ? [] : [definition.positionEmbedding])]
  for (let index = 0; index < config.numHiddenLayers; index++) {
    const layer = definition.layer(index)
    names.push(
      ...norm(layer.attentionNorm),
      ...layer.queryKeyValue.flatMap(linear),
      ...norm(layer.queryNorm),
      ...norm(layer.keyNorm),
      ...linear(layer.output),
      ...norm(layer.mlpNorm),
      ...layer.mlpIn.flatMap(linear),
      ...linear(layer.mlpOut),
    )
    expect(layer.parameters.every((spec) => spec.name.startsWith(`${layer.prefix}.`))).toBe(true)
  }
  names.push(...norm(definition.finalNorm), ...(definition.head === undefined ? [] : linear(definition.head)))
  return names
}

const configs: [string, ModelConfig][] = [
  ['llama', resolveConfig('tiny', 300)],
  [
    'llama, every bias, untied, GQA',
    resolveConfig('tiny', 300, { tieWordEmbeddings: false, attentionBias: true, attentionOutputBias: true, mlpBias: true, numKeyValueHeads: 2 }),
  ],
  ['qwen2', resolveConfig('tiny', 300, { architecture: 'qwen2', attentionBias: true, numKeyValueHeads: 2 })],
  ['qwen3', resolveConfig('tiny', 300, { architecture: 'qwen3', queryKeyNorm: true, headDim: 48 })],
  ['mistral', resolveConfig('tiny', 300, { architecture: 'mistral', slidingWindow: 8 })],
  ['gpt2', resolveConfig({ model_type: 'gpt2', vocab_size: 50, n_embd: 16, n_layer: 3, n_head: 2, n_positions: 20 })],
  ['gpt2, untied', resolveConfig({ model_type: 'gpt2', vocab_size: 50, n_embd: 16, n_inner: 24, n_layer: 1, n_head: 2, tie_word_embeddings: false })],
]

describe('the model definition (architectureOf)', () => {
  it.each(configs)('%s: its parts name every parameter the model has, each once, and nothing else', (_, config) => {
    const named = namedByParts(config)
    expect(new Set(named).size).toBe(named.length)
    expect([...named].sort()).toEqual(
      parameterSpecs(config)
        .map((spec) => spec.name)
        .sort(),
    )
  })

  it.each(configs)('%s: q, k and v widths, the MLP and the norms fit the config', (_, config) => {
    const { hiddenSize: hidden, headDim, numAttentionHeads: heads, numKeyValueHeads: keyValueHeads, intermediateSize } = config
    const layer = architectureOf(config).layer(0)
    expect(layer.queryKeyValue.reduce((total, part) => total + part.outputs, 0)).toBe((heads + 2 * keyValueHeads) * headDim)
    expect(layer.queryKeyValue.every((part) => part.inputs === hidden)).toBe(true)
    expect([layer.output.inputs, layer.output.outputs]).toEqual([heads * headDim, hidden])
    const activation = architectureOf(config).activation
    expect(layer.mlpIn.map((part) => part.outputs)).toEqual(activation === 'swiglu' ? [intermediateSize, intermediateSize] : [intermediateSize])
    expect([layer.mlpOut.inputs, layer.mlpOut.outputs]).toEqual([intermediateSize, hidden])
    expect([layer.attentionNorm.width, layer.mlpNorm.width]).toEqual([hidden, hidden])
  })

  // transformers 5.18's `state_dict()` keys of the same shapes (`LlamaForCausalLM`, `Qwen3ForCausalLM`, `GPT2LMHeadModel`;
  // a tied `lm_head.weight`, which transformers lists and Ludic does not keep, left out).
  it("lists the parameters in transformers' state_dict order", () => {
    const llama = resolveConfig('tiny', 50, { numHiddenLayers: 1, tieWordEmbeddings: false, attentionBias: true, attentionOutputBias: true, mlpBias: true })
    const layer = (names: string[]) => names.map((name) => `model.layers.0.${name}`)
    expect(parameterSpecs(llama).map((spec) => spec.name)).toEqual([
      'model.embed_tokens.weight',
      ...layer(['q_proj', 'k_proj', 'v_proj', 'o_proj'].flatMap((name) => [`self_attn.${name}.weight`, `self_attn.${name}.bias`])),
      ...layer(['gate_proj', 'up_proj', 'down_proj'].flatMap((name) => [`mlp.${name}.weight`, `mlp.${name}.bias`])),
      ...layer(['input_layernorm.weight', 'post_attention_layernorm.weight']),
      'model.norm.weight',
      'lm_head.weight',
    ])
    const qwen3 = resolveConfig('tiny', 50, { architecture: 'qwen3', numHiddenLayers: 1, queryKeyNorm: true, headDim: 8 })
    expect(parameterSpecs(qwen3).map((spec) => spec.name)).toEqual([
      'model.embed_tokens.weight',
      ...layer(['q_proj', 'k_proj', 'v_proj', 'o_proj', 'q_norm', 'k_norm'].map((name) => `self_attn.${name}.weight`)),
      ...layer(['gate_proj', 'up_proj', 'down_proj'].map((name) => `mlp.${name}.weight`)),
      ...layer(['input_layernorm.weight', 'post_attention_layernorm.weight']),
      'model.norm.weight',
    ])
    const gpt2 = resolveConfig({ model_type: 'gpt2', vocab_size: 50, n_embd: 16, n_layer: 1, n_head: 2, n_positions: 20 })
    expect(parameterSpecs(gpt2).map((spec) => spec.name)).toEqual([
      'transformer.wte.weight',
      'transformer.wpe.weight',
      ...['ln_1', 'attn.c_attn', 'attn.c_proj', 'ln_2', 'mlp.c_fc', 'mlp.c_proj'].flatMap((name) => [
        `transformer.h.0.${name}.weight`,
        `transformer.h.0.${name}.bias`,
      ]),
      'transformer.ln_f.weight',
      'transformer.ln_f.bias',
    ])
  })

  it("gives GPT-2's Conv1D weights [in, out] and its residual projections transformers' initialisation", () => {
    const gpt2 = resolveConfig({ model_type: 'gpt2', vocab_size: 50, n_embd: 16, n_inner: 24, n_layer: 2, n_head: 2, n_positions: 20 })
    const specs = new Map(parameterSpecs(gpt2).map((spec) => [spec.name, spec]))
    expect(specs.get('transformer.h.1.attn.c_attn.weight')).toEqual({ name: 'transformer.h.1.attn.c_attn.weight', shape: [16, 48], init: 'normal' })
    // `GPT2PreTrainedModel._init_weights`: c_proj.weight ~ normal(0, initializer_range / √(2 · n_layer)).
    expect(specs.get('transformer.h.1.mlp.c_proj.weight')).toEqual({
      name: 'transformer.h.1.mlp.c_proj.weight',
      shape: [24, 16],
      init: 'normal',
      standardDeviation: 0.02 / 2,
    })
    expect(specs.get('transformer.h.0.attn.c_proj.bias')).toEqual({ name: 'transformer.h.0.attn.c_proj.bias', shape: [16], init: 'zeros' })
    expect(specs.get('transformer.wpe.weight')?.shape).toEqual([20, 16])
    const llama = resolveConfig('tiny', 50, { numKeyValueHeads: 2 })
    expect(parameterSpecs(llama).find((spec) => spec.name === 'model.layers.0.self_attn.k_proj.weight')).toEqual({
      name: 'model.layers.0.self_attn.k_proj.weight',
      shape: [2 * llama.headDim, llama.hiddenSize],
      init: 'normal',
    })
  })

  it('follows the config as it is now (nothing kept across a change), each block made once per definition', () => {
    const config = resolveConfig('tiny', 300)
    const before = countParameters(config).total
    const specs = parameterSpecs(config)
    specs[0]!.shape[0] = 1 // a caller's change to a list it was given stays in that list
    expect(countParameters(config).total).toBe(before)
    const changed = { ...config, hiddenSize: 64, headDim: 16, tieWordEmbeddings: false }
    Object.assign(config, changed)
    expect(countParameters(config).total).toBe(countParameters({ ...changed }).total)
    expect(parameterSpecs(config)).toEqual(parameterSpecs({ ...changed }))
    const definition = architectureOf(config)
    expect(definition.layer(1)).toBe(definition.layer(1))
    expect(definition.layer(1)).not.toBe(definition.layer(0))
  })
})
