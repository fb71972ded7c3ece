import * as tf from '@tensorflow/tfjs-core'
import { inverseFrequencies } from '../layers/rotary-embedding.js'
import type { ModelConfig } from '../config/model-config.js'
import type { CausalLanguageModel } from '../model/causal-language-model.js'
import type { KeyValueCache } from '../model/key-value-cache.js'
import { architectureOf, type ArchitectureDefinition, type LinearPart, type NormPart } from '../model/architecture.js'
import { attendBlockLength, attendSlots, attentionSoftmax, rmsNormaliseRow, rotateAndStoreRow } from './attention-rows.js'
import { createMatmulArena, type MatmulArena } from './simd-matmul.js'

/**
 * Whether `HostDecoder` runs `model` for a `generate` of `contextLength` positions (left padding included): every
 * architecture (Llama, Qwen2, Qwen3's query/key norms, Mistral, GPT-2), but with a sliding window only where the
 * whole generation fits in it (`step` attends over padded slots; `extend` and `stepRows`, the engine's, apply the window).
 */
export function hostDecoderSupports(model: CausalLanguageModel, contextLength: number): boolean {
  const window = model.config.slidingWindow
  return window === null || contextLength <= window
}

/**
 * The floats a `HostDecoder` holds for `batch` rows of `capacity` positions, prefilling prompts of `prefillLength`
 * tokens on the host (0: not): weights, biases, norms, keys, values and scratch (each buffer rounded up to 4 floats).
 * `paging`: its keys and values in `pages` pages of `pageLength` positions instead of a row each.
 */
export function hostDecoderFloats(config: ModelConfig, batch: number, capacity: number, prefillLength = 0, paging?: HostDecoderPaging): number {
  return hostWeightFloats(config) + generationFloats(config, batch, capacity, prefillLength, paging)
}

/** A paged cache (`HostDecoder`'s `options.paging`): `pages` pages of `pageLength` positions (a multiple of 4). */
export interface HostDecoderPaging {
  pages: number
  pageLength: number
}

/**
 * The floats of the weights, biases and norms a `HostDecoder` copies (`copyHostWeights`: the architecture's parts,
 * q, k and v stacked into one buffer and gate and up into another, each buffer rounded up to 4 floats), and room for
 * an untied head's bias.
 */
export function hostWeightFloats(config: ModelConfig): number {
  const definition = architectureOf(config)
  const { hiddenSize: hidden, vocabSize, maxPositionEmbeddings, numHiddenLayers } = config
  const round = (floats: number) => Math.ceil(floats / 4) * 4
  const norm = (part: NormPart | undefined) => (part === undefined ? 0 : round(part.width) * (part.bias ? 2 : 1))
  const linears = (parts: LinearPart[]) =>
    round(parts.reduce((floats, part) => floats + part.inputs * part.outputs, 0)) +
    (parts.some((part) => part.bias) ? round(parts.reduce((floats, part) => floats + part.outputs, 0)) : 0)
  const layer = definition.layer(0)
  const perLayer =
    norm(layer.attentionNorm) +
    norm(layer.queryNorm) +
    norm(layer.keyNorm) +
    linears(layer.queryKeyValue) +
    linears([layer.output]) +
    norm(layer.mlpNorm) +
    linears(layer.mlpIn) +
    linears([layer.mlpOut])
  const positions = definition.positionEmbedding === undefined ? 0 : round(maxPositionEmbeddings * hidden)
  // An untied head's bias, which no architecture has but a model may be given (`addParameter('lm_head.bias', …)`): its room kept.
  const head = definition.head === undefined ? 0 : linears([{ ...definition.head, bias: true }])
  return numHiddenLayers * perLayer + round(vocabSize * hidden) + positions + norm(definition.finalNorm) + head
}

/**
 * The floats of one generation's keys, values and scratch for `batch` rows of `capacity` positions (a prefill of
 * `prefillLength` tokens; `paging`: the keys and values in pages).
 */
function generationFloats(config: ModelConfig, batch: number, capacity: number, prefillLength: number, paging: HostDecoderPaging | undefined): number {
  const { hiddenSize, headDim, numAttentionHeads: heads, numKeyValueHeads: keyValueHeads, intermediateSize, vocabSize, numHiddenLayers } = config
  const positions = Math.ceil(capacity / 4) * 4
  const projectedWidth = Math.max((heads + 2 * keyValueHeads) * headDim, 2 * intermediateSize)
  const cacheFloats = paging === undefined ? batch * keyValueHeads * positions * headDim : paging.pages * keyValueHeads * paging.pageLength * headDim
  const tableWidth = paging === undefined ? 1 : Math.ceil(positions / paging.pageLength)
  const rows = Math.max(batch, prefillLength)
  const scratch =
    rows * (2 * hiddenSize + Math.max(hiddenSize, intermediateSize) + projectedWidth + 2 * heads * headDim) +
    Math.max(batch * heads, prefillLength) * positions +
    batch * vocabSize +
    attendBlockLength +
    6 * batch +
    batch * tableWidth +
    2 * rows * (headDim / 2) +
    14 * 4
  return numHiddenLayers * (2 * cacheFloats + 2 * 4) + scratch
}

/**
 * One layer's weights on the host (`[out, in]` as the model stores them, q, k, v and gate, up stacked), each matrix in
 * the arena's weight layout (`allocateWeights`: 4 × 4 tiles where the kernel runs), read by `weightProduct`.
 */
interface HostLayerWeights {
  attentionNorm: Float32Array
  /** GPT-2's LayerNorm bias (`ln_1.bias`); undefined for RMSNorm. */
  attentionNormBias: Float32Array | undefined
  /** Qwen3's RMSNorm weights of each query and key head (`[headDim]`), applied before RoPE; undefined without them. */
  queryNorm: Float32Array | undefined
  keyNorm: Float32Array | undefined
  /** `[(heads + 2 · kvHeads) · headDim, hidden]`: q, k and v. */
  queryKeyValue: Float32Array
  queryKeyValueBias: Float32Array | undefined
  /** `[hidden, heads · headDim]`. */
  output: Float32Array
  outputBias: Float32Array | undefined
  mlpNorm: Float32Array
  mlpNormBias: Float32Array | undefined
  /** `[2 · intermediate, hidden]`: gate then up (GPT-2: `[intermediate, hidden]`, `c_fc`). */
  gateUp: Float32Array
  gateUpBias: Float32Array | undefined
  /** `[hidden, intermediate]`. */
  down: Float32Array
  downBias: Float32Array | undefined
}

/** One layer's keys and values for one generation. */
interface HostLayerCache {
  /** `[pages, kvHeads, pageLength, headDim]`: each position's key, a row (unpaged: a page a row, of `capacity`). */
  keys: Float32Array
  /** `[pages, kvHeads, headDim, pageLength]`: values transposed, so attention's weighted sum is a product too. */
  values: Float32Array
  /** `products: 'backend'`: this layer's product weights on the backend. */
  backend: BackendLayerWeights | undefined
}

/** A model's weights copied to the host into the front of an arena; the rest of the arena is one generation's room. */
interface HostWeights {
  arena: MatmulArena
  layers: HostLayerWeights[]
  /** `[vocab, hidden]` input embedding. */
  embedding: Float32Array
  /** `[vocab, hidden]`: the output projection (the embedding when tied). */
  head: Float32Array
  finalNorm: Float32Array
  finalNormBias: Float32Array | undefined
  headBias: Float32Array | undefined
  /** GPT-2's learned positions `[maxPositionEmbeddings, hidden]` (row-major), added to the embedding; undefined for RoPE models. */
  positionEmbedding: Float32Array | undefined
  /** The arena's bytes up to the end of the weights (where each generation's buffers begin). */
  weightsEnd: number
  /** The floats of room reserved after the weights for a generation. */
  roomFloats: number
  /** What the weights were copied from (`weightSource`): they are reused while it is unchanged. */
  source: unknown[]
  /** Whether a generation is using the arena now. */
  busy: boolean
}

