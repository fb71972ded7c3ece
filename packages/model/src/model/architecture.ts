import type { ModelConfig } from '../config/model-config.js'

/** How a parameter is initialised (transformers' `_init_weights`). */
export type ParameterInit = 'normal' | 'zeros' | 'ones'

export interface ParameterSpec {
  /** Hugging Face's name, e.g. `model.layers.0.self_attn.q_proj.weight`. */
  name: string
  /** Shape as transformers stores it: linear weights are `[out, in]` (GPT-2's `Conv1D`: `[in, out]`). */
  shape: number[]
  init: ParameterInit
  /** Standard deviation of a `normal` initialisation when it is not the config's `initializerRange`. */
  standardDeviation?: number
}

/** A linear layer `x Wᵀ + b`: its name (without `.weight`), widths and whether it has a bias. */
export interface LinearPart {
  name: string
  inputs: number
  outputs: number
  bias: boolean
  /** The weight is stored `[in, out]` (GPT-2's `Conv1D`), not `[out, in]` (`nn.Linear`). */
  inputMajor: boolean
  /** A `normal` initialisation's standard deviation when not the config's `initializerRange`. */
  standardDeviation?: number
}

/** A normalisation layer: its name (without `.weight`), width and whether it has a bias (LayerNorm). */
export interface NormPart {
  name: string
  width: number
  bias: boolean
}

/** One transformer block: `x + output(attend(queryKeyValue(norm(x))))`, then `x + mlpOut(act(mlpIn(norm(x))))`. */
export interface LayerParts {
  /** What every one of the block's parameter names starts with (`model.layers.3`). */
  prefix: string
  attentionNorm: NormPart
  /**
   * q, k and v, in that order: three linear layers, or one whose output is split into `[heads · headDim,
   * kvHeads · headDim, kvHeads · headDim]` (GPT-2's `c_attn`).
   */
  queryKeyValue: LinearPart[]
  /** Qwen3's RMSNorm of each query and key head (`[headDim]`), before the rotation. */
  queryNorm: NormPart | undefined
  keyNorm: NormPart | undefined
  output: LinearPart
  mlpNorm: NormPart
  /** The MLP's input projections: gate and up (SwiGLU, `silu(gate) · up`), or one (GELU). */
  mlpIn: LinearPart[]
  mlpOut: LinearPart
  /** Every parameter of the block, in the order transformers' `state_dict` lists them. */
  parameters: ParameterSpec[]
}

/**
 * One model definition: what an architecture is made of — its norms, positions, MLP, parameter names, shapes and
 * layouts — written once, here. The training forward (`CausalLanguageModel.hiddenStates`), the decoders of
 * `generate` and the engine (`FusedDecoder`, `HostDecoder`), the parameter lists and counts, the host weight copy and
 * LoRA's defaults read it; none of them names an architecture. Each path is a set of kernels for these parts (the
 * tensor backend's ops, the host's WebAssembly products); a path without a kernel for a part refuses the model
 * (`fusedDecoderSupports`), never replaces it.
 *
 * Two blocks cover the five architectures: Llama's (`llama`, `qwen2`, `qwen3`, `mistral`: RMSNorm, rotary positions,
 * SwiGLU, `[out, in]` weights; the config's switches add biases, q/k norms and a window) and GPT-2's (LayerNorm with
 * biases, learned positions, fused `c_attn`, GELU with tanh, `Conv1D` weights `[in, out]`).
 */
export interface ArchitectureDefinition {
  /** RMSNorm (Zhang & Sennrich, 2019) or LayerNorm with a bias (GPT-2). */
  norm: 'rms' | 'layer'
  /** Rotary embeddings on q and k (Su et al., 2021), or learned position embeddings added to the input (GPT-2). */
  positions: 'rotary' | 'learned'
  /** SwiGLU (Shazeer, 2020) `down(silu(gate(h)) · up(h))`, or GELU's tanh approximation `c_proj(gelu(c_fc(h)))`. */
  activation: 'swiglu' | 'gelu-tanh'
  /** The blocks' linear weights are stored `[out, in]` (`nn.Linear`) or `[in, out]` (GPT-2's `Conv1D`); `lm_head` is always `[out, in]`. */
  linearLayout: 'output-major' | 'input-major'
  /** The token embedding `[vocab, hidden]` (full name). */
  embedding: string
  /** The learned positions `[maxPositionEmbeddings, hidden]` (full name), with `positions: 'learned'`. */
  positionEmbedding: string | undefined
  finalNorm: NormPart
  /** The output projection `lm_head` (`[vocab, hidden]`, `nn.Linear`); undefined when tied to the embedding. */
  head: LinearPart | undefined
  layer(index: number): LayerParts
  /** The modules a LoRA adapter targets by default (PEFT's defaults for the architecture). */
  defaultLoraTargets: readonly string[]
}

