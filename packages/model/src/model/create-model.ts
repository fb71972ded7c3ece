import * as tf from '@tensorflow/tfjs-core'
import { createRandom, deriveSeed, InvalidArgumentError, parseArgument } from '@ludic/core'
import { z } from 'zod'
import { huggingFaceSizeFields, parseHuggingFaceConfig } from '../config/hugging-face-config.js'
import { modelConfigSchema, type ModelConfig } from '../config/model-config.js'
import { presetConfig, presetNames, type PresetName } from '../config/presets.js'
import { CausalLanguageModel } from './causal-language-model.js'
import { checkParameterBudget, defaultMaxParameterBytes } from './parameter-budget.js'
import { parameterSpecs, type ParameterSpec } from './parameter-shapes.js'

export const createModelOptionsSchema = z
  .object({
    /** Vocabulary size: required with a preset, overrides the configuration's otherwise. */
    vocabSize: z.number().int().positive().optional(),
    /** Seed of the weight initialisation. Default: 0. */
    seed: z.number().int().default(0),
    /** Fields of the configuration to change (e.g. `{ numKeyValueHeads: 2, tieWordEmbeddings: false }`). */
    overrides: z.record(z.string(), z.unknown()).default({}),
    /** The model's context (`model.maxContextTokens`). Default: the configuration's `maxPositionEmbeddings`. */
    maxContextTokens: z.number().int().positive().optional(),
    /**
     * The most bytes the parameters (float32) may take; a larger configuration is refused before anything is
     * allocated. Default: `defaultMaxParameterBytes()`, half of the machine's memory (at most 3 GiB on WebAssembly).
     */
    maxParameterBytes: z.number().positive().optional(),
  })
  .strict()
export type CreateModelOptions = z.input<typeof createModelOptionsSchema>

/** A preset name, a `ModelConfig`, or a Hugging Face `config.json` object (with `model_type`). */
export type ModelSpecification = PresetName | ModelConfig | Readonly<Record<string, unknown>>

/**
 * Creates a model with freshly initialised weights, as transformers does for a new model: linear and
 * embedding weights normal(0, `initializerRange`) (the padding token's embedding row zero), biases zero,
 * norm weights one. The same seed gives the same weights; each parameter draws from its own stream
 * (`deriveSeed(seed, name)`), so changing one part of a configuration leaves the others' values alone.
 * A configuration whose parameters exceed `maxParameterBytes` is an `InvalidArgumentError` naming the size
 * field, raised before anything is allocated.
 */
export function createModel(specification: ModelSpecification, options: CreateModelOptions = {}): CausalLanguageModel {
  const { vocabSize, seed, overrides, maxContextTokens, maxParameterBytes } = parseArgument(createModelOptionsSchema, options, 'options')
  const config = resolveConfig(specification, vocabSize, overrides)
  checkParameterBudget(config, maxParameterBytes ?? defaultMaxParameterBytes(), (field, message) => {
    const argument =
      field in overrides
        ? `options.overrides.${field}`
        : field === 'vocabSize' && vocabSize !== undefined
          ? 'options.vocabSize'
          : typeof specification === 'string'
            ? 'specification'
            : `specification.${'model_type' in specification ? huggingFaceSizeFields(config.architecture)[field] : field}`
    throw new InvalidArgumentError({ argument, value: config[field], message })
  })
  const weights = new Map<string, tf.Tensor>()
  try {
    for (const spec of parameterSpecs(config)) weights.set(spec.name, initialValue(spec, config, seed))
    return new CausalLanguageModel(config, weights, { maxContextTokens })
  } finally {
    for (const tensor of weights.values()) tensor.dispose()
  }
}

/** Resolves a preset, a `ModelConfig` or a Hugging Face config into a checked `ModelConfig`. */
export function resolveConfig(specification: ModelSpecification, vocabSize?: number, overrides: Record<string, unknown> = {}): ModelConfig {
  let base: ModelConfig
  if (typeof specification === 'string') {
    if (!(presetNames as readonly string[]).includes(specification)) {
      throw new InvalidArgumentError({ argument: 'specification', value: specification, message: `unknown preset; presets: ${presetNames.join(', ')}` })
    }
    if (vocabSize === undefined) {
      throw new InvalidArgumentError({ argument: 'options.vocabSize', value: vocabSize, message: `is required with a preset ('${specification}')` })
    }
    base = presetConfig(specification as PresetName, vocabSize)
  } else if (specification !== null && typeof specification === 'object' && 'model_type' in specification) {
    base = parseHuggingFaceConfig(specification, 'specification')
  } else {
    base = parseArgument(modelConfigSchema, specification, 'specification')
  }
  const merged = { ...base, ...(vocabSize === undefined ? {} : { vocabSize }), ...overrides }
  if ('numAttentionHeads' in overrides || 'hiddenSize' in overrides) {
    if (!('headDim' in overrides)) merged.headDim = merged.hiddenSize / merged.numAttentionHeads
    if (!('numKeyValueHeads' in overrides) && typeof specification === 'string') merged.numKeyValueHeads = merged.numAttentionHeads
  }
  return parseArgument(modelConfigSchema, merged, 'options.overrides')
}

function initialValue(spec: ParameterSpec, config: ModelConfig, seed: number): tf.Tensor {
  if (spec.init === 'ones') return tf.ones(spec.shape)
  if (spec.init === 'zeros') return tf.zeros(spec.shape)
  const size = spec.shape.reduce((product, length) => product * length, 1)
  const values = normalValues(size, spec.standardDeviation ?? config.initializerRange, deriveSeed(seed, spec.name))
  // Llama-style embeddings have padding_idx = pad_token_id (zeroed); GPT-2's wte has none.
  if (spec.name === 'model.embed_tokens.weight' && config.padTokenId !== null) {
    values.fill(0, config.padTokenId * config.hiddenSize, (config.padTokenId + 1) * config.hiddenSize)
  }
  return tf.tensor(values, spec.shape, 'float32')
}

/** `count` samples of normal(0, standardDeviation), Box–Muller with both outputs used. */
export function normalValues(count: number, standardDeviation: number, seed: number): Float32Array {
  const random = createRandom(seed)
  const values = new Float32Array(count)
  for (let index = 0; index < count; index += 2) {
    let u = 0
    while (u === 0) u = random.nextFloat()
    const radius = Math.sqrt(-2 * Math.log(u)) * standardDeviation
    const angle = 2 * Math.PI * random.nextFloat()
    values[index] = radius * Math.cos(angle)
    if (index + 1 < count) values[index + 1] = radius * Math.sin(angle)
  }
  return values
}
