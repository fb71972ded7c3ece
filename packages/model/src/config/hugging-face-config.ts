import { ParseError, parseInput } from '@ludic/core'
import { z } from 'zod'
import type { SizeField } from '../model/parameter-budget.js'
import { modelConfigSchema, supportedArchitectures, supportedRopeScalingTypes, type Architecture, type ModelConfig, type RopeScaling } from './model-config.js'

/** The `architectures` class names Ludic loads, by `model_type`. */
export const supportedHuggingFaceClasses: Readonly<Record<Architecture, string>> = {
  llama: 'LlamaForCausalLM',
  qwen2: 'Qwen2ForCausalLM',
  qwen3: 'Qwen3ForCausalLM',
  mistral: 'MistralForCausalLM',
  gpt2: 'GPT2LMHeadModel',
}

/** The `config.json` names of the size fields, by architecture (for errors that point into the file). */
export function huggingFaceSizeFields(architecture: Architecture): Readonly<Record<SizeField, string>> {
  return architecture === 'gpt2'
    ? { vocabSize: 'vocab_size', hiddenSize: 'n_embd', intermediateSize: 'n_inner', numHiddenLayers: 'n_layer', maxPositionEmbeddings: 'n_positions' }
    : {
        vocabSize: 'vocab_size',
        hiddenSize: 'hidden_size',
        intermediateSize: 'intermediate_size',
        numHiddenLayers: 'num_hidden_layers',
        maxPositionEmbeddings: 'max_position_embeddings',
      }
}

/** transformers' defaults for each architecture (`LlamaConfig`, `Qwen2Config`… in transformers 5). */
const defaults: Readonly<
  Record<Exclude<Architecture, 'gpt2'>, { maxPositionEmbeddings: number; bosTokenId: number | null; eosTokenId: number | null; slidingWindow: number | null }>
> = {
  llama: { maxPositionEmbeddings: 2048, bosTokenId: 1, eosTokenId: 2, slidingWindow: null },
  qwen2: { maxPositionEmbeddings: 32768, bosTokenId: null, eosTokenId: null, slidingWindow: null },
  qwen3: { maxPositionEmbeddings: 32768, bosTokenId: null, eosTokenId: null, slidingWindow: null },
  mistral: { maxPositionEmbeddings: 4096 * 32, bosTokenId: 1, eosTokenId: 2, slidingWindow: 4096 },
}

const positiveInteger = z.number().int().positive()
const optionalTokenId = z.number().int().nonnegative().nullable().optional()

/** The fields of `config.json` Ludic reads; the others are kept as they are (see `sourceConfig`). */
const huggingFaceConfigSchema = z.looseObject({
  model_type: z.string(),
  architectures: z.array(z.string()).nullable().optional(),
  vocab_size: positiveInteger,
  hidden_size: positiveInteger,
  intermediate_size: positiveInteger,
  num_hidden_layers: positiveInteger,
  num_attention_heads: positiveInteger,
  num_key_value_heads: positiveInteger.nullable().optional(),
  head_dim: positiveInteger.nullable().optional(),
  hidden_act: z.string().optional(),
  max_position_embeddings: positiveInteger.optional(),
  rms_norm_eps: z.number().positive().optional(),
  rope_theta: z.number().positive().nullable().optional(),
  rope_scaling: z.record(z.string(), z.unknown()).nullable().optional(),
  rope_parameters: z.record(z.string(), z.unknown()).nullable().optional(),
  attention_bias: z.boolean().optional(),
  mlp_bias: z.boolean().optional(),
  use_sliding_window: z.boolean().optional(),
  sliding_window: positiveInteger.nullable().optional(),
  tie_word_embeddings: z.boolean().optional(),
  initializer_range: z.number().positive().optional(),
  bos_token_id: optionalTokenId,
  eos_token_id: z
    .union([z.number().int().nonnegative(), z.array(z.number().int().nonnegative())])
    .nullable()
    .optional(),
  pad_token_id: optionalTokenId,
  pretraining_tp: z.number().int().nullable().optional(),
  attention_dropout: z.number().optional(),
})
export type HuggingFaceConfig = z.infer<typeof huggingFaceConfigSchema>