/**
 * The host copy of each model's weights, kept between generations (one thread, SIMD kernel): it is reused while
 * the model's parameters hold the same data (a training step, a merge or an adapter's new values each make new
 * tensors, so new data ids) and its adapters are the same objects, merged alike — so a run of short generations
 * copies the weights once, not once a call. It lives as long as the model object (a `WeakMap`): the model's
 * float32 parameters again, on the host (`'auto'` picks the host path for models up to 64M parameters), and room
 * for one generation's keys, values and scratch of at most `hostDecodeRoomLimit` floats (a larger generation makes
 * a copy of its own, dropped after it).
 */
const hostWeightsCache = new WeakMap<CausalLanguageModel, HostWeights>()

/**
 * What the host copy of the weights depends on: the data id of every parameter (adapters' included) and each
 * attached adapter with whether it is merged. An adapter's `apply` depends on its input and the model's
 * parameters only (`LinearAdapter`), so equal sources mean equal weights.
 */
function weightSource(model: CausalLanguageModel): unknown[] {
  const source: unknown[] = []
  for (const [name, tensor] of model.parameters()) source.push(name, tensor.dataId)
  for (const [name, adapter] of model.linearAdapters()) source.push(name, adapter, adapter.merged)
  return source
}

const sameSource = (a: readonly unknown[], b: readonly unknown[]) => a.length === b.length && a.every((item, index) => item === b[index])

/**
 * The model's weights on the host, with room for `roomFloats` more: the cached copy when it is current, free
 * and large enough (`cache`), else a new one (cached when `cache`, replacing the old).
 */
function acquireHostWeights(model: CausalLanguageModel, roomFloats: number, options: { simd?: boolean; threads?: number }, cacheable: boolean): HostWeights {
  const source = weightSource(model)
  const cache = cacheable && roomFloats <= hostDecodeRoomLimit // a generation larger than the limit is not kept after it
  const cached = cache ? hostWeightsCache.get(model) : undefined
  if (cached !== undefined && !cached.busy && sameSource(cached.source, source) && cached.roomFloats >= roomFloats) {
    cached.busy = true
    return cached
  }
  // A new copy: when cached, with the old copy's room, or twice it when that was too small (fewer copies as sizes grow).
  const previousRoom = cached?.roomFloats ?? 0
  const room = !cache ? roomFloats : roomFloats <= previousRoom ? previousRoom : Math.min(Math.max(roomFloats, 2 * previousRoom), hostDecodeRoomLimit)
  const weights = copyHostWeights(model, room, options, source)
  if (cache && (cached === undefined || !cached.busy)) hostWeightsCache.set(model, weights)
  return weights
}

/** The most floats of generation room (keys, values, scratch) the cache keeps beside the weights: 64M (256 MB). */
const hostDecodeRoomLimit = 2 ** 26

let hostWeightCopies = 0

/** How many times the weights were copied to the host in this process (tests of the cache). */
/** The floats `copyHostWeights` takes for `model` (for tests: `hostWeightFloats` is checked against it). */
export function copiedHostWeightFloats(model: CausalLanguageModel): number {
  const weights = copyHostWeights(model, 0, { simd: false }, weightSource(model))
  weights.arena.dispose()
  return weights.weightsEnd / 4
}

export function hostWeightCopyCount(): number {
  return hostWeightCopies
}

function copyHostWeights(model: CausalLanguageModel, roomFloats: number, options: { simd?: boolean; threads?: number }, source: unknown[]): HostWeights {
  hostWeightCopies++
  const { config } = model
  const { hiddenSize, headDim, numAttentionHeads: heads, intermediateSize, vocabSize, numHiddenLayers } = config
  const definition = architectureOf(config)
  const arena = createMatmulArena(options)
  try {
    arena.reserve(hostWeightFloats(config) + roomFloats)
    const parameter = (name: string) => model.parameter(name).dataSync() as Float32Array
    const bias = (name: string) => model.parameters().get(`${name}.bias`)?.dataSync() as Float32Array | undefined
    /** The linear layers' weights (`[out, in]`, an unmerged adapter's update added), rows stacked, in the arena's weight layout. */
    const stack = (names: string[], columns: number) => {
      const parts = names.map((name) => linearWeight(model, name))
      if (parts.length === 1) return arena.allocateWeights(parts[0]!, parts[0]!.length / columns, columns)
      const stacked = new Float32Array(parts.reduce((total, part) => total + part.length, 0))
      let offset = 0
      for (const part of parts) {
        stacked.set(part, offset)
        offset += part.length
      }
      return arena.allocateWeights(stacked, stacked.length / columns, columns)
    }
    const joinBiases = (names: string[], widths: number[]) => {
      const parts = names.map(bias)
      if (parts.every((part) => part === undefined)) return undefined
      const joined = arena.allocate(widths.reduce((total, width) => total + width, 0))
      let offset = 0
      parts.forEach((part, index) => {
        if (part !== undefined) joined.set(part, offset)
        offset += widths[index]!
      })
      return joined
    }
    const norm = (name: string, width = hiddenSize) => {
      const weight = arena.allocate(width)
      weight.set(parameter(name))
      return weight
    }
    const normBias = (part: NormPart) => (part.bias ? norm(`${part.name}.bias`, part.width) : undefined)
    const names = (parts: LinearPart[]) => parts.map((part) => part.name)
    // The definition's parts (`architectureOf`): q, k and v stacked as the host wants them (GPT-2's `c_attn` already is),
    // gate and up stacked (GPT-2's one `c_fc`); `linearWeight` gives every weight `[out, in]` (GPT-2's `Conv1D` transposed).
    const layers: HostLayerWeights[] = []
    for (let layer = 0; layer < numHiddenLayers; layer++) {
      const parts = definition.layer(layer)
      layers.push({
        attentionNorm: norm(`${parts.attentionNorm.name}.weight`),
        attentionNormBias: normBias(parts.attentionNorm),
        queryNorm: parts.queryNorm === undefined ? undefined : norm(`${parts.queryNorm.name}.weight`, headDim),
        keyNorm: parts.keyNorm === undefined ? undefined : norm(`${parts.keyNorm.name}.weight`, headDim),
        queryKeyValue: stack(names(parts.queryKeyValue), hiddenSize),
        queryKeyValueBias: joinBiases(
          names(parts.queryKeyValue),
          parts.queryKeyValue.map((part) => part.outputs),
        ),
        output: stack([parts.output.name], heads * headDim),
        outputBias: joinBiases([parts.output.name], [hiddenSize]),
        mlpNorm: norm(`${parts.mlpNorm.name}.weight`),
        mlpNormBias: normBias(parts.mlpNorm),
        gateUp: stack(names(parts.mlpIn), hiddenSize),
        gateUpBias: joinBiases(
          names(parts.mlpIn),
          parts.mlpIn.map((part) => part.outputs),
        ),
        down: stack([parts.mlpOut.name], intermediateSize),
        downBias: joinBiases([parts.mlpOut.name], [hiddenSize]),
      })
    }
    const embedding = stack([definition.embedding.replace(/\.weight$/, '')], hiddenSize) // `[vocab, hidden]`, never a `Conv1D`
    const positionEmbedding =
      definition.positionEmbedding === undefined ? undefined : norm(definition.positionEmbedding, config.maxPositionEmbeddings * hiddenSize)
    const finalNorm = norm(`${definition.finalNorm.name}.weight`)
    const finalNormBias = normBias(definition.finalNorm)
    const head = definition.head === undefined ? embedding : stack([definition.head.name], hiddenSize)
    const headBias = definition.head === undefined ? undefined : joinBiases([definition.head.name], [vocabSize])
    return { arena, layers, embedding, head, finalNorm, finalNormBias, headBias, positionEmbedding, weightsEnd: arena.used, roomFloats, source, busy: true }
  } catch (error) {
    arena.dispose() // its worker threads back to the pool
    throw error
  }
}

/**
 * A linear layer's weight `[out, in]` as the model applies it: an attached, unmerged adapter's update added (its output
 * for the identity); GPT-2's `Conv1D` weights (`[in, out]`, `linearLayout`) transposed.
 */
