import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { describeValue, findRegExpBacktrackingHazard, InvalidArgumentError, LudicError, ParseError, parseArgument, parseInput } from '@ludic/core'
import {
  maxHeaderByteLength,
  parseSafetensors,
  serializeSafetensors,
  writeJsonFileAtomically,
  writeSafetensorsFile,
  type SafetensorsTensorInput,
} from '@ludic/tensors'
import { z } from 'zod'
import { CheckpointMismatchError, type MisshapedTensor } from '../checkpoint/checkpoint-mismatch-error.js'
import type { CausalLanguageModel } from '../model/causal-language-model.js'
import { attachLora, planLora, type LoraAdapters, type LoraPlan } from './apply-lora.js'
import { confineToDirectories, readLocalFile } from './confined-files.js'
import { architectureOf } from '../model/architecture.js'

/** PEFT's prefix of tensor names in `adapter_model.safetensors` (`PeftModel` → `LoraModel` → the base model). */
const peftPrefix = 'base_model.model.'

/** The fields of PEFT's `adapter_config.json` Ludic reads. */
const adapterConfigSchema = z.looseObject({
  peft_type: z.literal('LORA'),
  r: z.number().int().positive(),
  lora_alpha: z.number().positive(),
  lora_dropout: z.number().min(0).lt(1).default(0),
  target_modules: z.union([z.array(z.string()), z.string()]),
  bias: z.literal('none').default('none'),
  fan_in_fan_out: z.boolean().default(false),
  use_rslora: z.boolean().default(false),
  use_dora: z.literal(false).optional(),
  rank_pattern: z
    .record(z.string(), z.unknown())
    .refine((value) => Object.keys(value).length === 0, 'per-layer ranks are not supported')
    .optional(),
  alpha_pattern: z
    .record(z.string(), z.unknown())
    .refine((value) => Object.keys(value).length === 0, 'per-layer alphas are not supported')
    .optional(),
  modules_to_save: z.null().optional(),
  lora_bias: z.literal(false).optional(),
  layers_to_transform: z.null().optional(),
  exclude_modules: z.null().optional(),
  target_parameters: z.null().optional(),
  trainable_token_indices: z.null().optional(),
  layer_replication: z.null().optional(),
})

export const saveLoraAdapterOptionsSchema = z
  .object({
    /** `base_model_name_or_path` of `adapter_config.json` (a hub id or a directory). Default: null. */
    baseModel: z.string().min(1).optional(),
  })
  .strict()
export type SaveLoraAdapterOptions = z.input<typeof saveLoraAdapterOptionsSchema>

export const loadLoraAdapterOptionsSchema = z
  .object({
    /** Freeze the model's other parameters, as PEFT does. Default: true. */
    freezeBase: z.boolean().default(true),
    /** The budget of the model's and the adapter's parameters together (see `applyLora`). Default: `defaultMaxParameterBytes()`. */
    maxParameterBytes: z.number().positive().optional(),
    /**
     * Directories the adapter must lie in, for a path that comes from outside (a server's client): the directory and
     * both files must resolve inside one of them with their symbolic links followed, a relative `directory` is taken
     * from the first, and every other path is refused without saying whether anything is there (`ludic serve
     * --lora-root`). Default: none (any path: the program's own user named it).
     */
    roots: z.array(z.string().min(1)).min(1).optional(),
    /** Largest `adapter_config.json`, in bytes. Default: 1 MiB. */
    maxConfigBytes: z
      .number()
      .int()
      .positive()
      .default(1 << 20),
    /** Stops the reading between files (a server closing). */
    signal: z.custom<AbortSignal>((value) => value instanceof AbortSignal, 'must be an AbortSignal').optional(),
  })
  .strict()
export type LoadLoraAdapterOptions = z.input<typeof loadLoraAdapterOptionsSchema>

/**
 * Saves LoRA adapters as PEFT's `save_pretrained` does: `adapter_config.json` and `adapter_model.safetensors`
 * with PEFT's tensor names (`base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight`), loadable with
 * `PeftModel.from_pretrained(base, directory)`. `baseModel` fills `base_model_name_or_path`.
 */