/**
 * Reads a Hugging Face `config.json` (already parsed) into a `ModelConfig`, filling in transformers'
 * defaults for the architecture. Both RoPE layouts are read: transformers 5's `rope_parameters` and the
 * older `rope_theta` + `rope_scaling`. Anything Ludic does not compute (another `model_type`, another
 * activation, YaRN, per-layer sliding windows…) is a `ParseError` naming the field, the value and what is
 * supported; `source` names the file in messages.
 */
export function parseHuggingFaceConfig(json: unknown, source = 'config.json'): ModelConfig {
  const fail = (path: (string | number)[], message: string): never => {
    throw new ParseError({ source, path, message })
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) fail([], 'must be a JSON object')
  const modelType = (json as Record<string, unknown>).model_type
  if (!(supportedArchitectures as readonly unknown[]).includes(modelType)) {
    fail(['model_type'], `unsupported model_type ${JSON.stringify(modelType)}; supported: ${supportedArchitectures.join(', ')}`)
  }
  if (modelType === 'gpt2') return parseGpt2Config(json as Record<string, unknown>, source, fail)
  const config = parseInput(huggingFaceConfigSchema, json, { source })
  const architecture = config.model_type as Exclude<Architecture, 'gpt2'>
  const expectedClass = supportedHuggingFaceClasses[architecture]
  for (const [index, name] of (config.architectures ?? []).entries()) {
    if (name !== expectedClass) {
      fail(['architectures', index], `unsupported architecture ${JSON.stringify(name)}; supported: ${Object.values(supportedHuggingFaceClasses).join(', ')}`)
    }
  }
  const activation = config.hidden_act ?? 'silu'
  if (activation !== 'silu' && activation !== 'swish') fail(['hidden_act'], `unsupported activation ${JSON.stringify(activation)}; supported: silu`)
  if ((config.pretraining_tp ?? 1) !== 1) fail(['pretraining_tp'], `only 1 is supported, got ${config.pretraining_tp}`)

  const { theta, scaling } = parseRope(config, fail)
  const slidingWindow = parseSlidingWindow(config, architecture, fail)
  const eos = config.eos_token_id === undefined ? defaults[architecture].eosTokenId : config.eos_token_id
  const qwen2 = architecture === 'qwen2'
  const attentionBias = config.attention_bias ?? false
  const candidate = {
    architecture,
    vocabSize: config.vocab_size,
    hiddenSize: config.hidden_size,
    intermediateSize: config.intermediate_size,
    numHiddenLayers: config.num_hidden_layers,
    numAttentionHeads: config.num_attention_heads,
    numKeyValueHeads: config.num_key_value_heads ?? config.num_attention_heads,
    headDim: config.head_dim ?? (architecture === 'qwen3' ? 128 : Math.floor(config.hidden_size / config.num_attention_heads)),
    maxPositionEmbeddings: config.max_position_embeddings ?? defaults[architecture].maxPositionEmbeddings,
    rmsNormEps: config.rms_norm_eps ?? 1e-6,
    ropeTheta: theta,
    ropeScaling: scaling,
    attentionBias: qwen2 ? true : architecture === 'mistral' ? false : attentionBias,
    attentionOutputBias: qwen2 || architecture === 'mistral' ? false : attentionBias,
    mlpBias: architecture === 'llama' ? (config.mlp_bias ?? false) : false,
    queryKeyNorm: architecture === 'qwen3',
    slidingWindow,
    tieWordEmbeddings: config.tie_word_embeddings ?? false,
    initializerRange: config.initializer_range ?? 0.02,
    bosTokenId: config.bos_token_id === undefined ? defaults[architecture].bosTokenId : config.bos_token_id,
    eosTokenIds: eos === null ? [] : Array.isArray(eos) ? eos : [eos],
    padTokenId: config.pad_token_id ?? null,
  }
  // What the fields imply for the model (heads, token ids within the vocabulary…); errors name the ModelConfig field.
  return parseInput(modelConfigSchema, candidate, { source })
}

