import * as tf from '@tensorflow/tfjs-core'
import {
  createRandom,
  deriveSeed,
  InvalidArgumentError,
  parseArgument,
  tokenizerSchema,
  type FinishReason,
  type Random,
  type TokenizerV1,
  yieldToEventLoop,
} from '@ludic/core'
import { createStreamDecoder } from '@ludic/tokenizer'
import { z } from 'zod'
import type { CausalLanguageModel } from '../model/causal-language-model.js'
import { checkContextLength } from '../model/context-length.js'
import { FusedDecoder, fusedDecoderSupports } from './fused-decoder.js'
import { architectureOf } from '../model/architecture.js'
import { HostDecoder, hostDecoderFloats, hostDecoderSupports } from './host-decoder.js'
import { type SamplingParameters, type SamplingRow, sampleTokens } from './sampling.js'

const tokenIdsSchema = z.union([z.instanceof(Int32Array), z.array(z.number().int())])
const decodeThreadsSchema = z.union([z.literal('auto'), z.number().int().min(1).max(64)])

export const modelGenerateOptionsSchema = z
  .object({
    /** Prompts as token ids, one array per sequence, of any lengths (they are left-padded). */
    inputIds: z.array(tokenIdsSchema).min(1).optional(),
    /** Prompts as text (needs `tokenizer`); encoded with the tokenizer's special tokens. */
    prompts: z.array(z.string()).min(1).optional(),
    /** Encodes `prompts`, finds `stopStrings`, and fills each result's `text`. */
    tokenizer: tokenizerSchema.optional(),
    /** Most tokens to generate per sequence. Default: 32. */
    maxNewTokens: z.number().int().positive().default(32),
    /**
     * 0 is greedy (deterministic); otherwise logits are divided by it, for the draw and for the recorded
     * `logprobs` (see `GeneratedSequence.logprobs`). Default: 1.
     */
    temperature: z.number().min(0).refine(Number.isFinite, 'must be finite').default(1),
    /** Keep only the k most likely tokens; 0 disables. Default: 0. */
    topK: z.number().int().min(0).default(0),
    /** Nucleus sampling mass in (0, 1]; 1 disables. Default: 1. */
    topP: z.number().gt(0).max(1).default(1),
    /** Drop tokens below minP times the most likely one's probability; 0 disables. Default: 0. */
    minP: z.number().min(0).max(1).default(0),
    /**
     * Ids that end a sequence (kept as its last token, finish reason `'stop'`). Default: the config's
     * `eos_token_id`s and the tokenizer's end-of-sequence id.
     */
    stopTokenIds: z.array(z.number().int().nonnegative()).optional(),
    /** Texts that end a sequence (needs `tokenizer`): the token completing one is kept, `text` is cut before it. Default: none. */
    stopStrings: z.array(z.string().min(1)).default([]),
    /** Seed of the sampling: one for the batch (sequence i draws from `deriveSeed(seed, i)`), or one per sequence. Default: 0. */
    seed: z.union([z.number().int(), z.array(z.number().int())]).default(0),
    /** Stops the generation at its next decode step: the promise rejects with the signal's reason, every tensor freed. */
    signal: z.instanceof(AbortSignal, { message: 'must be an AbortSignal' }).optional(),
    /**
     * Streaming (needs `tokenizer`): called with each sequence's new text as it is produced, whole characters
     * only; the pieces of a sequence join to its `text` (stop token left out, cut before a stop string).
     */
    onText: z.custom<(sequenceIndex: number, text: string) => void>((value) => typeof value === 'function', 'must be a function').optional(),
    /** How decode steps run (see `DecodePath`). Default: `'auto'`. */
    decodePath: z.enum(['auto', 'fused', 'host', 'layers']).default('auto'),
    /**
     * Threads of the host decoder's weight products (see `DecodeThreads`): a count from 1 (this thread alone)
     * to 64, or `'auto'`. Default: `'auto'` (one thread). Above 1, each generation's shared memory is freed only by a
     * full garbage collection V8 is not prompted to run (see the README): resident memory grows with many short ones.
     */
    decodeThreads: decodeThreadsSchema.default('auto'),
  })
  .strict()
  .refine((options) => (options.inputIds === undefined) !== (options.prompts === undefined), {
    message: 'give exactly one of inputIds and prompts',
    path: ['inputIds'],
  })