function linearWeight(model: CausalLanguageModel, name: string): Float32Array {
  const { inputMajor } = model.linearLayout(name)
  const adapter = model.linearAdapters().get(name)
  if (!inputMajor && (adapter === undefined || adapter.merged)) return model.parameter(`${name}.weight`).dataSync() as Float32Array
  const effective = linearWeightTensor(model, name)
  try {
    return effective.dataSync() as Float32Array
  } finally {
    effective.dispose()
  }
}

/** `linearWeight` as a new tensor `[out, in]` on the backend (the caller disposes it). */
function linearWeightTensor(model: CausalLanguageModel, name: string): tf.Tensor2D {
  const weight = model.parameter(`${name}.weight`) as tf.Tensor2D
  const adapter = model.linearAdapters().get(name)
  const { inputs, inputMajor } = model.linearLayout(name)
  const unmerged = adapter !== undefined && !adapter.merged
  return tf.tidy((): tf.Tensor2D => {
    if (!unmerged) return inputMajor ? tf.transpose(weight) : tf.clone(weight)
    const update = adapter.apply(tf.eye(inputs), false) // [in, out]
    return (inputMajor ? tf.transpose(tf.add(weight, update)) : tf.add(weight, tf.transpose(update))) as tf.Tensor2D
  })
}

/**
 * What `backendProduct` found of one product (keyed by its first weight): the probe row, the probe row's result run with
 * a copy of itself, and per row count how many rows go in one call (all of them, two, or one given twice).
 */
interface ProductProbe {
  row: Float32Array
  reference: Float32Array
  pairs: number
  chunks: Map<number, number>
}
const productProbes = new WeakMap<tf.Tensor, ProductProbe>()

/** `columns` values in [−1, 1), the same every time: the row `backendProduct` probes a product with. */
function probeRow(columns: number): Float32Array {
  const row = new Float32Array(columns)
  let state = 12345
  for (let index = 0; index < columns; index++) {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0
    row[index] = state / 2 ** 31 - 1
  }
  return row
}

/** `product` of `count` copies of `row`, read back. */
function productOfCopies(product: (input: tf.Tensor2D) => tf.Tensor, row: Float32Array, count: number): Float32Array {
  const values = new Float32Array(count * row.length)
  for (let copy = 0; copy < count; copy++) values.set(row, copy * row.length)
  const output = tf.tidy(() => product(tf.tensor2d(values, [count, row.length])))
  try {
    return (output.dataSync() as Float32Array).slice()
  } finally {
    output.dispose()
  }
}

/** Whether every row of `result` is, bit for bit, `reference`. */
function everyRowIs(result: Float32Array, reference: Float32Array): boolean {
  for (let index = 0; index < result.length; index++) if (result[index] !== reference[index % reference.length]) return false
  return true
}

/**
 * `product` (`[rows, columns]` → `[rows, width]`, pure) of `batch` rows of `values`, each row's result independent of
 * the others and of the batch size, bit for bit. A backend's matrix product need not be: oneDNN sums a lone row in
 * another order than two, and on some CPUs (AVX2 without AVX-512) a row's sum depends on the row count and on where the
 * row stands (the kernel takes rows six at a time and the rest apart; a long inner dimension is split by the row
 * count). So the first time `product` meets a row count, one row is probed at every position of that count against the
 * same row run with a copy of itself: the same everywhere, the rows go in one call; else in calls of two rows where two
 * agree with each other, else a row at a time (given twice). The decision is kept per product (`key`) and row count.
 */
export function backendProduct(
  key: tf.Tensor,
  product: (input: tf.Tensor2D) => tf.Tensor,
  values: Float32Array,
  batch: number,
  columns: number,
  out: Float32Array,
): void {
  let probe = productProbes.get(key)
  if (probe === undefined) {
    const row = probeRow(columns)
    const two = productOfCopies(product, row, 2)
    const reference = two.slice(0, two.length / 2)
    const pairs = everyRowIs(two, reference) ? 2 : 1
    probe = { row, reference, pairs, chunks: new Map() }
    productProbes.set(key, probe)
  }
  let chunk = probe.chunks.get(batch)
  if (chunk === undefined) {
    chunk = batch <= 2 || !everyRowIs(productOfCopies(product, probe.row, batch), probe.reference) ? probe.pairs : batch
    probe.chunks.set(batch, chunk)
  }
  for (let start = 0; start < batch; start += chunk) {
    const count = Math.min(chunk, batch - start)
    const rows = Math.max(count, 2) // a lone row given twice
    const input = new Float32Array(rows * columns)
    input.set(values.subarray(start * columns, (start + count) * columns))
    if (count === 1) input.set(values.subarray(start * columns, (start + 1) * columns), columns)
    const output = tf.tidy(() => product(tf.tensor2d(input, [rows, columns])))
    try {
      const result = output.dataSync() as Float32Array
      const width = result.length / rows
      out.set(result.subarray(0, count * width), start * width) // a padded second row left out
    } finally {
      output.dispose()
    }
  }
}

/** One layer's weight products on the TensorFlow.js backend (`HostDecoder`'s `products: 'backend'`): each `[in, out]`. */
interface BackendLayerWeights {
  queryKeyValue: tf.Tensor2D
  output: tf.Tensor2D
  gateUp: tf.Tensor2D
  down: tf.Tensor2D
}

/**
 * The weights of every product as backend tensors `[in, out]` (q, k, v and gate, up stacked as on the host; the head
 * the tied embedding or `lm_head`), for `products: 'backend'`; the caller disposes them.
 */
function backendWeights(model: CausalLanguageModel): { layers: BackendLayerWeights[]; head: tf.Tensor2D } {
  const { config } = model
  const made: tf.Tensor[] = []
  const stacked = (names: string[]) => {
    const weight = tf.tidy(() => {
      const parts = names.map((name) => linearWeightTensor(model, name))
      return tf.transpose(parts.length === 1 ? parts[0]! : tf.concat(parts, 0)) as tf.Tensor2D
    })
    made.push(weight)
    return weight
  }
  try {
    const definition = architectureOf(config)
    const names = (parts: LinearPart[]) => parts.map((part) => part.name)
    const layers: BackendLayerWeights[] = []
    for (let layer = 0; layer < config.numHiddenLayers; layer++) {
      const parts = definition.layer(layer)
      layers.push({
        queryKeyValue: stacked(names(parts.queryKeyValue)),
        output: stacked([parts.output.name]),
        gateUp: stacked(names(parts.mlpIn)),
        down: stacked([parts.mlpOut.name]),
      })
    }
    const head =
      definition.head === undefined ? (tf.tidy(() => tf.transpose(model.parameter(definition.embedding))) as tf.Tensor2D) : stacked([definition.head.name])
    return { layers, head }
  } catch (error) {
    tf.dispose(made) // what was made before the failure (the backend out of memory)
    throw error
  }
}

/**
 * Single-token decode steps computed on the host, for small models: the same function as `FusedDecoder` (q, k, v
 * and gate, up stacked) with every product — the projections for all rows at once, attention's scores and
 * weighted sums — in one small WebAssembly SIMD kernel (`createMatmulArena`), the rest (norms, RoPE, softmax,
 * SiLU) in JavaScript over `Float32Array`s, and the keys and values in preallocated buffers written in place. No
 * op reaches the TensorFlow.js backend during a step, so the per-op cost that dominates small models there (tens
 * of microseconds a call on the native backend) is gone. The weights are copied to the host once and reused by
 * later decoders of the same model while its parameters and adapters are unchanged (`hostWeightsCache`; one
 * thread only). Sums run in float32 SIMD lanes or float64 scalars: results equal the TensorFlow.js paths up to
 * float32 rounding. With `threads` > 1 the weight products, and the engine's attention (`stepRows`' rows, `extend`'s
 * parts: `attention-rows.ts`), are shared with worker threads (same results, bit for bit); `step`'s and `prefill`'s
 * attention and the rest stay on the calling thread.
 */
