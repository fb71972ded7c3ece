import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError, ParseError, parseArgument } from '@ludic/core'
import { hubOptionsSchema, isRepoId, resolveModelSource } from '@ludic/hub'
import { readShardedSafetensors, type SafetensorsTensor, type ShardedSafetensors } from '@ludic/tensors'
import { z } from 'zod'
import { huggingFaceSizeFields, parseHuggingFaceConfig } from '../config/hugging-face-config.js'
import type { ModelConfig } from '../config/model-config.js'
import { CausalLanguageModel } from '../model/causal-language-model.js'
import { checkParameterBudget, defaultMaxParameterBytes } from '../model/parameter-budget.js'
import { parameterSpecs } from '../model/parameter-shapes.js'
import { scoreWeightName } from '../heads/scalar-heads.js'
import { CheckpointMismatchError, type MisshapedTensor } from './checkpoint-mismatch-error.js'

/**
 * Tensors older checkpoints hold that are computed, not learned: the rotary frequencies, GPT-2's causal-mask
 * buffers (`h.0.attn.bias`, `h.0.attn.masked_bias`).
 */
const ignoredTensor = /(^|\.)rotary_emb\.inv_freq$|(^|\.)h\.\d+\.attn\.(bias|masked_bias)$/

export const loadModelOptionsSchema = z
  .object({
    /** The model's context (`model.maxContextTokens`). Default: the config's `max_position_embeddings` (GPT-2: `n_positions`). */
    maxContextTokens: z.number().int().positive().optional(),
    /**
     * The most bytes the parameters (float32) may take; a config.json implying more is a `ParseError` naming the
     * size field, before any weight is read. Default: `defaultMaxParameterBytes()`, half of the machine's memory
     * (at most 3 GiB on WebAssembly).
     */
    maxParameterBytes: z.number().positive().optional(),
    /**
     * How a Hugging Face Hub repository id is fetched (`token`, `cacheDir`, `offline`, `endpoint`, `signal`,
     * `onProgress`…; see `@ludic/hub`'s `downloadRepo`). Default: from `HF_TOKEN`, `HF_HOME`, `HF_HUB_OFFLINE`…
     */
    hub: hubOptionsSchema.optional(),
  })
  .strict()
export type LoadModelOptions = z.input<typeof loadModelOptionsSchema>

/**
 * Loads a Hugging Face checkpoint directory: `config.json` and `model.safetensors`, or a sharded
 * `model.safetensors.index.json` with its shards. A Hugging Face Hub repository id (`Qwen/Qwen3-0.6B`,
 * `owner/name@revision`) is downloaded into the Hugging Face cache first (or found there; see the `hub`
 * option); a local directory of the same name wins. `F32`, `F16` and `BF16` weights become float32 variables.
 * Tensors are read straight into float32 arrays (`BF16`/`F16` widened in place, the next reads already in
 * flight on Node's I/O threads) that go to the backend as they are, so the weights are never held twice.
 * A configuration Ludic does not support is a `ParseError` naming the field; weights that do not fit the
 * configuration are one `CheckpointMismatchError` listing every missing, unexpected and misshaped tensor.
 * With tied embeddings an `lm_head.weight` in the file is ignored, as transformers does. A value or reward
 * head's `score.weight` `[1, hidden]` is loaded too (`createValueHead`/`createRewardHead` then use it).
 * A config whose parameters would exceed `maxParameterBytes` is a `ParseError` naming the size field, raised
 * before the weights are opened.
 */
