import * as tf from '@tensorflow/tfjs-core'
import { inverseFrequencies } from '../layers/rotary-embedding.js'
import type { ModelConfig } from '../config/model-config.js'
import type { CausalLanguageModel } from '../model/causal-language-model.js'
import type { KeyValueCache } from '../model/key-value-cache.js'
import { createMatmulArena, type MatmulArena } from './simd-matmul.js'

/** The floats a `HostDecoder` holds for `batch` rows of `capacity` positions: weights, biases, norms, keys, values and scratch (each buffer rounded up to 4 floats). */
export function hostDecoderFloats(config: ModelConfig, batch: number, capacity: number): number {
  const { hiddenSize, headDim, numAttentionHeads: heads, numKeyValueHeads: keyValueHeads, intermediateSize, vocabSize, numHiddenLayers } = config
  const positions = Math.ceil(capacity / 4) * 4
  const queryKeyValueWidth = (heads + 2 * keyValueHeads) * headDim
  const projectedWidth = Math.max(queryKeyValueWidth, 2 * intermediateSize)
  const cacheFloats = batch * keyValueHeads * positions * headDim
  const weights = queryKeyValueWidth * hiddenSize + hiddenSize * heads * headDim + 3 * intermediateSize * hiddenSize
  const biasesAndNorms = queryKeyValueWidth + hiddenSize + 2 * intermediateSize + hiddenSize + 2 * hiddenSize
  const perLayer = weights + biasesAndNorms + 2 * cacheFloats + 10 * 4
  const scratch = batch * (2 * hiddenSize + Math.max(hiddenSize, intermediateSize) + projectedWidth + heads * headDim + heads * positions + vocabSize) + 7 * 4
  const outputs = 2 * vocabSize * hiddenSize + vocabSize + hiddenSize + 4 * 4 // embedding, untied head, its bias, final norm
  return numHiddenLayers * perLayer + outputs + scratch
}

/** One layer's weights on the host, as the model stores them (`[out, in]`, row-major), q, k, v and gate, up stacked. */
interface HostLayer {
  attentionNorm: Float32Array
  /** `[(heads + 2 · kvHeads) · headDim, hidden]`: q, k and v. */
  queryKeyValue: Float32Array
  queryKeyValueBias: Float32Array | undefined
  /** `[hidden, heads · headDim]`. */
  output: Float32Array
  outputBias: Float32Array | undefined
  mlpNorm: Float32Array
  /** `[2 · intermediate, hidden]`: gate then up. */
  gateUp: Float32Array
  gateUpBias: Float32Array | undefined
  /** `[hidden, intermediate]`. */
  down: Float32Array
  downBias: Float32Array | undefined
  /** `[batch, kvHeads, capacity, headDim]`: each position's key, a row. */
  keys: Float32Array
  /** `[batch, kvHeads, headDim, capacity]`: values transposed, so attention's weighted sum is a product too. */
  values: Float32Array
}

/**
 * Single-token decode steps computed on the host, for small models: the same function as `FusedDecoder` (the
 * weights copied to the host once per generation, q, k, v and gate, up stacked) with every product — the
 * projections for all rows at once, attention's scores and weighted sums — in one small WebAssembly SIMD
 * kernel (`createMatmulArena`), the rest (norms, RoPE, softmax, SiLU) in JavaScript over `Float32Array`s, and
 * the keys and values in preallocated buffers written in place. No op reaches the TensorFlow.js backend during
 * a step, so the per-op cost that dominates small models there (tens of microseconds a call on the native
 * backend) is gone. Sums run in float32 SIMD lanes or float64 scalars: results equal the TensorFlow.js paths
 * up to float32 rounding. With `threads` > 1 the weight products are shared with worker threads (same results,
 * bit for bit); attention and the rest stay on the calling thread.
 */
export class HostDecoder {
  private readonly arena: MatmulArena
  private readonly layers: HostLayer[] = []
  /** `[vocab, hidden]` input embedding. */
  private readonly embedding: Float32Array
  /** `[vocab, hidden]`: the output projection (the embedding when tied). */
  private readonly head: Float32Array
  private readonly finalNorm: Float32Array
  private readonly headBias: Float32Array | undefined
  private readonly inverseFrequency: Float32Array
  /** Positions a row can hold, rounded up to a multiple of 4 (the kernel's column block). */
  private readonly capacity: number
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