export class HostDecoder {
  /** The weights (kept or this decoder's own) and the arena holding them and this generation's buffers. */
  private readonly weights: HostWeights
  private disposed = false
  private readonly layers: (HostLayerWeights & HostLayerCache)[]
  private readonly inverseFrequency: Float32Array
  /** The architecture's definition: its positions (rotary or learned, added to the embedding) and its MLP's activation. */
  private readonly definition: ArchitectureDefinition
  /** Positions a row can hold, rounded up to a multiple of 4 (the kernel's column block). */
  private readonly capacity: number
  /** Positions per page of the cache: `capacity` unpaged (a row is its own page), else `options.paging.pageLength`. */
  private readonly pageLength: number
  /** Pages of the cache (unpaged: `batch`). */
  readonly pages: number
  /** Whether rows hold their positions in pages their tables name (`options.paging`; `setPageTable`). */
  private readonly paged: boolean
  /** `[batch, tableWidth]`: each row's pages (-1: none); unpaged, row `r`'s one page is page `r`. */
  private readonly tables: Int32Array
  private readonly tableWidth: number
  /** `[rows, heads · headDim]`: a page's share of a weighted sum (`pagedWeightedSum`). */
  private readonly partial: Float32Array
  private length = 0
  // Scratch, [batch, …] each.
  private readonly x: Float32Array
  private readonly normed: Float32Array
  private readonly projected: Float32Array
  private readonly attended: Float32Array
  private readonly delta: Float32Array
  private readonly scores: Float32Array
  private readonly logits: Float32Array
  private readonly projectedWidth: number
  private readonly prefillLength: number
  /** The attention rows' parameter block (`attendSlots`), its rows' slots and positions, and their RoPE angles. */
  private readonly attendBlock: Int32Array
  private readonly rowSlots: Int32Array
  private readonly rowPositions: Int32Array
  /** A prefill's parts (`attendParts`): cache row, first position, tokens, first row of `projected`, four ints each. */
  private readonly partTable: Int32Array
  private readonly cos: Float32Array
  private readonly sin: Float32Array
  /** The arena's whole memory as floats and ints (`attention-rows.ts`' functions index it). */
  private readonly arenaFloats: Float32Array
  private readonly attendBlockInts: Int32Array
  /** `products: 'backend'`: the weight products' weights on the TensorFlow.js backend (this decoder's, freed by `dispose`). */
  private readonly backend: { layers: BackendLayerWeights[]; head: tf.Tensor2D } | undefined

  /**
   * `capacity`: the most positions a row will hold (prompt, padding included, plus new tokens); `batch`: rows.
   * `options.simd: false` runs the products in JavaScript (for tests; the kernel is used where available);
   * `options.threads` (default 1): threads sharing the weight products and the engine's attention (see `createMatmulArena`);
   * `options.prefillLength` (default 0): the prompt length (padding included) `prefill` will take;
   * `options.products` (default `'host'`): where the weight products run — `'host'` (the WebAssembly kernel) or
   * `'backend'` (`tf.matMul` on the TensorFlow.js backend, the decoder's own copy of the weights there, and the SwiGLU
   * MLP's activation with them): for native TensorFlow, whose multithreaded products are faster at large batches. A
   * row's results still do not depend on the batch: `backendProduct` probes each product at each row count and splits
   * the rows where the backend's product of a row would depend on them. `options.paging`: the keys and values in `pages` pages of
   * `pageLength` positions that rows name in their page tables (`setPageTable`; the engine's paged cache, for `extend`,
   * `stepRows` and the position copies; `step`, `prefill` and `adoptCache` are unpaged only). Call `dispose` when done:
   * the weights go back to the cache (or the worker threads to their pool).
   */
  constructor(
    private readonly model: CausalLanguageModel,
    private readonly batch: number,
    capacity: number,
    options: { simd?: boolean; threads?: number; prefillLength?: number; products?: 'host' | 'backend'; paging?: HostDecoderPaging } = {},
  ) {
    const { config } = model
    const { hiddenSize, headDim, numAttentionHeads: heads, numKeyValueHeads: keyValueHeads, intermediateSize, vocabSize } = config
    this.capacity = Math.ceil(capacity / 4) * 4
    const { paging } = options
    if (
      paging !== undefined &&
      !(Number.isInteger(paging.pageLength) && paging.pageLength >= 4 && paging.pageLength % 4 === 0 && Number.isInteger(paging.pages) && paging.pages >= 1)
    )
      throw new RangeError(`HostDecoder: paging of ${paging.pages} pages of ${paging.pageLength} positions (a multiple of 4)`)
    this.paged = paging !== undefined
    this.pageLength = paging?.pageLength ?? this.capacity
    this.pages = paging?.pages ?? batch
    this.tableWidth = Math.ceil(this.capacity / this.pageLength)
    this.inverseFrequency = inverseFrequencies(headDim, config.ropeTheta, config.ropeScaling)
    this.definition = architectureOf(config)
    this.prefillLength = options.prefillLength ?? 0
    const cacheable = options.simd !== false && (options.threads ?? 1) <= 1
    this.weights = acquireHostWeights(model, generationFloats(config, batch, this.capacity, this.prefillLength, paging), options, cacheable)
    try {
      this.backend = options.products === 'backend' ? backendWeights(model) : undefined
    } catch (error) {
      this.dispose() // the host weights back to the cache
      throw error
    }
    const { arena } = this.weights
    const queryKeyValueWidth = (heads + 2 * keyValueHeads) * headDim
    this.projectedWidth = Math.max(queryKeyValueWidth, 2 * intermediateSize)
    const cacheFloats = this.pages * keyValueHeads * this.pageLength * headDim
    const rows = Math.max(batch, this.prefillLength)
    try {
      // A paged cache is cleared a page at a time as the engine takes them (`clearPage`): not all of it per decoder.
      this.layers = this.weights.layers.map((layer, index) => ({
        ...layer,
        keys: arena.allocate(cacheFloats, !this.paged),
        values: arena.allocate(cacheFloats, !this.paged),
        backend: this.backend?.layers[index],
      }))
      this.x = arena.allocate(rows * hiddenSize)
      this.normed = arena.allocate(rows * Math.max(hiddenSize, intermediateSize))
      this.projected = arena.allocate(rows * this.projectedWidth)
      this.attended = arena.allocate(rows * heads * headDim)
      this.partial = arena.allocate(rows * heads * headDim)
      this.delta = arena.allocate(rows * hiddenSize)
      this.scores = arena.allocate(Math.max(batch * heads, this.prefillLength) * this.capacity)
      this.logits = arena.allocate(batch * vocabSize)
      this.attendBlock = arena.allocateInts(attendBlockLength)
      this.rowSlots = arena.allocateInts(batch)
      this.rowPositions = arena.allocateInts(batch)
      this.partTable = arena.allocateInts(4 * batch)
      this.tables = arena.allocateInts(batch * this.tableWidth)
      if (this.paged) this.tables.fill(-1)
      else for (let row = 0; row < batch; row++) this.tables[row] = row
      this.cos = arena.allocate(rows * (headDim / 2))
      this.sin = arena.allocate(rows * (headDim / 2))
      this.arenaFloats = new Float32Array(this.attendBlock.buffer)
      this.attendBlockInts = new Int32Array(this.attendBlock.buffer)
      this.fillAttendBlock()
    } catch (error) {
      this.dispose()
      throw error
    }
  }

  /** The parameter block's fixed slots (sizes and buffers); `useLayer` sets a layer's. */
  private fillAttendBlock(): void {
    const { config } = this.model
    const block = this.attendBlock
    const at = (array: Float32Array | Int32Array) => array.byteOffset / 4
    block[attendSlots.heads] = config.numAttentionHeads
    block[attendSlots.keyValueHeads] = config.numKeyValueHeads
    block[attendSlots.headDim] = config.headDim
    block[attendSlots.pageLength] = this.pageLength
    block[attendSlots.projectedWidth] = this.projectedWidth
    block[attendSlots.window] = config.slidingWindow ?? -1
    block[attendSlots.rope] = this.definition.positions === 'rotary' ? 1 : 0
    block[attendSlots.projected] = at(this.projected)
    block[attendSlots.scores] = at(this.scores)
    block[attendSlots.attended] = at(this.attended)
    block[attendSlots.cos] = at(this.cos)
    block[attendSlots.sin] = at(this.sin)
    block[attendSlots.slots] = at(this.rowSlots)
    block[attendSlots.positions] = at(this.rowPositions)
    block[attendSlots.parts] = at(this.partTable)
    block[attendSlots.tables] = at(this.tables)
    block[attendSlots.tableWidth] = this.tableWidth
    block[attendSlots.scoreStride] = this.capacity
    block[attendSlots.partial] = at(this.partial)
    new Float64Array(block.buffer, block.byteOffset + attendSlots.epsilon * 4, 1)[0] = config.rmsNormEps
  }

