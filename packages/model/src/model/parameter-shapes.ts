import type { ModelConfig } from '../config/model-config.js'

/** How a parameter is initialised (transformers' `_init_weights`). */
export type ParameterInit = 'normal' | 'zeros' | 'ones'

export interface ParameterSpec {
  /** Hugging Face's name, e.g. `model.layers.0.self_attn.q_proj.weight`. */
  name: string
  /** Shape as transformers stores it: linear weights are `[out, in]`. */
  shape: number[]
  init: ParameterInit
  /** Standard deviation of a `normal` initialisation when it is not the config's `initializerRange`. */
  standardDeviation?: number
}

/**
 * Every parameter of a model of this configuration, in the order transformers' `state_dict` lists them,
 * with Hugging Face's names and shapes. With tied embeddings there is no `lm_head.weight`: the output
 * projection is `model.embed_tokens.weight`.
 */
export function parameterSpecs(config: ModelConfig): ParameterSpec[] {
  if (config.architecture === 'gpt2') return gpt2ParameterSpecs(config)
  const { hiddenSize, intermediateSize, headDim, numAttentionHeads, numKeyValueHeads, vocabSize } = config
  const specs: ParameterSpec[] = [{ name: 'model.embed_tokens.weight', shape: [vocabSize, hiddenSize], init: 'normal' }]
  const linear = (name: string, outputs: number, inputs: number, bias: boolean): void => {
    specs.push({ name: `${name}.weight`, shape: [outputs, inputs], init: 'normal' })
    if (bias) specs.push({ name: `${name}.bias`, shape: [outputs], init: 'zeros' })
  }
  for (let layer = 0; layer < config.numHiddenLayers; layer++) {
    const prefix = `model.layers.${layer}`
    linear(`${prefix}.self_attn.q_proj`, numAttentionHeads * headDim, hiddenSize, config.attentionBias)
    linear(`${prefix}.self_attn.k_proj`, numKeyValueHeads * headDim, hiddenSize, config.attentionBias)
    linear(`${prefix}.self_attn.v_proj`, numKeyValueHeads * headDim, hiddenSize, config.attentionBias)
    linear(`${prefix}.self_attn.o_proj`, hiddenSize, numAttentionHeads * headDim, config.attentionOutputBias)
    if (config.queryKeyNorm) {
      specs.push({ name: `${prefix}.self_attn.q_norm.weight`, shape: [headDim], init: 'ones' })
      specs.push({ name: `${prefix}.self_attn.k_norm.weight`, shape: [headDim], init: 'ones' })
    }
    linear(`${prefix}.mlp.gate_proj`, intermediateSize, hiddenSize, config.mlpBias)
    linear(`${prefix}.mlp.up_proj`, intermediateSize, hiddenSize, config.mlpBias)
    linear(`${prefix}.mlp.down_proj`, hiddenSize, intermediateSize, config.mlpBias)
    specs.push({ name: `${prefix}.input_layernorm.weight`, shape: [hiddenSize], init: 'ones' })
    specs.push({ name: `${prefix}.post_attention_layernorm.weight`, shape: [hiddenSize], init: 'ones' })
  }
  specs.push({ name: 'model.norm.weight', shape: [hiddenSize], init: 'ones' })
  if (!config.tieWordEmbeddings) specs.push({ name: 'lm_head.weight', shape: [vocabSize, hiddenSize], init: 'normal' })
  return specs
}

/**
 * GPT-2's parameters as transformers' `GPT2LMHeadModel` names them. Its `Conv1D` layers store weights
 * `[in, out]`; the residual output projections (`c_proj`) are initialised with standard deviation
 * `initializerRange / √(2 · layers)`, as in the GPT-2 paper.
 */
function gpt2ParameterSpecs(config: ModelConfig): ParameterSpec[] {
  const { hiddenSize, intermediateSize, vocabSize, maxPositionEmbeddings, numHiddenLayers, initializerRange } = config
  const residualDeviation = initializerRange / Math.sqrt(2 * numHiddenLayers)
  const specs: ParameterSpec[] = [
    { name: 'transformer.wte.weight', shape: [vocabSize, hiddenSize], init: 'normal' },
    { name: 'transformer.wpe.weight', shape: [maxPositionEmbeddings, hiddenSize], init: 'normal' },
  ]
  const layerNorm = (name: string): void => {
    specs.push({ name: `${name}.weight`, shape: [hiddenSize], init: 'ones' })
    specs.push({ name: `${name}.bias`, shape: [hiddenSize], init: 'zeros' })
  }
  const conv1d = (name: string, inputs: number, outputs: number, standardDeviation?: number): void => {
    specs.push({ name: `${name}.weight`, shape: [inputs, outputs], init: 'normal', ...(standardDeviation === undefined ? {} : { standardDeviation }) })
    specs.push({ name: `${name}.bias`, shape: [outputs], init: 'zeros' })
  }
  for (let layer = 0; layer < numHiddenLayers; layer++) {
    const prefix = `transformer.h.${layer}`
    layerNorm(`${prefix}.ln_1`)
    conv1d(`${prefix}.attn.c_attn`, hiddenSize, 3 * hiddenSize)
    conv1d(`${prefix}.attn.c_proj`, hiddenSize, hiddenSize, residualDeviation)
    layerNorm(`${prefix}.ln_2`)
    conv1d(`${prefix}.mlp.c_fc`, hiddenSize, intermediateSize)
    conv1d(`${prefix}.mlp.c_proj`, intermediateSize, hiddenSize, residualDeviation)
  }
  layerNorm('transformer.ln_f')
  if (!config.tieWordEmbeddings) specs.push({ name: 'lm_head.weight', shape: [vocabSize, hiddenSize], init: 'normal' })
  return specs
}