  /**
   * `capacity`: the most positions a row will hold (prompt, padding included, plus new tokens); `batch`: rows.
   * `options.simd: false` runs the products in JavaScript (for tests; the kernel is used where available);
   * `options.threads` (default 1): threads sharing the weight products (see `createMatmulArena`) — call
   * `dispose` when done so the worker threads go back to their pool.
   */
  constructor(
    private readonly model: CausalLanguageModel,
    private readonly batch: number,
    capacity: number,
    options: { simd?: boolean; threads?: number } = {},
  ) {
    const { config } = model
    const { hiddenSize, headDim, numAttentionHeads: heads, numKeyValueHeads: keyValueHeads, intermediateSize, vocabSize, numHiddenLayers } = config
    this.capacity = Math.ceil(capacity / 4) * 4
    this.inverseFrequency = inverseFrequencies(headDim, config.ropeTheta, config.ropeScaling)
    this.arena = createMatmulArena(options)
    const queryKeyValueWidth = (heads + 2 * keyValueHeads) * headDim
    this.projectedWidth = Math.max(queryKeyValueWidth, 2 * intermediateSize)
    const cacheFloats = batch * keyValueHeads * this.capacity * headDim
    try {
      this.arena.reserve(hostDecoderFloats(config, batch, this.capacity))
      const parameter = (name: string) => model.parameter(name).dataSync() as Float32Array
      const bias = (name: string) => model.parameters().get(`${name}.bias`)?.dataSync() as Float32Array | undefined
      /** The linear layers' weights (`[out, in]`, an unmerged adapter's update added), rows stacked. */
      const stack = (names: string[]) => {
        const parts = names.map((name) => this.linearWeight(name))
        const stacked = this.arena.allocate(parts.reduce((total, part) => total + part.length, 0))
        let offset = 0
        for (const part of parts) {
          stacked.set(part, offset)
          offset += part.length
        }
        return stacked
      }
      const joinBiases = (names: string[], widths: number[]) => {
        const parts = names.map(bias)
        if (parts.every((part) => part === undefined)) return undefined
        const joined = this.arena.allocate(widths.reduce((total, width) => total + width, 0))
        let offset = 0
        parts.forEach((part, index) => {
          if (part !== undefined) joined.set(part, offset)
          offset += widths[index]!
        })
        return joined
      }
      const norm = (name: string) => {
        const weight = this.arena.allocate(hiddenSize)
        weight.set(parameter(name))
        return weight
      }
      for (let layer = 0; layer < numHiddenLayers; layer++) {
        const prefix = `model.layers.${layer}`
        const attention = ['q_proj', 'k_proj', 'v_proj'].map((name) => `${prefix}.self_attn.${name}`)
        const mlp = ['gate_proj', 'up_proj'].map((name) => `${prefix}.mlp.${name}`)
        this.layers.push({
          attentionNorm: norm(`${prefix}.input_layernorm.weight`),
          queryKeyValue: stack(attention),
          queryKeyValueBias: joinBiases(attention, [heads * headDim, keyValueHeads * headDim, keyValueHeads * headDim]),
          output: stack([`${prefix}.self_attn.o_proj`]),
          outputBias: joinBiases([`${prefix}.self_attn.o_proj`], [hiddenSize]),
          mlpNorm: norm(`${prefix}.post_attention_layernorm.weight`),
          gateUp: stack(mlp),
          gateUpBias: joinBiases(mlp, [intermediateSize, intermediateSize]),
          down: stack([`${prefix}.mlp.down_proj`]),
          downBias: joinBiases([`${prefix}.mlp.down_proj`], [hiddenSize]),
          keys: this.arena.allocate(cacheFloats),
          values: this.arena.allocate(cacheFloats),
        })
      }
      this.finalNorm = norm('model.norm.weight')
      this.embedding = stack(['model.embed_tokens'])
      this.head = config.tieWordEmbeddings ? this.embedding : stack(['lm_head'])
      this.headBias = config.tieWordEmbeddings ? undefined : joinBiases(['lm_head'], [vocabSize])
      this.x = this.arena.allocate(batch * hiddenSize)
      this.normed = this.arena.allocate(batch * Math.max(hiddenSize, intermediateSize))
      this.projected = this.arena.allocate(batch * this.projectedWidth)
      this.attended = this.arena.allocate(batch * heads * headDim)
      this.delta = this.arena.allocate(batch * hiddenSize)
      this.scores = this.arena.allocate(batch * heads * this.capacity)
      this.logits = this.arena.allocate(batch * vocabSize)
    } catch (error) {
      this.arena.dispose() // its worker threads back to the pool
      throw error
    }
  }