  /** Points the parameter block at `layer`'s cache and head norms. */
  private useLayer(layer: HostLayerWeights & HostLayerCache): void {
    const block = this.attendBlock
    block[attendSlots.keys] = layer.keys.byteOffset / 4
    block[attendSlots.values] = layer.values.byteOffset / 4
    block[attendSlots.queryNorm] = layer.queryNorm === undefined ? -1 : layer.queryNorm.byteOffset / 4
    block[attendSlots.keyNorm] = layer.keyNorm === undefined ? -1 : layer.keyNorm.byteOffset / 4
  }

  private get arena(): MatmulArena {
    return this.weights.arena
  }

  /** Whether the products run in the WebAssembly SIMD kernel (else JavaScript). */
  get simd(): boolean {
    return this.arena.simd
  }

  /** Threads sharing the weight products and each step's attention rows: 1, or 1 + the worker threads lent to this decoder. */
  get threads(): number {
    return this.arena.threads
  }

  /** Chunks of shared work (products, attention rows) that worker threads ran so far (0 on one thread). */
  get helperChunks(): number {
    return this.arena.helperChunks
  }

  /** Of them, chunks of attention (a decode step's rows, a prefill's parts). */
  get helperAttentionChunks(): number {
    return this.arena.helperAttentionChunks
  }

  /**
   * Ends this decoder: its keys, values and scratch are freed and the weights go back to the cache for the next
   * generation of the model (uncached: the worker threads go back to their pool). Not to be stepped after.
   */
  dispose(): void {
    if (this.disposed) return
    this.disposed = true
    this.arena.rewind(this.weights.weightsEnd)
    this.weights.busy = false
    this.arena.dispose() // lent worker threads back to their pool (a kept copy has none)
    if (this.backend !== undefined) tf.dispose([...this.backend.layers.flatMap((layer) => Object.values(layer)), this.backend.head])
  }

  /** Copies the keys and values of a prefilled `cache` into the host buffers; the cache's tensors are freed. */
  adoptCache(cache: KeyValueCache): void {
    this.unpagedOnly('adoptCache')
    const { numKeyValueHeads: keyValueHeads, headDim } = this.model.config
    const { capacity } = this
    const taken = cache.take()
    try {
      const length = taken.keys[0]!.shape[2]
      if (length > capacity) throw new RangeError(`HostDecoder: the cache holds ${length} positions, past its capacity of ${capacity}`)
      this.length = length
      this.layers.forEach((layer, index) => {
        const keys = taken.keys[index]!.dataSync() as Float32Array // [batch, kvHeads, length, headDim]
        const values = taken.values[index]!.dataSync() as Float32Array
        for (let block = 0; block < this.batch * keyValueHeads; block++) {
          layer.keys.set(keys.subarray(block * length * headDim, (block + 1) * length * headDim), block * capacity * headDim)
          for (let position = 0; position < length; position++) {
            for (let dimension = 0; dimension < headDim; dimension++) {
              layer.values[(block * headDim + dimension) * capacity + position] = values[(block * length + position) * headDim + dimension]!
            }
          }
        }
      })
    } finally {
      tf.dispose([...taken.keys, ...taken.values])
    }
  }

  /**
   * Prefills the prompts on the host instead of `model.hiddenStates` + `adoptCache`: `inputRows[row]` left-padded
   * to one length (at most the `prefillLength` given), `maskRows[row]` 1 on its tokens (a run of 0s first, then
   * 1s). Each row's tokens take positions 0, 1, … (as `model.hiddenStates` counts them under left padding); their
   * keys and values are written at their slots, the padding slots left zero (masked in the steps after). Every
   * product of a row's tokens runs as one kernel call (the tokens are the product's batch), attention causal over
   * the row's own tokens. Returns the last position's next-token logits `[batch · vocab]` (a new array).
   */
  prefill(inputRows: readonly Int32Array[], maskRows: readonly Int32Array[]): Float32Array {
    const { config } = this.model
    const { hiddenSize, headDim, numAttentionHeads: heads, numKeyValueHeads: keyValueHeads, vocabSize, rmsNormEps } = config
    this.unpagedOnly('prefill')
    const { arena, x, normed, projected, attended, scores, capacity, projectedWidth } = this
    const length = inputRows[0]!.length
    if (inputRows.length !== this.batch || length > this.prefillLength || length > capacity)
      throw new RangeError(
        `HostDecoder.prefill: ${inputRows.length} rows of ${length} tokens, for ${this.batch} rows of at most ${Math.min(this.prefillLength, capacity)}`,
      )
    const groups = heads / keyValueHeads
    const queryWidth = heads * headDim
    const lengthPadded = Math.ceil(length / 4) * 4
    const scale = 1 / Math.sqrt(headDim)
    inputRows.forEach((tokens, row) => {
      const mask = maskRows[row]!
      const start = mask.indexOf(1)
      if (start < 0 || mask.subarray(start).includes(0)) throw new RangeError(`HostDecoder.prefill: row ${row}'s mask is not left padding`)
      const count = length - start
      const positions = Int32Array.from({ length: count }, (_, index) => index)
      for (let index = 0; index < count; index++) this.embed(tokens[start + index]!, positions[index]!, index)
      this.rotations(positions)
      for (const layer of this.layers) {
        this.useLayer(layer)
        this.projectQueryKeyValue(layer, count)
        for (let index = 0; index < count; index++) this.rotateAndStore(index, row, start + index)
        for (let group = 0; group < keyValueHeads; group++) {
          const block = row * keyValueHeads + group
          for (let member = 0; member < groups; member++) {
            const head = group * groups + member
            // scores[t, j] = q_t · k_j over every slot j < length (padding keys are zero, masked below).
            arena.matmul(
              layer.keys.subarray(block * capacity * headDim),
              projected.subarray(head * headDim),
              scores,
              length,
              headDim,
              count,
              headDim,
              projectedWidth,
              capacity,
            )
            // Causal over the row's own tokens: token t attends to slots start … start + t.
            for (let index = 0; index < count; index++) attentionSoftmax(scores, index * capacity, start, start + index + 1, lengthPadded, scale, undefined, 0)
            // attended_t = Σ_j p[t, j] v_j (values stored transposed: a product).
            arena.matmul(
              layer.values.subarray(block * headDim * capacity),
              scores,
              attended.subarray(head * headDim),
              headDim,
              lengthPadded,
              count,
              capacity,
              capacity,
              queryWidth,
            )
          }
        }
        this.outputAndMlp(layer, count)
      }
      // The last token's logits.
      const last = x.subarray((count - 1) * hiddenSize, count * hiddenSize)
      normalise(last, this.weights.finalNorm, this.weights.finalNormBias, normed, 1, hiddenSize, rmsNormEps)
      this.weightProduct(this.weights.head, this.backend?.head, normed, this.logits.subarray(row * vocabSize), vocabSize, hiddenSize, 1, hiddenSize, vocabSize)
    })
    addBias(this.logits, this.weights.headBias, this.batch, vocabSize, vocabSize)
    this.length = length
    return this.logits.slice()
  }

