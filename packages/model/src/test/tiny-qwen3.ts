import type { CausalLanguageModel } from '../model/causal-language-model.js'
import { createModel } from '../model/create-model.js'

/**
 * A two-layer Qwen3 of 11 tokens (hidden 8, 2 query heads and 1 key/value head of 4, weights of scale 0.5), for the
 * tests of the training forward; `config` overrides its fields (`attention_bias`, `tie_word_embeddings`, …).
 */
export function createTinyQwen3(seed: number, config: Record<string, unknown> = {}, options: { maxContextTokens?: number } = {}): CausalLanguageModel {
  return createModel(
    {
      model_type: 'qwen3',
      vocab_size: 11,
      hidden_size: 8,
      intermediate_size: 12,
      num_hidden_layers: 2,
      num_attention_heads: 2,
      num_key_value_heads: 1,
      head_dim: 4,
      initializer_range: 0.5,
      ...config,
    },
    { seed, ...options },
  )
}