export async function loadModel(directory: string, options: LoadModelOptions = {}): Promise<CausalLanguageModel> {
  const source = parseArgument(z.string().min(1), directory, 'directory')
  const { maxContextTokens, maxParameterBytes, hub } = parseArgument(loadModelOptionsSchema, options, 'options')
  const folder = isRepoId(source) ? await resolveModelSource(source, { ...hub, files: 'model' }) : source
  const configPath = join(folder, 'config.json')
  const configText = await readFile(configPath, 'utf8').catch((error: unknown) => {
    throw new InvalidArgumentError({ argument: 'directory', value: folder, message: 'holds no readable config.json', cause: error })
  })
  let json: unknown
  try {
    json = JSON.parse(configText)
  } catch (error) {
    throw new ParseError({ source: configPath, message: `not valid JSON (${error instanceof Error ? error.message : String(error)})`, cause: error })
  }
  const config = parseHuggingFaceConfig(json, configPath)
  checkParameterBudget(config, maxParameterBytes ?? defaultMaxParameterBytes(), (field, message) => {
    throw new ParseError({ source: configPath, path: [huggingFaceSizeFields(config.architecture)[field]], message })
  })
  const file = await readShardedSafetensors(folder)
  const reader = withModelNames(config, file)
  const weights = new Map<string, tf.Tensor>()
  const pending: Promise<SafetensorsTensor>[] = []
  try {
    checkWeights(config, reader, folder)
    const names = parameterSpecs(config).map((spec) => spec.name)
    if (reader.has(scoreWeightName)) names.push(scoreWeightName)
    for (const name of names) {
      const dtype = reader.info(name).dtype
      if (dtype !== 'F32' && dtype !== 'F16' && dtype !== 'BF16') {
        throw new ParseError({ source: folder, path: [name], message: `has dtype ${dtype}; weights must be F32, F16 or BF16` })
      }
    }
    // Tensor by tensor, `readAhead` reads in flight: the file reads run on Node's I/O threads while this thread
    // widens the tensor before them (bf16 → float32), and each float32 array goes to the backend as it is.
    const readAhead = 2
    const startRead = (index: number) => {
      if (index < names.length) pending.push(reader.read(names[index]!))
    }
    for (let index = 0; index < readAhead; index++) startRead(index)
    for (let index = 0; index < names.length; index++) {
      const tensor = await pending.shift()!
      startRead(index + readAhead)
      const weight = tf.tensor(tensor.data as Float32Array, tensor.shape, 'float32')
      weights.set(names[index]!, weight)
      // The native backend keeps the array and copies it into TensorFlow at the weight's first use, so a model
      // would hold every weight twice until then; one no-op reshape copies it now and lets the array go.
      if (tf.getBackend() === 'tensorflow' || tf.getBackend() === 'tensorflow-gpu') tf.reshape(weight, weight.shape).dispose()
    }
    return new CausalLanguageModel(config, weights, { sourceConfig: json as Record<string, unknown>, maxContextTokens })
  } finally {
    for (const tensor of weights.values()) tensor.dispose()
    // A read still in flight (an error stopped the loop) finishes before its file is closed; its failure is not the error.
    await Promise.allSettled(pending)
    await file.close()
  }
}

/**
 * The checkpoint's tensors under the model's names: GPT-2 checkpoints saved by the original conversion have
 * no `transformer.` prefix (`wte.weight`, `h.0.ln_1.weight`), which transformers adds when loading.
 */
function withModelNames(config: ModelConfig, file: ShardedSafetensors): Pick<ShardedSafetensors, 'names' | 'info' | 'has' | 'read'> {
  if (config.architecture !== 'gpt2' || file.has('transformer.wte.weight') || !file.has('wte.weight')) return file
  const prefix = 'transformer.'
  const fileName = (name: string): string => (name.startsWith(prefix) ? name.slice(prefix.length) : name)
  return {
    names: file.names.map((name) => (name === 'lm_head.weight' ? name : `${prefix}${name}`)),
    info: (name) => file.info(fileName(name)),
    has: (name) => file.has(fileName(name)),
    read: (name) => file.read(fileName(name)),
  }
}

/** Compares the checkpoint's tensor names and shapes with those the configuration implies. */
export function checkWeights(config: ModelConfig, reader: Pick<ShardedSafetensors, 'names' | 'info'>, source: string): void {
  const specs = parameterSpecs(config)
  const expected = new Map(specs.map((spec) => [spec.name, spec.shape]))
  const present = new Set(reader.names)
  const missing = specs.map((spec) => spec.name).filter((name) => !present.has(name))
  const unexpected = reader.names.filter(
    (name) => !expected.has(name) && !ignoredTensor.test(name) && !(config.tieWordEmbeddings && name === 'lm_head.weight') && name !== scoreWeightName,
  )
  if (reader.names.includes(scoreWeightName)) expected.set(scoreWeightName, [1, config.hiddenSize])
  const misshaped: MisshapedTensor[] = []
  for (const name of reader.names) {
    const shape = expected.get(name)
    if (shape === undefined) continue
    const actual = reader.info(name).shape
    if (actual.length !== shape.length || actual.some((size, index) => size !== shape[index])) misshaped.push({ name, expected: shape, actual })
  }
  if (missing.length > 0 || unexpected.length > 0 || misshaped.length > 0) {
    throw new CheckpointMismatchError({ source, missing, unexpected, misshaped })
  }
}