export async function saveLoraAdapter(adapters: LoraAdapters, directory: string, options: SaveLoraAdapterOptions = {}): Promise<void> {
  const folder = parseArgument(z.string().min(1), directory, 'directory')
  const { baseModel } = parseArgument(saveLoraAdapterOptionsSchema, options, 'options')
  const config = peftAdapterConfig(adapters, baseModel)
  const tensors = new Map<string, SafetensorsTensorInput>()
  for (const [name, variable] of adapters.parameters())
    tensors.set(`${peftPrefix}${name}`, { shape: variable.shape, data: (await variable.data()) as Float32Array })
  await mkdir(folder, { recursive: true })
  await writeSafetensorsFile(join(folder, 'adapter_model.safetensors'), tensors, { metadata: { format: 'pt' } })
  await writeJsonFileAtomically(join(folder, 'adapter_config.json'), config)
}

/** The two files of a PEFT adapter folder, in memory. */
export interface LoraAdapterFiles {
  'adapter_model.safetensors': Uint8Array
  'adapter_config.json': string
}

/**
 * `saveLoraAdapter`'s two files, byte for byte, encoded in memory at once: the weights are read synchronously
 * (`dataSync`), so the adapters may change as soon as it returns. For a writer that must not wait for the event loop
 * (a trainer publishing its adapter to generation servers between two updates); small adapters only — the bytes are
 * held in memory whole (use `saveLoraAdapter`, which streams, for large ones).
 */
export function encodeLoraAdapter(adapters: LoraAdapters, options: SaveLoraAdapterOptions = {}): LoraAdapterFiles {
  const { baseModel } = parseArgument(saveLoraAdapterOptionsSchema, options, 'options')
  const config = peftAdapterConfig(adapters, baseModel)
  const tensors = new Map<string, SafetensorsTensorInput>()
  for (const [name, variable] of adapters.parameters())
    tensors.set(`${peftPrefix}${name}`, { shape: variable.shape, data: variable.dataSync() as Float32Array })
  return {
    'adapter_model.safetensors': serializeSafetensors(tensors, { metadata: { format: 'pt' } }),
    'adapter_config.json': `${JSON.stringify(config, null, 2)}\n`,
  }
}

/** PEFT's `adapter_config.json` for `adapters`. */
function peftAdapterConfig(adapters: LoraAdapters, baseModel: string | undefined): Record<string, unknown> {
  const { config } = adapters
  if (config.targetModules instanceof RegExp && config.targetModules.flags !== '') {
    throw new InvalidArgumentError({
      argument: 'adapters.config.targetModules',
      value: String(config.targetModules),
      message: 'a pattern with flags cannot be written for PEFT',
    })
  }
  return {
    peft_type: 'LORA',
    task_type: 'CAUSAL_LM',
    base_model_name_or_path: baseModel ?? null,
    r: config.rank,
    lora_alpha: config.alpha,
    lora_dropout: config.dropout,
    target_modules:
      config.targetModules === 'all-linear'
        ? [...new Set(adapters.layers.map((layer) => layer.split('.').at(-1)!))].sort()
        : config.targetModules instanceof RegExp
          ? peftFullMatchSource(config.targetModules)
          : [...config.targetModules],
    bias: 'none',
    fan_in_fan_out: adapters.layers.some((layer) => layer.startsWith('transformer.h.')), // GPT-2's Conv1D layers
    use_rslora: config.useRslora,
    use_dora: false,
    init_lora_weights: true,
    inference_mode: true,
    modules_to_save: null,
    layers_to_transform: null,
    layers_pattern: null,
    rank_pattern: {},
    alpha_pattern: {},
  }
}

/** A PEFT adapter read from disk and checked against a model, not attached yet (`readLoraAdapter`). */
export interface StoredLoraAdapter {
  readonly plan: LoraPlan
  /** A and B of each adapted layer, by LoRA parameter name (`…q_proj.lora_A.weight`), as float32. */
  readonly values: ReadonlyMap<string, Float32Array>
}

/**
 * Loads a PEFT LoRA adapter (`adapter_config.json` + `adapter_model.safetensors`) onto a model: applies LoRA
 * with the saved rank, alpha, dropout and target modules, then sets A and B from the file. Names that do not
 * fit the model are one `CheckpointMismatchError`; PEFT options Ludic does not implement (DoRA, biases,
 * per-layer ranks, `modules_to_save`) are a `ParseError` naming the field. All-or-nothing: the configuration is
 * checked (rank and size limits as `applyLora`'s) and every weight read before the model is touched, so a
 * missing, truncated or mismatched file leaves it as it was (nothing attached, nothing frozen). `readLoraAdapter`
 * and `attachLoraAdapter` are its two halves.
 */
