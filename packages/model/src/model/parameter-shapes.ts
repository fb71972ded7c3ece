import type { ModelConfig } from '../config/model-config.js'
import { definitionParameters, type ParameterSpec } from './architecture.js'

export type { ParameterInit, ParameterSpec } from './architecture.js'

/**
 * Every parameter of a model of this configuration, in the order transformers' `state_dict` lists them,
 * with Hugging Face's names and shapes (from the architecture's definition, `architectureOf`). With tied
 * embeddings there is no `lm_head.weight`: the output projection is the token embedding.
 */
export function parameterSpecs(config: ModelConfig): ParameterSpec[] {
  return definitionParameters(config)
}