export type ModelGenerateOptions = z.input<typeof modelGenerateOptionsSchema>

/** One generated sequence. */
export interface GeneratedSequence {
  /** The prompt's ids (unpadded). */
  promptIds: Int32Array
  /** The generated ids; a stop token that ended the sequence is the last one. */
  tokenIds: Int32Array
  /**
   * Log-probability of each generated token under the sampling distribution: `log softmax(logits / T)` at that
   * token, T the row's temperature, before top-k/top-p/min-p (as verl and TRL compute it in training; what
   * `sequenceLogprobs` gives with the same `temperature`). Greedy rows (T = 0) record T = 1's. On every decode
   * path. Same length as `tokenIds`.
   */
  logprobs: Float32Array
  /** `'stop'`: a stop token or stop string ended it; `'length'`: `maxNewTokens` did. */
  finishReason: FinishReason
  /** With a tokenizer: the decoded completion, without the stop token and cut before a stop string. */
  text?: string
}

/** One sequence of a batch, with its own settings (what `generate` and `createLocalPolicy` build). */
export interface GenerationRow {
  promptIds: Int32Array
  sampling: SamplingParameters
  maxNewTokens: number
  /**
   * vLLM's `min_tokens`: while the row has fewer generated tokens than this, its `stopTokenIds` are left out of the draw
   * (`sampleToken`'s `excluded`); `stopStrings` still apply. From 0 to `maxNewTokens`. Default: 0.
   */
  minNewTokens?: number
  stopTokenIds: ReadonlySet<number>
  stopStrings: readonly string[]
  random: Random
}

/**
 * Generates continuations of a batch of prompts with a KV cache: the prompts are left-padded (attention
 * mask, positions counted from each prompt's first token), prefilled in one forward pass, then decoded one
 * token per step for every sequence still running. Same seed, same samples; temperature 0 is greedy.
 * Frees every tensor it makes.
 */
export async function generate(model: CausalLanguageModel, options: ModelGenerateOptions): Promise<GeneratedSequence[]> {
  const parsed = parseArgument(modelGenerateOptionsSchema, options, 'options')
  const { tokenizer } = parsed
  if (parsed.prompts !== undefined && tokenizer === undefined) {
    throw new InvalidArgumentError({ argument: 'options.tokenizer', value: undefined, message: 'is needed to encode prompts' })
  }
  if (parsed.stopStrings.length > 0 && tokenizer === undefined) {
    throw new InvalidArgumentError({ argument: 'options.tokenizer', value: undefined, message: 'is needed to find stopStrings' })
  }
  if (parsed.onText !== undefined && tokenizer === undefined) {
    throw new InvalidArgumentError({ argument: 'options.tokenizer', value: undefined, message: 'is needed to stream text (onText)' })
  }
  const prompts = parsed.inputIds?.map((ids) => Int32Array.from(ids)) ?? parsed.prompts!.map((prompt) => tokenizer!.encode(prompt))
  const seeds = parsed.seed
  if (Array.isArray(seeds) && seeds.length !== prompts.length) {
    throw new InvalidArgumentError({ argument: 'options.seed', value: seeds, message: `has ${seeds.length} seeds for ${prompts.length} sequences` })
  }
  prompts.forEach((promptIds, index) => {
    checkContextLength(model, promptIds.length + parsed.maxNewTokens, {
      argument: 'options.maxNewTokens',
      value: parsed.maxNewTokens,
      what: `${parsed.inputIds === undefined ? 'prompts' : 'inputIds'}[${index}] (${promptIds.length} tokens) + maxNewTokens (${parsed.maxNewTokens})`,
    })
  })
  const stopTokenIds = new Set(parsed.stopTokenIds ?? defaultStopTokenIds(model, tokenizer))
  const rows: GenerationRow[] = prompts.map((promptIds, index) => ({
    promptIds,
    sampling: { temperature: parsed.temperature, topK: parsed.topK, topP: parsed.topP, minP: parsed.minP },
    maxNewTokens: parsed.maxNewTokens,
    stopTokenIds,
    stopStrings: parsed.stopStrings,
    random: createRandom(Array.isArray(seeds) ? seeds[index]! : deriveSeed(seeds, index)),
  }))
  return generateRows(model, rows, tokenizer, {
    ...(parsed.signal === undefined ? {} : { signal: parsed.signal }),
    ...(parsed.onText === undefined ? {} : { onText: parsed.onText }),
    decodePath: parsed.decodePath,
    decodeThreads: parsed.decodeThreads,
  })
}