  /**
   * One decode step (see `FusedDecoder.step`): `tokens[row]` at `positions[row]`, `padding` the additive bias
   * `[batch · (length + 1)]` or undefined. Returns the next-token logits `[batch · vocab]` (a new array).
   */
  step(tokens: Int32Array, positions: Int32Array, padding: Float32Array | undefined): Float32Array {
    this.unpagedOnly('step')
    const { capacity, batch } = this
    const length = this.length + 1
    if (length > capacity) throw new RangeError(`HostDecoder: ${length} positions exceed its capacity of ${capacity}`)
    for (let row = 0; row < batch; row++) this.embed(tokens[row]!, positions[row]!, row)
    this.rotations(positions)
    for (const layer of this.layers) {
      this.useLayer(layer)
      this.projectQueryKeyValue(layer, batch)
      for (let row = 0; row < batch; row++) {
        this.rotateAndStore(row, row, length - 1)
        // Scores over the `length` slots (the padding's bias masks some), as this path always computed them.
        this.attendOneToken(layer, row, length, padding)
      }
      this.outputAndMlp(layer, batch)
    }
    this.nextTokenLogits(batch)
    this.length = length
    return this.logits.slice()
  }

  /**
   * Feeds each part's `tokens` to its row `slot` at positions `start … start + count - 1` (a slot's positions count
   * from its first token, no padding): each token attends causally to its row's positions 0 … its own, whose keys and
   * values (`start` of them already there) it extends. The parts' weight products run as one (their tokens are the
   * product's batch); attention runs per part. At most `prefillLength` tokens a call, a row at most once; no logits
   * (the engine feeds a sequence's last token through `stepRows`). `GenerationEngine`'s chunked prefill and its
   * recomputation after new weights; a token's keys and values do not depend on how its sequence was chunked or on
   * the other parts.
   */
  extend(parts: readonly { slot: number; tokens: Int32Array; start: number }[]): void {
    const { capacity } = this
    const total = parts.reduce((sum, part) => sum + part.tokens.length, 0)
    const seen = new Set<number>()
    for (const { slot, tokens, start } of parts) {
      if (
        !(slot >= 0 && slot < this.batch) ||
        seen.has(slot) ||
        tokens.length === 0 ||
        !(start >= 0) ||
        start + tokens.length > capacity ||
        !this.holdsPosition(slot, start + tokens.length - 1)
      )
        throw new RangeError(
          `HostDecoder.extend: ${tokens.length} tokens from position ${start} of row ${slot}, for ${this.batch} rows of ${capacity} positions, each row once (its pages given)`,
        )
      seen.add(slot)
    }
    if (total === 0 || total > this.prefillLength) throw new RangeError(`HostDecoder.extend: ${total} tokens, for 1 … ${this.prefillLength} a call`)
    const positions = new Int32Array(total)
    let offset = 0
    parts.forEach(({ slot, tokens, start }, part) => {
      for (let index = 0; index < tokens.length; index++) {
        positions[offset + index] = start + index
        this.embed(tokens[index]!, start + index, offset + index)
      }
      this.partTable.set([slot, start, tokens.length, offset], 4 * part)
      offset += tokens.length
    })
    this.rotations(positions)
    for (const layer of this.layers) {
      this.useLayer(layer)
      this.projectQueryKeyValue(layer, total)
      // Each part's RoPE, cache writes and causal attention (`attendParts`), the parts shared with the arena's helper threads where it has them.
      this.arena.attend('parts', this.attendBlock, parts.length)
      this.outputAndMlp(layer, total)
    }
  }

  /**
   * One decode step for some rows, each at its own length: `tokens[i]` goes to row `slots[i]` at position
   * `lengths[i]` (the positions it holds already) and attends to its positions 0 … `lengths[i]`. Returns the
   * next-token logits `[slots.length · vocab]`: a view of the decoder's buffer, valid until its next call (no copy a step). Each row's result depends on its own keys, values and
   * token only (the products run per row), not on which other rows step with it.
   */
  stepRows(slots: Int32Array, tokens: Int32Array, lengths: Int32Array): Float32Array {
    const { vocabSize } = this.model.config
    const { capacity } = this
    const rows = slots.length
    if (rows === 0 || rows > this.batch || tokens.length !== rows || lengths.length !== rows)
      throw new RangeError(`HostDecoder.stepRows: ${rows} rows (${tokens.length} tokens, ${lengths.length} lengths), for at most ${this.batch}`)
    const seen = new Set<number>()
    for (let index = 0; index < rows; index++) {
      if (
        !(slots[index]! >= 0 && slots[index]! < this.batch) ||
        !(lengths[index]! >= 0 && lengths[index]! < capacity) ||
        seen.has(slots[index]!) ||
        !this.holdsPosition(slots[index]!, lengths[index]!)
      )
        throw new RangeError(
          `HostDecoder.stepRows: row ${slots[index]} at position ${lengths[index]}, for ${this.batch} rows of ${capacity} positions, each row once (its pages given)`,
        )
      seen.add(slots[index]!)
    }
    for (let index = 0; index < rows; index++) this.embed(tokens[index]!, lengths[index]!, index)
    this.rotations(lengths)
    this.rowSlots.set(slots)
    this.rowPositions.set(lengths) // the position each row's token takes
    for (const layer of this.layers) {
      this.useLayer(layer)
      this.projectQueryKeyValue(layer, rows)
      // Each row's RoPE, cache write and attention (scores over every slot to a multiple of 4, as in `extend`), the rows
      // shared with the arena's helper threads where it has them.
      this.arena.attend('rows', this.attendBlock, rows)
      this.outputAndMlp(layer, rows)
    }
    this.nextTokenLogits(rows)
    return this.logits.subarray(0, rows * vocabSize) // a view: read before the next call
  }

  /**
   * Row `slot`'s pages (paged decoders only): its positions `i · pageLength …` in page `pages[i]`, every page of
   * `0 … pages.length - 1`. Several rows may name one page (a shared prefix: only its positions below every sharer's
   * own are read; a row writes only positions past those it shares). The row's other entries are emptied.
   */
  setPageTable(slot: number, pages: ArrayLike<number>): void {
    if (!this.paged) throw new RangeError('HostDecoder.setPageTable: an unpaged decoder (each row is its own page)')
    if (!(slot >= 0 && slot < this.batch) || pages.length > this.tableWidth)
      throw new RangeError(`HostDecoder.setPageTable: ${pages.length} pages for row ${slot}, for ${this.batch} rows of at most ${this.tableWidth}`)
    const at = slot * this.tableWidth
    for (let index = 0; index < pages.length; index++) {
      const page = pages[index]!
      if (!(Number.isInteger(page) && page >= 0 && page < this.pages)) throw new RangeError(`HostDecoder.setPageTable: page ${page}, of ${this.pages}`)
      this.tables[at + index] = page
    }
    this.tables.fill(-1, at + pages.length, at + this.tableWidth)
  }

  /**
   * Zeroes page `page`'s keys and values, every layer (paged decoders: a page's memory holds what an earlier decoder
   * left there until then, and attention reads a page's positions past a row's length, weighted 0, up to a multiple of 4).
   */
  clearPage(page: number): void {
    if (!(page >= 0 && page < this.pages)) throw new RangeError(`HostDecoder.clearPage: page ${page}, of ${this.pages}`)
    const floats = this.model.config.numKeyValueHeads * this.pageLength * this.model.config.headDim
    for (const layer of this.layers) {
      layer.keys.fill(0, page * floats, (page + 1) * floats)
      layer.values.fill(0, page * floats, (page + 1) * floats)
    }
  }

  /** Copies the keys and values of page `from`'s first `count` positions to page `to` (a shared prefix's last, partial page). */
  copyPage(from: number, to: number, count: number): void {
    const { numKeyValueHeads: keyValueHeads, headDim } = this.model.config
    const { pageLength } = this
    if (!(from >= 0 && from < this.pages && to >= 0 && to < this.pages && count >= 0 && count <= pageLength))
      throw new RangeError(`HostDecoder.copyPage: ${count} positions from page ${from} to page ${to}, for ${this.pages} pages of ${pageLength}`)
    if (from === to || count === 0) return
    for (const layer of this.layers) {
      for (let group = 0; group < keyValueHeads; group++) {
        const source = from * keyValueHeads + group
        const target = to * keyValueHeads + group
        layer.keys.copyWithin(target * pageLength * headDim, source * pageLength * headDim, (source * pageLength + count) * headDim)
        for (let dimension = 0; dimension < headDim; dimension++) {
          const start = (source * headDim + dimension) * pageLength
          layer.values.copyWithin((target * headDim + dimension) * pageLength, start, start + count)
        }
      }
    }
  }

