import { z } from 'zod'

/** The architectures (Hugging Face `model_type`s) Ludic runs. */
export const supportedArchitectures = ['llama', 'qwen2', 'qwen3', 'mistral', 'gpt2'] as const
export type Architecture = (typeof supportedArchitectures)[number]

/** The `rope_scaling` kinds Ludic computes (`default` is no scaling, written `null` here). */
export const supportedRopeScalingTypes = ['default', 'linear', 'llama3'] as const

export const ropeScalingSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('linear'), factor: z.number().positive() }).strict(),
  z
    .object({
      type: z.literal('llama3'),
      factor: z.number().positive(),
      lowFrequencyFactor: z.number().positive(),
      highFrequencyFactor: z.number().positive(),
      originalMaxPositionEmbeddings: z.number().int().positive(),
    })
    .strict()
    .refine((scaling) => scaling.highFrequencyFactor > scaling.lowFrequencyFactor, {
      message: 'highFrequencyFactor must be larger than lowFrequencyFactor',
      path: ['highFrequencyFactor'],
    }),
])
/** Position-interpolation of the rotary frequencies: `linear` (all divided by `factor`) or Llama 3.1's `llama3`. */
export type RopeScaling = z.infer<typeof ropeScalingSchema>

const tokenId = z.number().int().nonnegative()

/**
 * A decoder-only transformer, as a Hugging Face `config.json` describes it, in camelCase with every default
 * filled in. One schema covers the four architectures; they differ only in these switches:
 *
 * | architecture | q/k/v bias | o bias | q/k norm | head dim | sliding window |
 * |---|---|---|---|---|---|
 * | `llama` (Llama 2/3, SmolLM) | `attention_bias` | `attention_bias` | no | `head_dim` or hidden/heads | no |
 * | `qwen2` | yes | no | no | hidden/heads | when `use_sliding_window` |
 * | `qwen3` | `attention_bias` | `attention_bias` | yes | `head_dim` (default 128) | when `use_sliding_window` |
 * | `mistral` | no | no | no | `head_dim` or hidden/heads | `sliding_window` |
 *
 * `gpt2` is another block altogether: LayerNorm with biases (epsilon in `rmsNormEps`), learned position
 * embeddings (no RoPE: `ropeTheta` unused), fused `c_attn` q/k/v, a GELU (tanh) MLP, every projection with a
 * bias, and `Conv1D` weights stored `[in, out]`.
 */
export const modelConfigSchema = z
  .object({
    architecture: z.enum(supportedArchitectures),
    vocabSize: z.number().int().positive(),
    hiddenSize: z.number().int().positive(),
    intermediateSize: z.number().int().positive(),
    numHiddenLayers: z.number().int().positive(),
    numAttentionHeads: z.number().int().positive(),
    numKeyValueHeads: z.number().int().positive(),
    /** Width of one attention head; even (rotary pairs). */
    headDim: z.number().int().positive(),
    maxPositionEmbeddings: z.number().int().positive(),
    /** Epsilon of the normalisation layers (RMSNorm; GPT-2's LayerNorm `layer_norm_epsilon`). */
    rmsNormEps: z.number().positive(),
    ropeTheta: z.number().positive(),
    ropeScaling: ropeScalingSchema.nullable(),
    /** Biases on the q, k and v projections. */
    attentionBias: z.boolean(),
    /** Bias on the output projection `o_proj`. */
    attentionOutputBias: z.boolean(),
    /** Biases on `gate_proj`, `up_proj`, `down_proj`. */
    mlpBias: z.boolean(),
    /** RMSNorm of each query and key head before the rotation (Qwen3's `q_norm`, `k_norm`). */
    queryKeyNorm: z.boolean(),
    /** A query attends to at most this many most recent keys (itself included); `null`: no limit. */
    slidingWindow: z.number().int().positive().nullable(),
    /** The output projection is the token embedding (no `lm_head.weight` of its own). */
    tieWordEmbeddings: z.boolean(),
    /** Standard deviation of the normal initialisation of linear and embedding weights. */
    initializerRange: z.number().positive(),
    bosTokenId: tokenId.nullable(),
    /** End-of-sequence ids (a config's `eos_token_id` may be one id or a list). */
    eosTokenIds: z.array(tokenId),
    padTokenId: tokenId.nullable(),
  })
  .strict()
  .superRefine((config, context) => {
    const issue = (path: string, message: string) => context.addIssue({ code: 'custom', path: [path], message })
    if (config.numAttentionHeads % config.numKeyValueHeads !== 0) {
      issue('numKeyValueHeads', `numAttentionHeads (${config.numAttentionHeads}) must be a multiple of numKeyValueHeads (${config.numKeyValueHeads})`)
    }
    if (config.headDim % 2 !== 0) issue('headDim', `must be even for the rotary embedding, got ${config.headDim}`)
    for (const [name, id] of [
      ['bosTokenId', config.bosTokenId],
      ['padTokenId', config.padTokenId],
      ...config.eosTokenIds.map((id, index) => [`eosTokenIds.${index}`, id] as const),
    ] as const) {
      if (id !== null && id >= config.vocabSize) issue(name, `token id ${id} is outside the vocabulary [0, ${config.vocabSize})`)
    }
  })

/** A parsed model configuration (see `modelConfigSchema`). */
export type ModelConfig = z.infer<typeof modelConfigSchema>