/** The config's end-of-sequence ids and the tokenizer's. */
export function defaultStopTokenIds(model: CausalLanguageModel, tokenizer: TokenizerV1 | undefined): number[] {
  const ids = [...model.config.eosTokenIds]
  if (tokenizer?.eosTokenId !== undefined && !ids.includes(tokenizer.eosTokenId)) ids.push(tokenizer.eosTokenId)
  return ids
}

/**
 * The decode loop gives the event loop a turn (`setImmediate`) once this much time has passed since the last
 * one, so timers, I/O and an abort come in while a long generation runs: at most 100 turns a second, each
 * a few microseconds when nothing is waiting (the garbage collection that then runs in them is work moved, not added; see
 * the README's measurement).
 */
const yieldIntervalMs = 10

/**
 * How the decode steps after the prompt's prefill run (the prefill runs `model.hiddenStates`, but for one short
 * prompt on the host path, see `hostPrefills`):
 *
 * - `'host'`: `HostDecoder` — the weights copied to the host (kept for the model's next generations while its
 *   parameters and adapters are unchanged) and each step computed there: every product in one small WebAssembly
 *   SIMD kernel, the rest in JavaScript, keys and values in preallocated buffers. No op reaches the backend
 *   during a step.
 * - `'fused'`: `FusedDecoder` — the step rearranged for one token into about 60% of the ops, none of them a
 *   transposed product or a broadcast over heads (fused input-major weights built once per generation, norms
 *   and 1/√headDim folded in, RoPE as two products where no head norm sits between, keys kept transposed).
 * - `'layers'`: `model.hiddenStates` with its `KeyValueCache`, op for op what training computes.
 * - `'auto'` (the default): `chooseDecodePath` — `'host'` on CPU backends for models up to 64M parameters,
 *   else `'fused'` where it runs the model, else `'layers'`.
 *
 * Which paths run which models: every path every architecture (Llama, Qwen2's biases, Qwen3's query/key norms,
 * Mistral, GPT-2's LayerNorms, learned positions and GELU MLP: the parts of its definition, `architectureOf`);
 * `'host'` and `'fused'` not a generation longer than a sliding window. An explicit path that does not run the
 * generation is refused (an `InvalidArgumentError` naming `decodePath`), never replaced.
 *
 * All compute the same function: logits differ by float32 rounding only, so a sampled token can differ where
 * a draw falls within that rounding of a boundary.
 */
export type DecodePath = 'auto' | 'fused' | 'host' | 'layers'

/**
 * Threads the host decoder (`DecodePath` `'host'`) runs its weight products on: the calling thread plus
 * `n - 1` worker threads over a shared WebAssembly memory, each product's output rows split between them
 * (see `createMatmulArena`; the results are the same bit for bit at any count). `'auto'` (the default) is 1
 * for now: on the 2-core machine measured, two threads decoded more slowly than one, and faster only when other
 * processes crowded the cores (the package README's "Decode threads" has the figures). Where shared memory or worker threads are unavailable, or the
 * process's workers are lent to another generation running at the same time, the products run on fewer
 * threads. The other paths ignore it.
 */
export type DecodeThreads = 'auto' | number

/** What `generateRows` takes besides the rows: an `AbortSignal`, a streaming callback and the decode path (see `generate`). */
export interface GenerationControls {
  signal?: AbortSignal
  /** Each row's new text, whole characters; needs a tokenizer. */
  onText?: (rowIndex: number, text: string) => void
  /** Default: `'auto'`. */
  decodePath?: DecodePath
  /** Default: `'auto'`. */
  decodeThreads?: DecodeThreads
}

/**
 * The generation loop over rows with their own settings (see `generate`). Each row's prompt plus its
 * `maxNewTokens` must fit the model's context, checked before the backend is touched; a finished row is
 * masked out of the later steps, so its positions stop there. Between decode steps it yields to the event
 * loop (`setImmediate`, at most every `yieldIntervalMs`, so timers and I/O run) and checks `signal`.
 */