  /** A linear layer's weight `[out, in]` as the model applies it: an attached, unmerged adapter's update added (its output for the identity). */
  private linearWeight(name: string): Float32Array {
    const weight = this.model.parameter(`${name}.weight`)
    const adapter = this.model.linearAdapters().get(name)
    if (adapter === undefined || adapter.merged) return weight.dataSync() as Float32Array
    const effective = tf.tidy(() => tf.add(weight, tf.transpose(adapter.apply(tf.eye(weight.shape[1]!), false))))
    try {
      return effective.dataSync() as Float32Array
    } finally {
      effective.dispose()
    }
  }

  /** Whether the products run in the WebAssembly SIMD kernel (else JavaScript). */
  get simd(): boolean {
    return this.arena.simd
  }

  /** Threads sharing the weight products: 1, or 1 + the worker threads lent to this decoder. */
  get threads(): number {
    return this.arena.threads
  }

  /** Hands the worker threads back to their pool (the decoder still works, on the calling thread alone). */
  dispose(): void {
    this.arena.dispose()
  }

  /** Copies the keys and values of a prefilled `cache` into the host buffers; the cache's tensors are freed. */
  adoptCache(cache: KeyValueCache): void {
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
   * One decode step (see `FusedDecoder.step`): `tokens[row]` at `positions[row]`, `padding` the additive bias
   * `[batch · (length + 1)]` or undefined. Returns the next-token logits `[batch · vocab]` (a new array).
   */
  step(tokens: Int32Array, positions: Int32Array, padding: Float32Array | undefined): Float32Array {
    const { config } = this.model
    const { hiddenSize, headDim, numAttentionHeads: heads, numKeyValueHeads: keyValueHeads, intermediateSize, vocabSize, rmsNormEps } = config
    const { arena, x, normed, projected, attended, delta, scores, capacity, batch, projectedWidth } = this
    const length = this.length + 1
    if (length > capacity) throw new RangeError(`HostDecoder: ${length} positions exceed its capacity of ${capacity}`)
    const groups = heads / keyValueHeads
    const half = headDim / 2
    const scale = 1 / Math.sqrt(headDim)
    const queryWidth = heads * headDim
    const keyWidth = keyValueHeads * headDim
    const queryKeyValueWidth = queryWidth + 2 * keyWidth
    const cos = new Float64Array(batch * half)
    const sin = new Float64Array(batch * half)
    for (let row = 0; row < batch; row++) {
      const token = tokens[row]!
      x.set(this.embedding.subarray(token * hiddenSize, (token + 1) * hiddenSize), row * hiddenSize)
      for (let index = 0; index < half; index++) {
        const angle = Math.fround(positions[row]! * this.inverseFrequency[index]!)
        cos[row * half + index] = Math.fround(Math.cos(angle))
        sin[row * half + index] = Math.fround(Math.sin(angle))
      }
    }
    const lengthPadded = Math.ceil(length / 4) * 4
    for (const layer of this.layers) {
      rmsNormalise(x, layer.attentionNorm, normed, batch, hiddenSize, rmsNormEps)
      arena.matmul(layer.queryKeyValue, normed, projected, queryKeyValueWidth, hiddenSize, batch, hiddenSize, hiddenSize, projectedWidth)
      addBias(projected, layer.queryKeyValueBias, batch, queryKeyValueWidth, projectedWidth)
      for (let row = 0; row < batch; row++) {
        const base = row * projectedWidth
        // RoPE on every q and k head (rotate-half layout).
        for (let head = 0; head < heads + keyValueHeads; head++) {
          const start = base + head * headDim
          for (let index = 0; index < half; index++) {
            const first = projected[start + index]!
            const second = projected[start + index + half]!
            const c = cos[row * half + index]!
            const s = sin[row * half + index]!
            projected[start + index] = first * c - second * s
            projected[start + index + half] = second * c + first * s
          }
        }
        for (let group = 0; group < keyValueHeads; group++) {
          const block = row * keyValueHeads + group
          const key = base + queryWidth + group * headDim
          layer.keys.set(projected.subarray(key, key + headDim), (block * capacity + length - 1) * headDim)
          const value = key + keyWidth
          for (let dimension = 0; dimension < headDim; dimension++)
            layer.values[(block * headDim + dimension) * capacity + length - 1] = projected[value + dimension]!
        }
        for (let group = 0; group < keyValueHeads; group++) {
          const block = row * keyValueHeads + group
          const query = projected.subarray(base + group * groups * headDim)
          const rowScores = scores.subarray(row * heads * capacity + group * groups * capacity)
          // scores[j, t] = q_j · k_t for the `groups` query heads sharing this key/value head.
          arena.matmul(layer.keys.subarray(block * capacity * headDim), query, rowScores, length, headDim, groups, headDim, headDim, capacity)
          for (let member = 0; member < groups; member++) {
            const offset = member * capacity
            let max = -Infinity
            for (let position = 0; position < length; position++) {
              let score = Math.fround(rowScores[offset + position]! * scale)
              if (padding !== undefined) score += padding[row * length + position]!
              rowScores[offset + position] = score
              if (score > max) max = score
            }
            let total = 0
            for (let position = 0; position < length; position++) {
              const weight = Math.exp(rowScores[offset + position]! - max)
              rowScores[offset + position] = weight
              total += weight
            }
            for (let position = 0; position < length; position++) rowScores[offset + position] = rowScores[offset + position]! / total
            for (let position = length; position < lengthPadded; position++) rowScores[offset + position] = 0
          }
          // attended_j = Σ_t p[j, t] v_t: values are stored transposed, so this is a product too.
          arena.matmul(
            layer.values.subarray(block * headDim * capacity),
            rowScores,
            attended.subarray(row * queryWidth + group * groups * headDim),
            headDim,
            lengthPadded,
            groups,
            capacity,
            capacity,
            headDim,
          )
        }
      }
      arena.matmul(layer.output, attended, delta, hiddenSize, queryWidth, batch, queryWidth, queryWidth, hiddenSize)
      addBias(delta, layer.outputBias, batch, hiddenSize, hiddenSize)
      for (let index = 0; index < batch * hiddenSize; index++) x[index] = x[index]! + delta[index]!
      rmsNormalise(x, layer.mlpNorm, normed, batch, hiddenSize, rmsNormEps)
      arena.matmul(layer.gateUp, normed, projected, 2 * intermediateSize, hiddenSize, batch, hiddenSize, hiddenSize, projectedWidth)
      addBias(projected, layer.gateUpBias, batch, 2 * intermediateSize, projectedWidth)
      for (let row = 0; row < batch; row++) {
        const base = row * projectedWidth
        for (let index = 0; index < intermediateSize; index++) {
          const gate = projected[base + index]!
          normed[row * intermediateSize + index] = (gate / (1 + Math.exp(-gate))) * projected[base + intermediateSize + index]!
        }
      }
      arena.matmul(layer.down, normed, delta, hiddenSize, intermediateSize, batch, intermediateSize, intermediateSize, hiddenSize)
      addBias(delta, layer.downBias, batch, hiddenSize, hiddenSize)
      for (let index = 0; index < batch * hiddenSize; index++) x[index] = x[index]! + delta[index]!
    }
    rmsNormalise(x, this.finalNorm, normed, batch, hiddenSize, rmsNormEps)
    arena.matmul(this.head, normed, this.logits, vocabSize, hiddenSize, batch, hiddenSize, hiddenSize, vocabSize)
    addBias(this.logits, this.headBias, batch, vocabSize, vocabSize)
    this.length = length
    return this.logits.slice()
  }
}

/** RMSNorm of each row of `x` (`[batch, width]`): `weight · x / sqrt(mean(x²) + epsilon)`. */
function rmsNormalise(x: Float32Array, weight: Float32Array, out: Float32Array, batch: number, width: number, epsilon: number): void {
  for (let row = 0; row < batch; row++) {
    const base = row * width
    let sum = 0
    for (let index = 0; index < width; index++) sum += x[base + index]! * x[base + index]!
    const scale = 1 / Math.sqrt(Math.fround(Math.fround(sum / width) + epsilon))
    for (let index = 0; index < width; index++) out[base + index] = Math.fround(x[base + index]! * scale) * weight[index]!
  }
}

function addBias(y: Float32Array, bias: Float32Array | undefined, batch: number, width: number, stride: number): void {
  if (bias === undefined) return
  for (let row = 0; row < batch; row++) for (let index = 0; index < width; index++) y[row * stride + index] = y[row * stride + index]! + bias[index]!
}