/** GPT-2's `config.json` fields (transformers' `GPT2Config`), with its defaults. */
const gpt2ConfigSchema = z.looseObject({
  architectures: z.array(z.string()).nullable().optional(),
  vocab_size: positiveInteger.default(50257),
  n_positions: positiveInteger.default(1024),
  n_embd: positiveInteger.default(768),
  n_layer: positiveInteger.default(12),
  n_head: positiveInteger.default(12),
  n_inner: positiveInteger.nullable().optional(),
  activation_function: z.string().default('gelu_new'),
  layer_norm_epsilon: z.number().positive().default(1e-5),
  initializer_range: z.number().positive().default(0.02),
  scale_attn_weights: z.boolean().default(true),
  scale_attn_by_inverse_layer_idx: z.boolean().default(false),
  add_cross_attention: z.boolean().default(false),
  tie_word_embeddings: z.boolean().default(true),
  bos_token_id: optionalTokenId,
  eos_token_id: z
    .union([z.number().int().nonnegative(), z.array(z.number().int().nonnegative())])
    .nullable()
    .optional(),
  pad_token_id: optionalTokenId,
})

/** The activations that are GPT-2's tanh approximation of GELU. */
const gpt2Activations = ['gelu_new', 'gelu_pytorch_tanh']

function parseGpt2Config(json: Record<string, unknown>, source: string, fail: (path: (string | number)[], message: string) => never): ModelConfig {
  const config = parseInput(gpt2ConfigSchema, json, { source })
  for (const [index, name] of (config.architectures ?? []).entries()) {
    if (name !== 'GPT2LMHeadModel')
      fail(['architectures', index], `unsupported architecture ${JSON.stringify(name)}; supported: ${Object.values(supportedHuggingFaceClasses).join(', ')}`)
  }
  if (!gpt2Activations.includes(config.activation_function)) {
    fail(['activation_function'], `unsupported activation ${JSON.stringify(config.activation_function)}; supported: ${gpt2Activations.join(', ')}`)
  }
  if (!config.scale_attn_weights) fail(['scale_attn_weights'], 'only true is supported')
  if (config.scale_attn_by_inverse_layer_idx) fail(['scale_attn_by_inverse_layer_idx'], 'only false is supported')
  if (config.add_cross_attention) fail(['add_cross_attention'], 'only false is supported')
  if (config.n_embd % config.n_head !== 0) fail(['n_head'], `n_embd (${config.n_embd}) must be a multiple of n_head (${config.n_head})`)
  // GPT-2's default special token (50256) is dropped where it falls outside a smaller vocabulary.
  const defaultId = 50256 < config.vocab_size ? 50256 : null
  const eos = config.eos_token_id === undefined ? defaultId : config.eos_token_id
  const candidate: ModelConfig = {
    architecture: 'gpt2',
    vocabSize: config.vocab_size,
    hiddenSize: config.n_embd,
    intermediateSize: config.n_inner ?? 4 * config.n_embd,
    numHiddenLayers: config.n_layer,
    numAttentionHeads: config.n_head,
    numKeyValueHeads: config.n_head,
    headDim: config.n_embd / config.n_head,
    maxPositionEmbeddings: config.n_positions,
    rmsNormEps: config.layer_norm_epsilon,
    ropeTheta: 10_000,
    ropeScaling: null,
    attentionBias: true,
    attentionOutputBias: true,
    mlpBias: true,
    queryKeyNorm: false,
    slidingWindow: null,
    tieWordEmbeddings: config.tie_word_embeddings,
    initializerRange: config.initializer_range,
    bosTokenId: config.bos_token_id === undefined ? defaultId : config.bos_token_id,
    eosTokenIds: eos === null ? [] : Array.isArray(eos) ? eos : [eos],
    padTokenId: config.pad_token_id ?? null,
  }
  // What the fields imply for the model (heads, token ids within the vocabulary…); errors name the ModelConfig field.
  return parseInput(modelConfigSchema, candidate, { source })
}