export async function generateRows(
  model: CausalLanguageModel,
  rows: readonly GenerationRow[],
  tokenizer?: TokenizerV1,
  controls: GenerationControls = {},
): Promise<GeneratedSequence[]> {
  const { signal, onText, decodePath = 'auto', decodeThreads = 'auto' } = controls
  signal?.throwIfAborted()
  const { vocabSize } = model.config
  const contextLength = batchContextLength(rows)
  checkDecodePath(model, decodePath, contextLength)
  rows.forEach((row, index) => {
    checkGenerationRow(row, vocabSize, { prompt: `inputIds[${index}]`, row: `rows[${index}]` })
    checkContextLength(model, row.promptIds.length + row.maxNewTokens, {
      argument: `inputIds[${index}]`,
      value: row.promptIds.length,
      what: `inputIds[${index}] (${row.promptIds.length} tokens) + its maxNewTokens (${row.maxNewTokens})`,
    })
  })
  const batch = rows.length
  const promptLength = Math.max(...rows.map((row) => row.promptIds.length))
  const padId = model.config.padTokenId ?? 0
  // Left padding: [batch, promptLength]
  const inputRows = rows.map((row) => {
    const padded = new Int32Array(promptLength).fill(padId)
    padded.set(row.promptIds, promptLength - row.promptIds.length)
    return padded
  })
  let maskRows = rows.map((row) => {
    const mask = new Int32Array(promptLength)
    mask.fill(1, promptLength - row.promptIds.length)
    return mask
  })
  const generated = rows.map(() => [] as number[])
  const logprobs = rows.map(() => [] as number[])
  const finishReasons: (FinishReason | undefined)[] = rows.map(() => undefined)
  const texts: (string | undefined)[] = rows.map(() => undefined)
  /** The completion's text: without the stop token that ended it, cut before a stop string. */
  const finalText = (index: number): string => {
    if (texts[index] !== undefined) return texts[index]
    const tokenIds = generated[index]!
    const last = tokenIds[tokenIds.length - 1]
    return tokenizer!.decode(last !== undefined && rows[index]!.stopTokenIds.has(last) ? tokenIds.slice(0, -1) : tokenIds)
  }
  const streams = onText === undefined || tokenizer === undefined ? undefined : rows.map((row) => createTextStream(tokenizer, row.stopStrings))
  const path = decodePath === 'auto' ? chooseDecodePath(model, batch, contextLength) : decodePath
  if (path === 'host' && hostDecoderFloats(model.config, batch, contextLength) > hostDecodeFloatMaximum) {
    throw new InvalidArgumentError({
      argument: 'decodePath',
      value: decodePath,
      message: `the host decoder would hold ${hostDecoderFloats(model.config, batch, contextLength)} floats (weights, and keys and values for ${batch} rows × ${contextLength} positions), past the 4 GiB a WebAssembly memory can address: use 'fused', fewer rows or fewer tokens`,
    })
  }
  const cache = model.createCache()
  let decoder: FusedDecoder | undefined
  let hostDecoder: HostDecoder | undefined
  let lastYield = performance.now()
  try {
    const prefillOnHost = path === 'host' && hostPrefills(model, batch, promptLength)
    if (path === 'host') {
      const threads = decodeThreads === 'auto' ? 1 : decodeThreads
      hostDecoder = new HostDecoder(model, batch, contextLength, { threads, ...(prefillOnHost ? { prefillLength: promptLength } : {}) })
    }
    let logits: Float32Array
    if (prefillOnHost) logits = hostDecoder!.prefill(inputRows, maskRows)
    else {
      logits = await lastLogits(model, inputRows, maskRows, cache)
      if (path === 'fused') {
        decoder = new FusedDecoder(model)
        decoder.adoptCache(cache)
      } else hostDecoder?.adoptCache(cache)
    }
    for (;;) {
      const next = new Int32Array(batch).fill(padId)
      // The unfinished rows' tokens at once (`sampleTokens`: a large step's shared with a helper thread where there is one).
      const unfinished = rows.flatMap((_, index) => (finishReasons[index] === undefined ? [index] : []))
      const drawn = sampleTokens(
        logits,
        vocabSize,
        unfinished.map((index) => samplingRowOf(rows[index]!, generated[index]!.length, index * vocabSize)),
      )
      unfinished.forEach((index, position) => {
        const row = rows[index]!
        const { token, logprob } = drawn[position]!
        generated[index]!.push(token)
        logprobs[index]!.push(logprob)
        next[index] = token
        if (row.stopTokenIds.has(token)) finishReasons[index] = 'stop'
        else if (row.stopStrings.length > 0 && tokenizer !== undefined) {
          const text = tokenizer.decode(generated[index]!)
          const cut = firstStop(text, row.stopStrings)
          if (cut !== undefined) {
            finishReasons[index] = 'stop'
            texts[index] = text.slice(0, cut)
          }
        }
        if (finishReasons[index] === undefined && generated[index]!.length >= row.maxNewTokens) finishReasons[index] = 'length'
        const stream = streams?.[index]
        if (stream !== undefined) {
          const piece = finishReasons[index] === undefined ? stream.push(token) : stream.finish(finalText(index))
          if (piece !== '') onText!(index, piece)
        }
      })
      if (finishReasons.every((reason) => reason !== undefined)) break
      if (performance.now() - lastYield >= yieldIntervalMs) {
        await yieldToEventLoop() // timers, I/O and other requests run here
        lastYield = performance.now()
      }
      signal?.throwIfAborted()
      maskRows = maskRows.map((mask, index) => {
        const grown = new Int32Array(mask.length + 1)
        grown.set(mask)
        grown[mask.length] = finishReasons[index] === undefined ? 1 : 0 // a finished row's padding is not attended
        return grown
      })
      if (hostDecoder !== undefined) {
        const { positions, padding } = stepPositions(maskRows)
        logits = hostDecoder.step(next, positions, padding)
      } else if (decoder !== undefined) logits = await fusedLogits(decoder, next, maskRows)
      else
        logits = await lastLogits(
          model,
          Array.from(next, (token) => Int32Array.of(token)),
          maskRows,
          cache,
        )
    }
  } finally {
    decoder?.dispose()
    hostDecoder?.dispose()
    cache.dispose()
  }
  return rows.map((row, index) => {
    const tokenIds = Int32Array.from(generated[index]!)
    const sequence: GeneratedSequence = {
      promptIds: Int32Array.from(row.promptIds),
      tokenIds,
      logprobs: Float32Array.from(logprobs[index]!),
      finishReason: finishReasons[index]!,
    }
    if (tokenizer !== undefined) sequence.text = finalText(index)
    return sequence
  })
}