  /**
   * Row `slot`'s keys and values of its first `count` positions, every layer: `keys[layer]` and `values[layer]` each
   * `[kvHeads, count, headDim]` (new arrays; values back in the model's layout).
   */
  readPositions(slot: number, count: number): { keys: Float32Array[]; values: Float32Array[] } {
    const { numKeyValueHeads: keyValueHeads, headDim } = this.model.config
    const { pageLength } = this
    if (!(slot >= 0 && slot < this.batch && count >= 0 && count <= this.capacity && (count === 0 || this.holdsPosition(slot, count - 1))))
      throw new RangeError(`HostDecoder.readPositions: ${count} positions of row ${slot}`)
    const keys: Float32Array[] = []
    const values: Float32Array[] = []
    for (const layer of this.layers) {
      const layerKeys = new Float32Array(keyValueHeads * count * headDim)
      const layerValues = new Float32Array(keyValueHeads * count * headDim)
      for (let group = 0; group < keyValueHeads; group++) {
        for (let position = 0; position < count; position++) {
          const block = this.pageOf(slot, position) * keyValueHeads + group
          const offset = position % pageLength
          const target = (group * count + position) * headDim
          layerKeys.set(layer.keys.subarray((block * pageLength + offset) * headDim, (block * pageLength + offset + 1) * headDim), target)
          for (let dimension = 0; dimension < headDim; dimension++)
            layerValues[target + dimension] = layer.values[(block * headDim + dimension) * pageLength + offset]!
        }
      }
      keys.push(layerKeys)
      values.push(layerValues)
    }
    return { keys, values }
  }

  /**
   * Writes keys and values computed elsewhere (`[batch, kvHeads, length, headDim]` of one layer, as a `KeyValueCache`
   * holds them, keys rotated) into row `slot`: source row `row`'s positions `from … from + count - 1` go to the slot's
   * positions `start …`.
   */
  writePositions(
    layerIndex: number,
    slot: number,
    start: number,
    keys: Float32Array,
    values: Float32Array,
    source: { row: number; length: number; from: number; count: number },
  ): void {
    const { numKeyValueHeads: keyValueHeads, headDim } = this.model.config
    const { pageLength } = this
    const { row, length, from, count } = source
    if (
      !(slot >= 0 && slot < this.batch && start >= 0 && start + count <= this.capacity && from >= 0 && from + count <= length) ||
      (count > 0 && !this.holdsPosition(slot, start + count - 1))
    )
      throw new RangeError(`HostDecoder.writePositions: ${count} positions to row ${slot} from ${start}`)
    const layer = this.layers[layerIndex]!
    for (let group = 0; group < keyValueHeads; group++) {
      const base = ((row * keyValueHeads + group) * length + from) * headDim
      for (let index = 0; index < count; index++) {
        const position = start + index
        const block = this.pageOf(slot, position) * keyValueHeads + group
        const offset = position % pageLength
        const at = base + index * headDim
        layer.keys.set(keys.subarray(at, at + headDim), (block * pageLength + offset) * headDim)
        for (let dimension = 0; dimension < headDim; dimension++) layer.values[(block * headDim + dimension) * pageLength + offset] = values[at + dimension]!
      }
    }
  }

  /** Whether row `slot`'s table names the pages of its positions `0 … position` (tables name their pages from the first). */
  private holdsPosition(slot: number, position: number): boolean {
    return this.pageOf(slot, position) >= 0
  }

  /** The page row `slot`'s table names for its position `position` (-1: none). */
  private pageOf(slot: number, position: number): number {
    return this.tables[slot * this.tableWidth + Math.floor(position / this.pageLength)]!
  }

  private unpagedOnly(method: string): void {
    if (this.paged) throw new RangeError(`HostDecoder.${method}: unpaged decoders only (this one's cache is in pages)`)
  }

  /** Whether these are the weights the model has now (its parameters' data and adapters unchanged since the copy). */
  weightsCurrent(): boolean {
    return sameSource(this.weights.source, weightSource(this.model))
  }

  /**
   * `step`'s attention of row `row`'s new token (its key and value already stored at slot `length - 1`) over the row's
   * slots `0 … length - 1`, every query head, into `attended` row `row`: the scores of exactly `length` slots (as this
   * path always computed them), the padding's bias `padding[row · length + slot]` added when given.
   */
  private attendOneToken(layer: HostLayerWeights & HostLayerCache, row: number, length: number, padding: Float32Array | undefined): void {
    const { headDim, numAttentionHeads: heads, numKeyValueHeads: keyValueHeads } = this.model.config
    const { arena, projected, attended, scores, capacity, projectedWidth } = this
    const groups = heads / keyValueHeads
    const scale = 1 / Math.sqrt(headDim)
    const lengthPadded = Math.ceil(length / 4) * 4
    for (let group = 0; group < keyValueHeads; group++) {
      const block = row * keyValueHeads + group
      const query = projected.subarray(row * projectedWidth + group * groups * headDim)
      const rowScores = scores.subarray(row * heads * capacity + group * groups * capacity)
      // scores[j, t] = q_j · k_t for the `groups` query heads sharing this key/value head.
      arena.matmul(layer.keys.subarray(block * capacity * headDim), query, rowScores, length, headDim, groups, headDim, headDim, capacity)
      for (let member = 0; member < groups; member++) attentionSoftmax(rowScores, member * capacity, 0, length, lengthPadded, scale, padding, row * length)
      // attended_j = Σ_t p[j, t] v_t: values are stored transposed, so this is a product too.
      arena.matmul(
        layer.values.subarray(block * headDim * capacity),
        rowScores,
        attended.subarray(row * heads * headDim + group * groups * headDim),
        headDim,
        lengthPadded,
        groups,
        capacity,
        capacity,
        headDim,
      )
    }
  }

  /** The final norm and the output projection of `rows` rows of `x` into `logits` (the head's bias added). */
  private nextTokenLogits(rows: number): void {
    const { hiddenSize, vocabSize, rmsNormEps } = this.model.config
    normalise(this.x, this.weights.finalNorm, this.weights.finalNormBias, this.normed, rows, hiddenSize, rmsNormEps)
    this.weightProduct(this.weights.head, this.backend?.head, this.normed, this.logits, vocabSize, hiddenSize, rows, hiddenSize, vocabSize)
    addBias(this.logits, this.weights.headBias, rows, vocabSize, vocabSize)
  }

  /**
   * Token `token` at `position` into row `index` of `x`: its embedding, plus GPT-2's learned position (a position past
   * them a `RangeError`; `model.maxContextTokens` keeps generations within them).
   */
  private embed(token: number, position: number, index: number): void {
    const { hiddenSize, maxPositionEmbeddings } = this.model.config
    const { x } = this
    this.arena.copyWeightRow(this.weights.embedding, token, hiddenSize, x, index * hiddenSize)
    const table = this.weights.positionEmbedding
    if (table === undefined) return
    if (!(position >= 0 && position < maxPositionEmbeddings))
      throw new RangeError(`HostDecoder: position ${position}, past GPT-2's learned positions 0 … ${maxPositionEmbeddings - 1}`)
    const base = index * hiddenSize
    const from = position * hiddenSize
    for (let column = 0; column < hiddenSize; column++) x[base + column] = x[base + column]! + table[from + column]!
  }

  /** RoPE's cos and sin for each of `positions` into `cos` and `sin` (`[positions.length · headDim / 2]`, float32; none with learned positions). */
  private rotations(positions: Int32Array): void {
    if (this.definition.positions !== 'rotary') return
    const half = this.model.config.headDim / 2
    const { cos, sin, inverseFrequency } = this
    positions.forEach((position, row) => {
      for (let index = 0; index < half; index++) {
        const angle = Math.fround(position * inverseFrequency[index]!)
        cos[row * half + index] = Math.cos(angle)
        sin[row * half + index] = Math.sin(angle)
      }
    })
  }

