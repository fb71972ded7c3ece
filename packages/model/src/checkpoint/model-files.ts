import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError, ParseError, parseArgument } from '@ludic/core'
import { safetensorsBytesReader, serializeSafetensors, type SafetensorsReader, type SafetensorsTensor, type SafetensorsTensorInput } from '@ludic/tensors'
import { z } from 'zod'
import { huggingFaceSizeFields, parseHuggingFaceConfig, toHuggingFaceConfig } from '../config/hugging-face-config.js'
import type { ModelConfig } from '../config/model-config.js'
import { scoreWeightName } from '../heads/scalar-heads.js'
import { CausalLanguageModel } from '../model/causal-language-model.js'
import { checkParameterBudget, defaultMaxParameterBytes } from '../model/parameter-budget.js'
import { parameterSpecs } from '../model/parameter-shapes.js'
import { CheckpointMismatchError, type MisshapedTensor } from './checkpoint-mismatch-error.js'

// A checkpoint in memory: what `saveModel` writes and `loadModel` reads, without the file system. The directory
// functions (`save-model.ts`, `load-model.ts`) are thin file wrappers around these; a browser uses them directly.

/**
 * Tensors older checkpoints hold that are computed, not learned: the rotary frequencies, GPT-2's causal-mask
 * buffers (`h.0.attn.bias`, `h.0.attn.masked_bias`).
 */
const ignoredTensor = /(^|\.)rotary_emb\.inv_freq$|(^|\.)h\.\d+\.attn\.(bias|masked_bias)$/

/** Parameter names that belong to adapters, not to the model (saved with `saveLoraAdapter`). */
export const adapterParameter = /\.lora_[AB]\.weight$/

export const loadModelFromFilesOptionsSchema = z
  .object({
    /** The model's context (`model.maxContextTokens`). Default: the config's `max_position_embeddings` (GPT-2: `n_positions`). */
    maxContextTokens: z.number().int().positive().optional(),
    /**
     * The most bytes the parameters (float32) may take; a config.json implying more is a `ParseError` naming the
     * size field, before any weight is read. Default: `defaultMaxParameterBytes()`.
     */
    maxParameterBytes: z.number().positive().optional(),
  })
  .strict()
export type LoadModelFromFilesOptions = z.input<typeof loadModelFromFilesOptionsSchema>

export const modelFilesOptionsSchema = z
  .object({
    /** dtype of the saved weights (`config.json`'s `dtype` says the same). Default: `'float32'`. */
    dtype: z.enum(['float32', 'float16', 'bfloat16']).default('float32'),
  })
  .strict()
export type ModelFilesOptions = z.input<typeof modelFilesOptionsSchema>

const safetensorsDtype = { float32: 'F32', float16: 'F16', bfloat16: 'BF16' } as const

/** A checkpoint's files in memory, as `saveModel` writes them for a model under `maxShardBytes`. */
export interface ModelFiles {
  'config.json': string
  'generation_config.json': string
  'model.safetensors': Uint8Array
}

/** A checkpoint's files to load: `config.json` as text or bytes, `model.safetensors` as bytes. */
export interface ModelFilesInput {
  'config.json': string | Uint8Array | ArrayBuffer
  'model.safetensors': Uint8Array | ArrayBuffer
  /** Accepted (so `modelFiles`' result loads as it is) and not read: generation settings are the caller's. */
  'generation_config.json'?: string | Uint8Array | ArrayBuffer
}

/** What `saveModel` writes, as data: the config files' JSON and the tensors (Hugging Face names, chosen dtype). */
export async function checkpointContents(
  model: CausalLanguageModel,
  dtype: keyof typeof safetensorsDtype,
): Promise<{ config: Record<string, unknown>; generationConfig: Record<string, unknown>; tensors: Map<string, SafetensorsTensorInput> }> {
  const tensors = new Map<string, SafetensorsTensorInput>()
  for (const [name, variable] of model.parameters()) {
    if (adapterParameter.test(name)) continue
    tensors.set(name, { dtype: safetensorsDtype[dtype], shape: variable.shape, data: (await variable.data()) as Float32Array })
  }
  const { config } = model
  return {
    config: toHuggingFaceConfig(config, { dtype, ...(model.sourceConfig === undefined ? {} : { sourceConfig: model.sourceConfig }) }) as Record<
      string,
      unknown
    >,
    generationConfig: {
      _from_model_config: true,
      bos_token_id: config.bosTokenId,
      eos_token_id: config.eosTokenIds.length === 1 ? config.eosTokenIds[0] : config.eosTokenIds.length === 0 ? null : config.eosTokenIds,
      pad_token_id: config.padTokenId,
    },
    tensors,
  }
}