/**
 * A row's prompt (at least one token, each an id of the vocabulary), `maxNewTokens` (a positive integer) and
 * `minNewTokens` (0 … `maxNewTokens`), refused with an `InvalidArgumentError` named from `names` (`prompt[i]` for
 * a bad id, `row.maxNewTokens`, `row.minNewTokens`). What `generateRows` and `GenerationEngine.submit` check.
 */
/**
 * A row's sampling at logits `offset` after `generatedCount` tokens: vLLM's `min_tokens` — its stop ids are not drawn
 * before its `minNewTokens` (`sampleToken`'s `excluded`). The engine's and `generate`'s steps both sample so.
 */
export function samplingRowOf(row: GenerationRow, generatedCount: number, offset: number): SamplingRow {
  const excluded = generatedCount < (row.minNewTokens ?? 0) ? row.stopTokenIds : undefined
  return { offset, parameters: row.sampling, random: row.random, excluded }
}

export function checkGenerationRow(row: GenerationRow, vocabSize: number, names: { prompt: string; row: string }): void {
  if (row.promptIds.length === 0) throw new InvalidArgumentError({ argument: names.prompt, value: row.promptIds, message: 'a prompt needs at least one token' })
  row.promptIds.forEach((id, position) => {
    if (!(id >= 0 && id < vocabSize))
      throw new InvalidArgumentError({ argument: `${names.prompt}[${position}]`, value: id, message: `must be a token id in [0, ${vocabSize})` })
  })
  if (!(Number.isInteger(row.maxNewTokens) && row.maxNewTokens >= 1))
    throw new InvalidArgumentError({ argument: `${names.row}.maxNewTokens`, value: row.maxNewTokens, message: 'must be a positive integer' })
  const minNewTokens = row.minNewTokens ?? 0
  if (!(Number.isInteger(minNewTokens) && minNewTokens >= 0 && minNewTokens <= row.maxNewTokens)) {
    throw new InvalidArgumentError({
      argument: `${names.row}.minNewTokens`,
      value: row.minNewTokens,
      message: `must be an integer from 0 to the row's maxNewTokens (${row.maxNewTokens})`,
    })
  }
}