  /** The attention norm of `rows` rows of `x`, then q, k and v of each (`projected`, biases added). */
  private projectQueryKeyValue(layer: HostLayerWeights & HostLayerCache, rows: number): void {
    const { hiddenSize, headDim, numAttentionHeads: heads, numKeyValueHeads: keyValueHeads, rmsNormEps } = this.model.config
    const width = (heads + 2 * keyValueHeads) * headDim
    normalise(this.x, layer.attentionNorm, layer.attentionNormBias, this.normed, rows, hiddenSize, rmsNormEps)
    this.weightProduct(layer.queryKeyValue, layer.backend?.queryKeyValue, this.normed, this.projected, width, hiddenSize, rows, hiddenSize, this.projectedWidth)
    addBias(this.projected, layer.queryKeyValueBias, rows, width, this.projectedWidth)
  }

  /**
   * Qwen3's head norms and RoPE on every q and k head of `projected` row `index` (its angles at `index` of `cos`/`sin`),
   * then its key and value written into the cache of `row` at `slot` (`rotateAndStoreRow`; the block at this layer).
   */
  private rotateAndStore(index: number, row: number, slot: number): void {
    rotateAndStoreRow(this.arenaFloats, this.attendBlockInts, this.attendBlock.byteOffset / 4, this.model.config.rmsNormEps, index, row, slot)
  }

  /**
   * The rest of a layer for `rows` rows: the output projection of `attended` added to `x`, then the MLP's output added
   * (SwiGLU, or GPT-2's `c_proj(gelu(c_fc(h)))` with GELU's tanh approximation, as `geluTanh`).
   */
  private outputAndMlp(layer: HostLayerWeights & HostLayerCache, rows: number): void {
    const { hiddenSize, headDim, numAttentionHeads: heads, intermediateSize, rmsNormEps } = this.model.config
    const { x, normed, projected, attended, delta, projectedWidth } = this
    const queryWidth = heads * headDim
    this.weightProduct(layer.output, layer.backend?.output, attended, delta, hiddenSize, queryWidth, rows, queryWidth, hiddenSize)
    addBias(delta, layer.outputBias, rows, hiddenSize, hiddenSize)
    for (let index = 0; index < rows * hiddenSize; index++) x[index] = x[index]! + delta[index]!
    normalise(x, layer.mlpNorm, layer.mlpNormBias, normed, rows, hiddenSize, rmsNormEps)
    const swiGlu = this.definition.activation === 'swiglu'
    if (layer.backend !== undefined && swiGlu) {
      // SwiGLU on the backend: its two products and the activation between them in one pass, no copy in between.
      const { gateUp, down } = layer.backend
      const gateUpBias = layer.gateUpBias === undefined ? undefined : layer.gateUpBias.slice(0, 2 * intermediateSize)
      const mlp = (input: tf.Tensor2D): tf.Tensor => {
        let both: tf.Tensor2D = tf.matMul(input, gateUp)
        if (gateUpBias !== undefined) both = tf.add(both, tf.tensor1d(gateUpBias))
        const [gate, up] = tf.split(both, 2, 1) as [tf.Tensor2D, tf.Tensor2D]
        return tf.matMul(tf.mul(tf.mul(gate, tf.sigmoid(gate)), up), down)
      }
      backendProduct(gateUp, mlp, normed, rows, hiddenSize, delta)
    } else {
      const mlpWidth = swiGlu ? 2 * intermediateSize : intermediateSize
      this.weightProduct(layer.gateUp, layer.backend?.gateUp, normed, projected, mlpWidth, hiddenSize, rows, hiddenSize, projectedWidth)
      addBias(projected, layer.gateUpBias, rows, mlpWidth, projectedWidth)
      if (!swiGlu) {
        for (let row = 0; row < rows; row++) {
          const base = row * projectedWidth
          for (let index = 0; index < intermediateSize; index++) normed[row * intermediateSize + index] = geluTanh(projected[base + index]!)
        }
      } else {
        for (let row = 0; row < rows; row++) {
          const base = row * projectedWidth
          for (let index = 0; index < intermediateSize; index++) {
            const gate = projected[base + index]!
            normed[row * intermediateSize + index] = (gate / (1 + Math.exp(-gate))) * projected[base + intermediateSize + index]!
          }
        }
      }
      this.weightProduct(layer.down, layer.backend?.down, normed, delta, hiddenSize, intermediateSize, rows, intermediateSize, hiddenSize)
    }
    addBias(delta, layer.downBias, rows, hiddenSize, hiddenSize)
    for (let index = 0; index < rows * hiddenSize; index++) x[index] = x[index]! + delta[index]!
  }

  /**
   * `y[b·yStride + r] = Σ_i W[r, i] · x[b·xStride + i]`: the arena's `weightProduct` over the host weights `w`, or
   * with `products: 'backend'` one `tf.matMul` with their backend copy `backendWeight` (`[columns, rows]`).
   */
  private weightProduct(
    w: Float32Array,
    backendWeight: tf.Tensor2D | undefined,
    x: Float32Array,
    y: Float32Array,
    rows: number,
    columns: number,
    batch: number,
    xStride: number,
    yStride: number,
  ): void {
    if (backendWeight === undefined) {
      this.arena.weightProduct(w, x, y, rows, columns, batch, xStride, yStride)
      return
    }
    let values = x
    if (xStride !== columns) {
      values = new Float32Array(batch * columns)
      for (let row = 0; row < batch; row++) values.set(x.subarray(row * xStride, row * xStride + columns), row * columns)
    }
    const result = yStride === rows ? y : new Float32Array(batch * rows)
    backendProduct(backendWeight, (input) => tf.matMul(input, backendWeight), values, batch, columns, result)
    if (result !== y) for (let row = 0; row < batch; row++) y.set(result.subarray(row * rows, (row + 1) * rows), row * yStride)
  }
}

/** RMSNorm of each row of `x`, or with a `bias` GPT-2's LayerNorm (`layerNormalise`). */
function normalise(
  x: Float32Array,
  weight: Float32Array,
  bias: Float32Array | undefined,
  out: Float32Array,
  batch: number,
  width: number,
  epsilon: number,
): void {
  if (bias === undefined) rmsNormalise(x, weight, out, batch, width, epsilon)
  else layerNormalise(x, weight, bias, out, batch, width, epsilon)
}

/** LayerNorm of each row of `x` (`[batch, width]`), as `layerNorm`: `(x - mean) / sqrt(variance + epsilon) · weight + bias`, biased variance. */
function layerNormalise(x: Float32Array, weight: Float32Array, bias: Float32Array, out: Float32Array, batch: number, width: number, epsilon: number): void {
  for (let row = 0; row < batch; row++) {
    const base = row * width
    let sum = 0
    for (let index = 0; index < width; index++) sum += x[base + index]!
    const mean = Math.fround(sum / width)
    let squares = 0
    for (let index = 0; index < width; index++) {
      const centred = Math.fround(x[base + index]! - mean)
      squares += centred * centred
    }
    const scale = Math.fround(1 / Math.sqrt(Math.fround(Math.fround(squares / width) + epsilon)))
    for (let index = 0; index < width; index++) out[base + index] = Math.fround(Math.fround(x[base + index]! - mean) * scale) * weight[index]! + bias[index]!
  }
}

/** GELU's tanh approximation (GPT-2's `gelu_new`, `geluTanh`): `x/2 · (1 + tanh(√(2/π) · (x + 0.044715 x³)))`. */
function geluTanh(x: number): number {
  return 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x * x * x)))
}

/** RMSNorm of each row of `x` (`[batch, width]`): `weight · x / sqrt(mean(x²) + epsilon)` (`rmsNormaliseRow`). */
function rmsNormalise(x: Float32Array, weight: Float32Array, out: Float32Array, batch: number, width: number, epsilon: number): void {
  for (let row = 0; row < batch; row++) rmsNormaliseRow(x, row * width, weight, 0, out, row * width, width, epsilon)
}

function addBias(y: Float32Array, bias: Float32Array | undefined, batch: number, width: number, stride: number): void {
  if (bias === undefined) return
  for (let row = 0; row < batch; row++) for (let index = 0; index < width; index++) y[row * stride + index] = y[row * stride + index]! + bias[index]!
}