/** JSON as `saveModel` writes it: two-space indentation and a final newline. */
export function formatJsonFile(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`
}

/**
 * A model's checkpoint as in-memory files, byte for byte what `saveModel` writes for it (below its shard size):
 * `config.json`, `generation_config.json` and one `model.safetensors`. Write them to a folder (a browser download,
 * the Origin Private File System) and Node's `loadModel`, `ludic eval` and `ludic serve` load it as it is.
 */
export async function modelFiles(model: CausalLanguageModel, options: ModelFilesOptions = {}): Promise<ModelFiles> {
  if (!(model instanceof CausalLanguageModel)) throw new InvalidArgumentError({ argument: 'model', value: model, message: 'must be a CausalLanguageModel' })
  const { dtype } = parseArgument(modelFilesOptionsSchema, options, 'options')
  const { config, generationConfig, tensors } = await checkpointContents(model, dtype)
  return {
    'config.json': formatJsonFile(config),
    'generation_config.json': formatJsonFile(generationConfig),
    'model.safetensors': serializeSafetensors(tensors, { metadata: { format: 'pt' } }),
  }
}

const fileNames = ['config.json', 'model.safetensors', 'generation_config.json'] as const

function bytesOf(value: unknown, argument: string): Uint8Array {
  if (value instanceof Uint8Array) return value
  if (value instanceof ArrayBuffer) return new Uint8Array(value)
  throw new InvalidArgumentError({ argument, value, message: 'must be a Uint8Array or an ArrayBuffer' })
}

/**
 * Loads a checkpoint from in-memory files, `{ 'config.json', 'model.safetensors' }` (what `modelFiles` gives, or
 * a `saveModel` folder's files read as bytes: a browser's `fetch` or file picker), with `loadModel`'s checks: an
 * unsupported configuration is a `ParseError` naming the field, parameters past `maxParameterBytes` are refused
 * before any weight is read, and weights that do not fit the configuration are one `CheckpointMismatchError`.
 * A sharded checkpoint is not accepted here (load it with `loadModel` in Node).
 */
export async function loadModelFromFiles(files: ModelFilesInput, options: LoadModelFromFilesOptions = {}): Promise<CausalLanguageModel> {
  if (files === null || typeof files !== 'object' || Array.isArray(files)) {
    throw new InvalidArgumentError({ argument: 'files', value: files, message: "must be an object { 'config.json', 'model.safetensors' }" })
  }
  const unknown = Object.keys(files).filter((name) => !(fileNames as readonly string[]).includes(name))
  if (unknown.length > 0) {
    throw new InvalidArgumentError({
      argument: 'files',
      value: unknown,
      message: `holds files loadModelFromFiles does not read (${unknown.join(', ')}); it takes ${fileNames.join(', ')} (a sharded checkpoint needs loadModel in Node)`,
    })
  }
  const { maxContextTokens, maxParameterBytes } = parseArgument(loadModelFromFilesOptionsSchema, options, 'options')
  const configFile = files['config.json']
  if (configFile === undefined) throw new InvalidArgumentError({ argument: "files['config.json']", value: configFile, message: 'is missing' })
  if (files['model.safetensors'] === undefined) {
    throw new InvalidArgumentError({ argument: "files['model.safetensors']", value: undefined, message: 'is missing' })
  }
  const configText = typeof configFile === 'string' ? configFile : decodeUtf8(bytesOf(configFile, "files['config.json']"), 'config.json')
  const safetensors = bytesOf(files['model.safetensors'], "files['model.safetensors']")
  const { config, json } = parseModelConfig(configText, 'config.json', maxParameterBytes)
  const reader = safetensorsBytesReader(safetensors, { source: 'model.safetensors' })
  try {
    return await modelFromWeights(config, json, reader, 'model.safetensors', maxContextTokens)
  } finally {
    await reader.close()
  }
}

function decodeUtf8(bytes: Uint8Array, source: string): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes)
  } catch (error) {
    throw new ParseError({ source, message: 'not valid UTF-8', cause: error })
  }
}

/**
 * Parses `config.json`'s text into a model configuration and checks the parameter budget (before any weight is
 * read): not JSON, an unsupported configuration or too many parameters are a `ParseError` naming the source.
 */
export function parseModelConfig(text: string, source: string, maxParameterBytes: number | undefined): { config: ModelConfig; json: unknown } {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    throw new ParseError({ source, message: `not valid JSON (${error instanceof Error ? error.message : String(error)})`, cause: error })
  }
  const config = parseHuggingFaceConfig(json, source)
  checkParameterBudget(config, maxParameterBytes ?? defaultMaxParameterBytes(), (field, message) => {
    throw new ParseError({ source, path: [huggingFaceSizeFields(config.architecture)[field]], message })
  })
  return { config, json }
}

type WeightsReader = Pick<SafetensorsReader, 'names' | 'info' | 'has' | 'read'>

/**
 * Builds the model from a checkpoint's weights (a file, shards or bytes): checks names and shapes, refuses dtypes
 * other than F32/F16/BF16, and moves each float32 array to the backend as it is read (`readAhead` reads in flight),
 * so the weights are never held twice. The reader is the caller's to close.
 */
export async function modelFromWeights(
  config: ModelConfig,
  json: unknown,
  file: WeightsReader,
  source: string,
  maxContextTokens: number | undefined,
): Promise<CausalLanguageModel> {
  const reader = withModelNames(config, file)
  const weights = new Map<string, tf.Tensor>()
  const pending: Promise<SafetensorsTensor>[] = []
  try {
    checkWeights(config, reader, source)
    const names = parameterSpecs(config).map((spec) => spec.name)
    if (reader.has(scoreWeightName)) names.push(scoreWeightName)
    for (const name of names) {
      const dtype = reader.info(name).dtype
      if (dtype !== 'F32' && dtype !== 'F16' && dtype !== 'BF16') {
        throw new ParseError({ source, path: [name], message: `has dtype ${dtype}; weights must be F32, F16 or BF16` })
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
  }
}

/**
 * The checkpoint's tensors under the model's names: GPT-2 checkpoints saved by the original conversion have
 * no `transformer.` prefix (`wte.weight`, `h.0.ln_1.weight`), which transformers adds when loading.
 */
function withModelNames(config: ModelConfig, file: WeightsReader): WeightsReader {
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
export function checkWeights(config: ModelConfig, reader: Pick<SafetensorsReader, 'names' | 'info'>, source: string): void {
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