export async function loadLoraAdapter(model: CausalLanguageModel, directory: string, options: LoadLoraAdapterOptions = {}): Promise<LoraAdapters> {
  return attachLoraAdapter(model, await readLoraAdapter(model, directory, options))
}

/** Attaches an adapter `readLoraAdapter` read to the model it was read for; its layers must hold no adapter by then. */
export function attachLoraAdapter(model: CausalLanguageModel, adapter: StoredLoraAdapter): LoraAdapters {
  for (const { layer } of adapter.plan.layers) {
    if (model.linearAdapters().has(layer)) throw new InvalidArgumentError({ argument: 'model', value: layer, message: 'already has an adapter on this layer' })
  }
  return attachLora(model, adapter.plan, adapter.values)
}

/**
 * Reads and checks a PEFT adapter for `model` without touching the model (so a server can read files while its
 * model generates). Only regular files are read, opened without blocking (a FIFO or a device is refused at once) and
 * bounded in size before they are read: the configuration by `maxConfigBytes`, the weights by what the checked
 * configuration needs. Errors never quote the files' contents (a server tells its clients what went wrong with a
 * file they named, not what the file holds); with `roots`, paths are confined to those directories (see the option).
 */
export async function readLoraAdapter(model: CausalLanguageModel, directory: string, options: LoadLoraAdapterOptions = {}): Promise<StoredLoraAdapter> {
  const folder = parseArgument(z.string().min(1), directory, 'directory')
  const parsed = parseArgument(loadLoraAdapterOptionsSchema, options, 'options')
  const { signal } = parsed
  if (signal === undefined) return readAdapterFiles(model, folder, parsed)
  signal.throwIfAborted()
  // Settles as soon as the signal aborts; a read under way finishes on its own and is dropped.
  let onAbort: () => void = () => {}
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason)
    signal.addEventListener('abort', onAbort, { once: true })
  })
  try {
    return await Promise.race([readAdapterFiles(model, folder, parsed), aborted])
  } finally {
    signal.removeEventListener('abort', onAbort)
  }
}