/**
 * The definition of `config`'s architecture, made from the config as it is now (a new object each call: nothing is
 * kept across a change to the config); its blocks are each made once, on first use.
 */
export function architectureOf(config: ModelConfig): ArchitectureDefinition {
  const made = config.architecture === 'gpt2' ? gpt2Definition(config) : llamaDefinition(config)
  const layers: LayerParts[] = [] // a forward reads each block's parts every call: made once per definition
  return { ...made, layer: (index) => (layers[index] ??= made.layer(index)) }
}

/** Every parameter of a model of `config`, in the order transformers' `state_dict` lists them (see `parameterSpecs`). */
export function definitionParameters(config: ModelConfig): ParameterSpec[] {
  const definition = architectureOf(config)
  const { vocabSize, hiddenSize, maxPositionEmbeddings } = config
  const specs: ParameterSpec[] = [{ name: definition.embedding, shape: [vocabSize, hiddenSize], init: 'normal' }]
  if (definition.positionEmbedding !== undefined) specs.push({ name: definition.positionEmbedding, shape: [maxPositionEmbeddings, hiddenSize], init: 'normal' })
  for (let layer = 0; layer < config.numHiddenLayers; layer++) specs.push(...definition.layer(layer).parameters)
  specs.push(...normSpecs(definition.finalNorm))
  if (definition.head !== undefined) specs.push(...linearSpecs(definition.head))
  return specs
}

function linearSpecs(part: LinearPart): ParameterSpec[] {
  const { name, inputs, outputs, standardDeviation } = part
  const weight: ParameterSpec = { name: `${name}.weight`, shape: part.inputMajor ? [inputs, outputs] : [outputs, inputs], init: 'normal' }
  if (standardDeviation !== undefined) weight.standardDeviation = standardDeviation
  return part.bias ? [weight, { name: `${name}.bias`, shape: [outputs], init: 'zeros' }] : [weight]
}

function normSpecs(part: NormPart): ParameterSpec[] {
  const weight: ParameterSpec = { name: `${part.name}.weight`, shape: [part.width], init: 'ones' }
  return part.bias ? [weight, { name: `${part.name}.bias`, shape: [part.width], init: 'zeros' }] : [weight]
}

function untiedHead(config: ModelConfig): LinearPart | undefined {
  return config.tieWordEmbeddings ? undefined : { name: 'lm_head', inputs: config.hiddenSize, outputs: config.vocabSize, bias: false, inputMajor: false }
}