/** The positions a batch of rows spans at most: the longest prompt (the others are left-padded to it) plus the most new tokens of a row. */
export function batchContextLength(rows: readonly Pick<GenerationRow, 'promptIds' | 'maxNewTokens'>[]): number {
  let promptLength = 0
  let newTokens = 0
  for (const row of rows) {
    promptLength = Math.max(promptLength, row.promptIds.length)
    newTokens = Math.max(newTokens, row.maxNewTokens)
  }
  return promptLength + newTokens
}

/** Runs the new tokens through the model (growing the cache) and returns the last position's logits `[batch · vocab]`. */
async function lastLogits(
  model: CausalLanguageModel,
  inputRows: Int32Array[],
  maskRows: Int32Array[],
  cache: ReturnType<CausalLanguageModel['createCache']>,
): Promise<Float32Array> {
  const logits = tf.tidy(() => {
    const hidden = model.hiddenStates(inputRows, { attentionMask: maskRows, cache }) // [batch, time, hidden]
    const [batch, time, width] = hidden.shape
    const last = tf.slice(hidden, [0, time - 1, 0], [batch, 1, width]) as tf.Tensor3D // [batch, 1, hidden]
    return model.logitsFromHidden(last) // [batch, 1, vocab]
  })
  try {
    return (await logits.data()) as Float32Array
  } finally {
    logits.dispose()
  }
}

/**
 * One `FusedDecoder` step for the newest token of each row: positions and padding bias from the attention
 * mask as `model.hiddenStates` derives them (`cumsum(mask) - 1`, 1 on a masked slot; -1e9 where masked).
 */
async function fusedLogits(decoder: FusedDecoder, tokens: Int32Array, maskRows: Int32Array[]): Promise<Float32Array> {
  const { positions, padding } = stepPositions(maskRows)
  const logits = decoder.step(tokens, positions, padding)
  try {
    return (await logits.data()) as Float32Array
  } finally {
    logits.dispose()
  }
}

/**
 * The newest token's position in each row and the padding bias `[batch · length]` of a decode step, from the
 * attention mask as `model.hiddenStates` derives them: `cumsum(mask) - 1` (1 on a masked slot); -1e9 where
 * masked, undefined when nothing is.
 */
function stepPositions(maskRows: Int32Array[]): { positions: Int32Array; padding: Float32Array | undefined } {
  const batch = maskRows.length
  const length = maskRows[0]!.length
  const positions = new Int32Array(batch)
  let padding: Float32Array | undefined
  maskRows.forEach((mask, row) => {
    let attended = 0
    for (let column = 0; column < length; column++) {
      if (mask[column] !== 0) attended++
      else {
        padding ??= new Float32Array(batch * length)
        padding[row * length + column] = -1e9
      }
    }
    positions[row] = mask[length - 1] !== 0 ? attended - 1 : 1
  })
  return { positions, padding }
}

/**
 * `'auto'`'s choice: `'host'` on CPU backends (WebAssembly, native TensorFlow on the CPU, the JS CPU backend) for
 * models up to 64M parameters whose weights, keys and values fit in 1 GiB (batch × context positions
 * preallocated), where one SIMD kernel with no per-op cost beats TensorFlow.js's ops at every batch size measured
 * (README) — every architecture, GPT-2 included, the same rules; `'fused'` on GPU backends and for larger models;
 * `'layers'` where neither runs the generation (past a sliding window: `hostDecoderSupports`, `fusedDecoderSupports`).
 */
export function chooseDecodePath(model: CausalLanguageModel, batch: number, contextLength: number): 'fused' | 'host' | 'layers' {
  const backend = tf.getBackend()
  const cpu = backend === 'cpu' || backend === 'wasm' || (backend === 'tensorflow' && !isGpuBackend())
  const small = model.numParameters <= hostDecodeParameterLimit && hostDecoderFloats(model.config, batch, contextLength) <= hostDecodeFloatLimit
  if (cpu && small && hostDecoderSupports(model, contextLength)) return 'host'
  return fusedDecoderSupports(model, contextLength) ? 'fused' : 'layers'
}

/**
 * Refuses an explicit `decodePath` that does not run `model` for `contextLength` positions (an `InvalidArgumentError`
 * naming `decodePath`, the path and why), rather than running another path in its place.
 */