function parseRope(config: HuggingFaceConfig, fail: (path: (string | number)[], message: string) => never): { theta: number; scaling: RopeScaling | null } {
  const field = config.rope_parameters != null ? 'rope_parameters' : 'rope_scaling'
  const parameters: Record<string, unknown> = config.rope_parameters ?? config.rope_scaling ?? {}
  const theta = parameters.rope_theta ?? config.rope_theta ?? 10_000
  if (typeof theta !== 'number' || !(theta > 0)) fail([field, 'rope_theta'], `must be a positive number, got ${JSON.stringify(theta)}`)
  const type = parameters.rope_type ?? parameters.type ?? 'default'
  if (!(supportedRopeScalingTypes as readonly unknown[]).includes(type)) {
    fail([field, 'rope_type'], `unsupported RoPE type ${JSON.stringify(type)}; supported: ${supportedRopeScalingTypes.join(', ')}`)
  }
  if (parameters.partial_rotary_factor !== undefined && parameters.partial_rotary_factor !== 1) {
    fail([field, 'partial_rotary_factor'], `only 1 is supported, got ${JSON.stringify(parameters.partial_rotary_factor)}`)
  }
  const number = (key: string, fallback?: number): number => {
    const value = parameters[key] ?? fallback
    if (typeof value !== 'number' || !(value > 0)) fail([field, key], `must be a positive number, got ${JSON.stringify(value)}`)
    return value as number
  }
  if (type === 'default') return { theta: theta as number, scaling: null }
  if (type === 'linear') return { theta: theta as number, scaling: { type: 'linear', factor: number('factor') } }
  const scaling: RopeScaling = {
    type: 'llama3',
    factor: number('factor'),
    lowFrequencyFactor: number('low_freq_factor'),
    highFrequencyFactor: number('high_freq_factor'),
    originalMaxPositionEmbeddings: number('original_max_position_embeddings', config.max_position_embeddings ?? 2048),
  }
  if (scaling.highFrequencyFactor <= scaling.lowFrequencyFactor) {
    fail([field, 'high_freq_factor'], `must be larger than low_freq_factor (${scaling.lowFrequencyFactor}), got ${scaling.highFrequencyFactor}`)
  }
  return { theta: theta as number, scaling }
}

function parseSlidingWindow(config: HuggingFaceConfig, architecture: Architecture, fail: (path: (string | number)[], message: string) => never): number | null {
  if (architecture === 'mistral') return config.sliding_window === undefined ? defaults.mistral.slidingWindow : config.sliding_window
  if ((architecture === 'qwen2' || architecture === 'qwen3') && config.use_sliding_window === true) {
    fail(['use_sliding_window'], 'per-layer sliding-window attention (use_sliding_window: true) is not supported; supported: false')
  }
  return null
}

/**
 * The `config.json` of a model, as transformers 5 writes it and transformers 4 reads it: RoPE both as
 * `rope_parameters` and as the older `rope_theta` + `rope_scaling`. Fields of `sourceConfig` (the file the
 * model was loaded from) that Ludic does not interpret are kept.
 */