/** Llama's block (transformers' `LlamaForCausalLM`; Qwen2, Qwen3 and Mistral differ by the config's switches). */
function llamaDefinition(config: ModelConfig): ArchitectureDefinition {
  const { hiddenSize: hidden, intermediateSize: intermediate, headDim, numAttentionHeads: heads, numKeyValueHeads: keyValueHeads } = config
  const linear = (name: string, inputs: number, outputs: number, bias: boolean): LinearPart => ({ name, inputs, outputs, bias, inputMajor: false })
  return {
    norm: 'rms',
    positions: 'rotary',
    activation: 'swiglu',
    linearLayout: 'output-major',
    embedding: 'model.embed_tokens.weight',
    positionEmbedding: undefined,
    finalNorm: { name: 'model.norm', width: hidden, bias: false },
    head: untiedHead(config),
    defaultLoraTargets: ['q_proj', 'v_proj'],
    layer(index) {
      const attention = `model.layers.${index}.self_attn`
      const mlp = `model.layers.${index}.mlp`
      const queryKeyValue = [
        linear(`${attention}.q_proj`, hidden, heads * headDim, config.attentionBias),
        linear(`${attention}.k_proj`, hidden, keyValueHeads * headDim, config.attentionBias),
        linear(`${attention}.v_proj`, hidden, keyValueHeads * headDim, config.attentionBias),
      ]
      const output = linear(`${attention}.o_proj`, heads * headDim, hidden, config.attentionOutputBias)
      const queryNorm = config.queryKeyNorm ? { name: `${attention}.q_norm`, width: headDim, bias: false } : undefined
      const keyNorm = config.queryKeyNorm ? { name: `${attention}.k_norm`, width: headDim, bias: false } : undefined
      const mlpIn = [linear(`${mlp}.gate_proj`, hidden, intermediate, config.mlpBias), linear(`${mlp}.up_proj`, hidden, intermediate, config.mlpBias)]
      const mlpOut = linear(`${mlp}.down_proj`, intermediate, hidden, config.mlpBias)
      const attentionNorm = { name: `model.layers.${index}.input_layernorm`, width: hidden, bias: false }
      const mlpNorm = { name: `model.layers.${index}.post_attention_layernorm`, width: hidden, bias: false }
      const parameters = [
        ...[...queryKeyValue, output].flatMap(linearSpecs),
        ...(queryNorm === undefined || keyNorm === undefined ? [] : [...normSpecs(queryNorm), ...normSpecs(keyNorm)]),
        ...[...mlpIn, mlpOut].flatMap(linearSpecs),
        ...normSpecs(attentionNorm),
        ...normSpecs(mlpNorm),
      ]
      return { prefix: `model.layers.${index}`, attentionNorm, queryKeyValue, queryNorm, keyNorm, output, mlpNorm, mlpIn, mlpOut, parameters }
    },
  }
}

/**
 * GPT-2's block (transformers' `GPT2LMHeadModel`): `Conv1D` weights `[in, out]`, every projection with a bias, the
 * residual output projections (`c_proj`) initialised with standard deviation `initializerRange / √(2 · layers)`, as
 * in the GPT-2 paper.
 */
function gpt2Definition(config: ModelConfig): ArchitectureDefinition {
  const { hiddenSize: hidden, intermediateSize: intermediate, numHiddenLayers, initializerRange } = config
  const residualDeviation = initializerRange / Math.sqrt(2 * numHiddenLayers)
  const conv1d = (name: string, inputs: number, outputs: number, standardDeviation?: number): LinearPart => ({
    name,
    inputs,
    outputs,
    bias: true,
    inputMajor: true,
    ...(standardDeviation === undefined ? {} : { standardDeviation }),
  })
  const layerNorm = (name: string): NormPart => ({ name, width: hidden, bias: true })
  return {
    norm: 'layer',
    positions: 'learned',
    activation: 'gelu-tanh',
    linearLayout: 'input-major',
    embedding: 'transformer.wte.weight',
    positionEmbedding: 'transformer.wpe.weight',
    finalNorm: layerNorm('transformer.ln_f'),
    head: untiedHead(config),
    defaultLoraTargets: ['c_attn'],
    layer(index) {
      const prefix = `transformer.h.${index}`
      const attentionNorm = layerNorm(`${prefix}.ln_1`)
      const queryKeyValue = [conv1d(`${prefix}.attn.c_attn`, hidden, 3 * hidden)]
      const output = conv1d(`${prefix}.attn.c_proj`, hidden, hidden, residualDeviation)
      const mlpNorm = layerNorm(`${prefix}.ln_2`)
      const mlpIn = [conv1d(`${prefix}.mlp.c_fc`, hidden, intermediate)]
      const mlpOut = conv1d(`${prefix}.mlp.c_proj`, intermediate, hidden, residualDeviation)
      const parameters = [
        ...normSpecs(attentionNorm),
        ...[...queryKeyValue, output].flatMap(linearSpecs),
        ...normSpecs(mlpNorm),
        ...[...mlpIn, mlpOut].flatMap(linearSpecs),
      ]
      return { prefix, attentionNorm, queryKeyValue, queryNorm: undefined, keyNorm: undefined, output, mlpNorm, mlpIn, mlpOut, parameters }
    },
  }
}

/**
 * Whether the linear layer `name` of a model of `definition` stores its weight `[in, out]` (GPT-2's `Conv1D`): every
 * block projection of an input-major architecture; never the embedding or `lm_head`.
 */
export function linearIsInputMajor(definition: ArchitectureDefinition, name: string): boolean {
  return definition.linearLayout === 'input-major' && name !== 'lm_head' && `${name}.weight` !== definition.embedding
}