export function checkDecodePath(model: CausalLanguageModel, decodePath: DecodePath, contextLength: number): void {
  const { config } = model
  const what = `${config.architecture}${config.queryKeyNorm ? ' with query/key norms' : ''}`
  if (decodePath === 'fused' && !fusedDecoderSupports(model, contextLength)) {
    const reason = `cannot run past the sliding window (${config.slidingWindow} positions; this generation spans ${contextLength})`
    throw new InvalidArgumentError({ argument: 'decodePath', value: decodePath, message: `the fused decoder ${reason}: use 'auto', 'host' or 'layers'` })
  }
  if (decodePath === 'host' && !hostDecoderSupports(model, contextLength)) {
    throw new InvalidArgumentError({
      argument: 'decodePath',
      value: decodePath,
      message: `the host decoder cannot run ${what} past its sliding window (${config.slidingWindow} positions; this generation spans ${contextLength}): use 'auto' or 'layers'`,
    })
  }
}

/**
 * Whether the host path prefills the prompt on the host too (`HostDecoder.prefill`) rather than with
 * `model.hiddenStates`: for one row whose prompt tokens × the layers' parameters are at most 150M multiply-adds.
 * There the backend's per-op cost dominates (the host prefill measured as fast or faster on the tiny and small
 * presets, WebAssembly and native TensorFlow); for several rows or long prompts the backend's products run faster
 * than the host's row-by-row prefill, so they keep `model.hiddenStates` (figures in the package README, Generation).
 */
function hostPrefills(model: CausalLanguageModel, batch: number, promptLength: number): boolean {
  const parts = architectureOf(model.config).layer(0)
  const layerParameters = [...parts.queryKeyValue, parts.output, ...parts.mlpIn, parts.mlpOut].reduce((total, part) => total + part.inputs * part.outputs, 0)
  const { numHiddenLayers } = model.config
  return batch === 1 && promptLength * layerParameters * numHiddenLayers <= hostPrefillWorkLimit
}

const hostPrefillWorkLimit = 150_000_000

/** See `chooseDecodePath`: the host decoder keeps a copy of the weights (4 bytes a parameter). */
const hostDecodeParameterLimit = 64_000_000
/** The most floats (weights, preallocated keys and values, scratch) `'auto'` lets the host decoder hold: 1 GiB. */
const hostDecodeFloatLimit = 2 ** 28
/** The most it can hold at all: a WebAssembly memory addresses 4 GiB (less a little for alignment). */
const hostDecodeFloatMaximum = 2 ** 30 - 2 ** 20

function isGpuBackend(): boolean {
  const backend = tf.backend() as unknown as { binding?: { isUsingGpuDevice?: () => boolean } }
  try {
    return backend.binding?.isUsingGpuDevice?.() === true
  } catch {
    return false
  }
}

/**
 * One row's streamed text: the tokenizer's stream decoder (or one over `decode`) turns ids into whole
 * characters; the last `longest stop string - 1` characters are held back until no stop string can begin in
 * them, so the pieces never include text a stop string later cuts. `finish` returns the rest of the final text.
 */
export function createTextStream(tokenizer: TokenizerV1, stopStrings: readonly string[]): { push(id: number): string; finish(text: string): string } {
  const decoder = tokenizer.createStreamDecoder?.() ?? createStreamDecoder((ids) => tokenizer.decode(ids))
  const heldBack = Math.max(0, ...stopStrings.map((stop) => stop.length - 1))
  let decoded = ''
  let emitted = 0
  return {
    push(id) {
      decoded += decoder.push(id)
      let end = decoded.length - heldBack
      if (end > emitted && /[\ud800-\udbff]/.test(decoded[end - 1]!)) end-- // never half of a surrogate pair
      if (end <= emitted) return ''
      const piece = decoded.slice(emitted, end)
      emitted = end
      return piece
    },
    finish(text) {
      const rest = text.slice(emitted)
      emitted = text.length
      return rest
    },
  }
}

/** Index of the earliest stop string in `text`, or undefined. */
export function firstStop(text: string, stopStrings: readonly string[]): number | undefined {
  let earliest: number | undefined
  for (const stop of stopStrings) {
    const index = text.indexOf(stop)
    if (index >= 0 && (earliest === undefined || index < earliest)) earliest = index
  }
  return earliest
}