export function toHuggingFaceConfig(
  config: ModelConfig,
  options: { dtype?: 'float32' | 'float16' | 'bfloat16'; sourceConfig?: Readonly<Record<string, unknown>> } = {},
): Record<string, unknown> {
  if (config.architecture === 'gpt2') return toGpt2Config(config, options)
  const rope: Record<string, unknown> =
    config.ropeScaling === null
      ? { rope_type: 'default' }
      : config.ropeScaling.type === 'linear'
        ? { rope_type: 'linear', factor: config.ropeScaling.factor }
        : {
            rope_type: 'llama3',
            factor: config.ropeScaling.factor,
            low_freq_factor: config.ropeScaling.lowFrequencyFactor,
            high_freq_factor: config.ropeScaling.highFrequencyFactor,
            original_max_position_embeddings: config.ropeScaling.originalMaxPositionEmbeddings,
          }
  const architectureFields: Record<string, unknown> =
    config.architecture === 'llama'
      ? { attention_bias: config.attentionBias, mlp_bias: config.mlpBias, head_dim: config.headDim, pretraining_tp: 1 }
      : config.architecture === 'qwen2'
        ? { use_sliding_window: false, sliding_window: null, max_window_layers: config.numHiddenLayers }
        : config.architecture === 'qwen3'
          ? {
              attention_bias: config.attentionBias,
              head_dim: config.headDim,
              use_sliding_window: false,
              sliding_window: null,
              max_window_layers: config.numHiddenLayers,
            }
          : { head_dim: config.headDim, sliding_window: config.slidingWindow }
  const dtype = options.dtype ?? 'float32'
  const {
    rope_scaling: _scaling,
    rope_parameters: _parameters,
    rope_theta: _theta,
    torch_dtype: _torchDtype,
    layer_types: _layerTypes,
    ...kept
  } = options.sourceConfig ?? {}
  return {
    ...kept,
    architectures: [supportedHuggingFaceClasses[config.architecture]],
    model_type: config.architecture,
    vocab_size: config.vocabSize,
    hidden_size: config.hiddenSize,
    intermediate_size: config.intermediateSize,
    num_hidden_layers: config.numHiddenLayers,
    num_attention_heads: config.numAttentionHeads,
    num_key_value_heads: config.numKeyValueHeads,
    hidden_act: 'silu',
    max_position_embeddings: config.maxPositionEmbeddings,
    rms_norm_eps: config.rmsNormEps,
    initializer_range: config.initializerRange,
    tie_word_embeddings: config.tieWordEmbeddings,
    bos_token_id: config.bosTokenId,
    eos_token_id: config.eosTokenIds.length === 1 ? config.eosTokenIds[0] : config.eosTokenIds.length === 0 ? null : config.eosTokenIds,
    pad_token_id: config.padTokenId,
    attention_dropout: 0,
    ...architectureFields,
    rope_theta: config.ropeTheta,
    rope_scaling: config.ropeScaling === null ? null : rope,
    rope_parameters: { ...rope, rope_theta: config.ropeTheta },
    dtype,
    torch_dtype: dtype,
    use_cache: true,
  }
}

function toGpt2Config(
  config: ModelConfig,
  options: { dtype?: 'float32' | 'float16' | 'bfloat16'; sourceConfig?: Readonly<Record<string, unknown>> },
): Record<string, unknown> {
  const dtype = options.dtype ?? 'float32'
  const { torch_dtype: _torchDtype, ...kept } = options.sourceConfig ?? {}
  return {
    ...kept,
    architectures: ['GPT2LMHeadModel'],
    model_type: 'gpt2',
    vocab_size: config.vocabSize,
    n_positions: config.maxPositionEmbeddings,
    n_embd: config.hiddenSize,
    n_layer: config.numHiddenLayers,
    n_head: config.numAttentionHeads,
    n_inner: config.intermediateSize,
    activation_function: 'gelu_new',
    layer_norm_epsilon: config.rmsNormEps,
    initializer_range: config.initializerRange,
    scale_attn_weights: true,
    scale_attn_by_inverse_layer_idx: false,
    reorder_and_upcast_attn: false,
    tie_word_embeddings: config.tieWordEmbeddings,
    bos_token_id: config.bosTokenId,
    eos_token_id: config.eosTokenIds.length === 1 ? config.eosTokenIds[0] : config.eosTokenIds.length === 0 ? null : config.eosTokenIds,
    pad_token_id: config.padTokenId,
    dtype,
    torch_dtype: dtype,
    use_cache: true,
  }
}