async function readAdapterFiles(
  model: CausalLanguageModel,
  folder: string,
  { freezeBase, maxParameterBytes, roots, maxConfigBytes, signal }: z.output<typeof loadLoraAdapterOptionsSchema>,
): Promise<StoredLoraAdapter> {
  const confined = roots === undefined ? undefined : await confineToDirectories(roots)
  const base = confined === undefined ? folder : await confined.resolveDirectory(folder, 'directory')
  const readFile = (name: string, maxBytes: number) => {
    signal?.throwIfAborted()
    const reading =
      confined === undefined
        ? readLocalFile(base, name, { argument: 'directory', maxBytes })
        : confined.readFile(base, name, { argument: 'directory', maxBytes })
    return reading.catch((error: unknown) => {
      if (LudicError.isInstance(error)) throw error
      // Node's own (ENOENT, EACCES…), kept as the cause: a server answers 404 for ENOENT.
      throw new InvalidArgumentError({ argument: 'directory', value: folder, message: `holds no readable ${name}`, cause: error })
    })
  }
  const configPath = join(base, 'adapter_config.json')
  const configBytes = await readFile('adapter_config.json', maxConfigBytes)
  let json: unknown
  try {
    json = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(configBytes))
  } catch {
    // JSON.parse quotes the text around the fault: the file's contents stay out of the message (and its cause).
    throw new ParseError({ source: configPath, message: 'is not valid UTF-8 JSON' })
  }
  const config = parseInput(adapterConfigSchema, json, { source: configPath })
  if (config.fan_in_fan_out && architectureOf(model.config).linearLayout !== 'input-major') {
    throw new ParseError({
      source: configPath,
      path: ['fan_in_fan_out'],
      message: `true is for GPT-2's Conv1D layers; this is a ${model.config.architecture} model`,
    })
  }
  // Everything is checked and read before the model is touched: a bad or truncated file leaves it as it was.
  // Planned for a later attach: the model may hold another adapter while this one is read (`attachLoraAdapter` checks).
  const plan = planLora(
    model,
    {
      rank: config.r,
      alpha: config.lora_alpha,
      dropout: config.lora_dropout,
      targetModules:
        typeof config.target_modules === 'string' ? fromPeftFullMatchSource(config.target_modules, configPath, model.linearNames()) : config.target_modules,
      useRslora: config.use_rslora,
      freezeBase,
      ...(maxParameterBytes === undefined ? {} : { maxParameterBytes }),
    },
    { attachLater: true },
  )
  const expected = new Map<string, readonly [number, number]>()
  let expectedBytes = 0
  for (const { layer, inputs, outputs } of plan.layers) {
    expected.set(`${layer}.lora_A.weight`, [plan.config.rank, inputs])
    expected.set(`${layer}.lora_B.weight`, [outputs, plan.config.rank])
    expectedBytes += 4 * plan.config.rank * (inputs + outputs)
  }
  const weightsPath = join(base, 'adapter_model.safetensors')
  // The weights the configuration asks for (float32 at most), a header of at most its format's limit.
  const bytes = await readFile('adapter_model.safetensors', 8 + maxHeaderByteLength + expectedBytes)
  const file = parseSafetensors(bytes, { source: weightsPath }).tensors
  const fileName = (name: string) => `${peftPrefix}${name}`
  const missing = [...expected.keys()].map(fileName).filter((name) => !file.has(name))
  const known = new Set([...expected.keys()].map(fileName))
  const unexpected = [...file.keys()].filter((name) => !known.has(name))
  const misshaped: MisshapedTensor[] = []
  for (const [name, shape] of expected) {
    const actual = file.get(fileName(name))?.shape
    if (actual === undefined) continue
    if (actual.length !== 2 || actual[0] !== shape[0] || actual[1] !== shape[1]) misshaped.push({ name: fileName(name), expected: shape, actual })
  }
  if (missing.length > 0 || unexpected.length > 0 || misshaped.length > 0)
    throw new CheckpointMismatchError({ source: folder, missing, unexpected, misshaped, summary: 'the adapter does not fit the model' })
  const values = new Map<string, Float32Array>()
  for (const name of expected.keys()) {
    const tensor = file.get(fileName(name))!
    if (tensor.dtype !== 'F32' && tensor.dtype !== 'F16' && tensor.dtype !== 'BF16') {
      throw new ParseError({ source: folder, path: [fileName(name)], message: `has dtype ${tensor.dtype}; adapter weights must be F32, F16 or BF16` })
    }
    values.set(name, tensor.data)
  }
  return { plan, values }
}

/**
 * PEFT reads a string `target_modules` with `re.fullmatch`; Ludic tests a `RegExp` against the name (it
 * searches). A string read from a file becomes `^(?:source)$`, and such a RegExp is written back as `source`;
 * any other is written as `.*(?:source).*`, which `fullmatch` reads as a search.
 *
 * The file is outside input and V8 cannot interrupt a running RegExp (`(.+)+X` blocked the event loop for minutes
 * on the layer names): a pattern that does not compile, or that `findRegExpBacktrackingHazard` refuses on names as
 * long as the model's, is a `ParseError` at `target_modules`, before anything is matched.
 */
function fromPeftFullMatchSource(source: string, configPath: string, layerNames: readonly string[]): RegExp | 'all-linear' {
  if (source === 'all-linear') return source
  const fullMatch = `^(?:${source})$`
  const refuse = (message: string, cause?: unknown): ParseError =>
    new ParseError({ source: configPath, path: ['target_modules'], message: `${describeValue(source)} ${message}`, cause })
  let pattern: RegExp
  try {
    pattern = new RegExp(fullMatch)
  } catch (error) {
    throw refuse(`is not a regular expression (${error instanceof Error ? error.message : String(error)})`, error)
  }
  const textLength = layerNames.reduce((longest, name) => Math.max(longest, name.length), 0)
  const hazard = findRegExpBacktrackingHazard(fullMatch, { textLength })
  if (hazard !== undefined) throw refuse(`is refused: ${hazard}`)
  return pattern
}

function peftFullMatchSource(pattern: RegExp): string {
  const inner = /^\^\(\?:([\s\S]*)\)\$$/.exec(pattern.source)?.[1]
  if (inner !== undefined && compiles(inner)) return inner // balanced alone, so the group spans all of it
  return `.*(?:${pattern.source}).*`
}

function compiles(source: string): boolean {
  try {
    new RegExp(source)
    return true
  } catch {
    return false
  }
}
