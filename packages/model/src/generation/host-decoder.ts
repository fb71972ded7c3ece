import * as tf from '@tensorflow/tfjs-core'
import { inverseFrequencies } from '../layers/rotary-embedding.js'
import type { CausalLanguageModel } from '../model/causal-language-model.js'
import type { KeyValueCache } from '../model/key-value-cache.js'
import { disposeFusedWeights, fuseWeights } from './fused-decoder.js'

/** One layer's weights on the host, output-major (`[out, in]`, row-major), from `fuseWeights`. */
interface HostLayer {
  /** `[(heads + kvHeads) · headDim + kvHeads · headDim, hidden]`: q (scaled by 1/√headDim), k and v, the norm folded in. */
  queryKeyValue: Float32Array
  queryKeyValueBias: Float32Array | undefined
  /** `[hidden, heads · headDim]`. */
  output: Float32Array
  outputBias: Float32Array | undefined
  /** `[2 · intermediate, hidden]`: gate then up, the norm folded in. */
  gateUp: Float32Array
  gateUpBias: Float32Array | undefined
  /** `[hidden, intermediate]`. */
  down: Float32Array
  downBias: Float32Array | undefined
}

/**
 * Single-token decode steps in plain JavaScript on `Float32Array`s, for small models on backends where each
 * TensorFlow.js op costs tens of microseconds (the native TensorFlow backend, the pure-JS CPU one): the same
 * function as `FusedDecoder` (same fused, norm-folded weights, read to the host once per generation), with the
 * keys and values in preallocated buffers written in place (`[batch, kvHeads, capacity, headDim]` per layer).
 * No op reaches the backend during a step; the logits come back as a `Float32Array`. Sums accumulate in
 * float64, so results equal the TensorFlow.js paths up to float32 rounding.
 */
export class HostDecoder {
  private readonly layers: HostLayer[]
  /** `[vocab, hidden]` input embedding. */
  private readonly embedding: Float32Array
  /** `[vocab, hidden]`: the output projection with the final norm's weight folded in. */
  private readonly head: Float32Array
  private readonly headBias: Float32Array | undefined
  private readonly inverseFrequency: Float32Array
  private readonly keys: Float32Array[] = []
  private readonly values: Float32Array[] = []
  private length = 0
  private batch = 0
  // Scratch rows, reused by every step.
  private readonly x: Float32Array
  private readonly normed: Float32Array
  private readonly projected: Float32Array
  private readonly attended: Float32Array
  private readonly hidden: Float32Array
  private readonly delta: Float32Array
  private readonly scores: Float64Array

  /** `capacity`: the most positions a row will hold (prompt, padding included, plus new tokens). */
  constructor(
    private readonly model: CausalLanguageModel,
    private readonly capacity: number,
  ) {
    const { config } = model
    const { hiddenSize, headDim, numAttentionHeads: heads, numKeyValueHeads: keyValueHeads, intermediateSize, vocabSize } = config
    this.inverseFrequency = inverseFrequencies(headDim, config.ropeTheta, config.ropeScaling)
    const fused = fuseWeights(model)
    try {
      const outputMajor = (weight: tf.Tensor2D) => {
        const transposed = tf.transpose(weight)
        try {
          return transposed.dataSync() as Float32Array
        } finally {
          transposed.dispose()
        }
      }
      const read = (tensor: tf.Tensor | undefined) => (tensor === undefined ? undefined : (tensor.dataSync() as Float32Array).slice())
      const concatBias = (parts: (tf.Tensor | undefined)[], widths: number[]) => {
        if (parts.every((part) => part === undefined)) return undefined
        const joined = new Float32Array(widths.reduce((total, width) => total + width, 0))
        let offset = 0
        parts.forEach((part, index) => {
          if (part !== undefined) joined.set(part.dataSync() as Float32Array, offset)
          offset += widths[index]!
        })
        return joined
      }
      this.layers = fused.layers.map((layer) => {
        const queryKey = outputMajor(layer.queryKey)
        const value = outputMajor(layer.value)
        const queryKeyValue = new Float32Array(queryKey.length + value.length)
        queryKeyValue.set(queryKey)
        queryKeyValue.set(value, queryKey.length)
        const gate = outputMajor(layer.gate)
        const gateUp = new Float32Array(2 * gate.length)
        gateUp.set(gate)
        gateUp.set(outputMajor(layer.up), gate.length)
        return {
          queryKeyValue,
          queryKeyValueBias: concatBias([layer.queryKeyBias, layer.valueBias], [(heads + keyValueHeads) * headDim, keyValueHeads * headDim]),
          output: outputMajor(layer.output),
          outputBias: read(layer.outputBias),
          gateUp,
          gateUpBias: concatBias([layer.gateBias, layer.upBias], [intermediateSize, intermediateSize]),
          down: outputMajor(layer.down),
          downBias: read(layer.downBias),
        }
      })
      this.head = outputMajor(fused.head)
      this.headBias = read(fused.headBias)
      this.embedding = (model.parameter('model.embed_tokens.weight').dataSync() as Float32Array).slice()
    } finally {
      disposeFusedWeights(fused)
    }
    const widest = Math.max(hiddenSize, (heads + 2 * keyValueHeads) * headDim, 2 * intermediateSize, vocabSize)
    this.x = new Float32Array(hiddenSize)
    this.normed = new Float32Array(Math.max(hiddenSize, intermediateSize))
    this.projected = new Float32Array(widest)
    this.attended = new Float32Array(heads * headDim)
    this.hidden = new Float32Array(intermediateSize)
    this.delta = new Float32Array(hiddenSize)
    this.scores = new Float64Array(capacity)
  }

  /** Copies the keys and values of a prefilled `cache` into the host buffers (the cache keeps and frees its own). */
  adoptCache(cache: KeyValueCache, batch: number): void {
    const { numKeyValueHeads: keyValueHeads, headDim } = this.model.config
    const taken = cache.take()
    try {
      this.batch = batch
      this.length = taken.keys[0]!.shape[2]
      const copy = (tensor: tf.Tensor4D) => {
        const buffer = new Float32Array(batch * keyValueHeads * this.capacity * headDim)
        const data = tensor.dataSync() as Float32Array
        const block = this.length * headDim
        for (let index = 0; index < batch * keyValueHeads; index++)
          buffer.set(data.subarray(index * block, (index + 1) * block), index * this.capacity * headDim)
        return buffer
      }
      for (const key of taken.keys) this.keys.push(copy(key))
      for (const value of taken.values) this.values.push(copy(value))
    } finally {
      tf.dispose([...taken.keys, ...taken.values])
    }
  }

  /**
   * One decode step (see `FusedDecoder.step`): `tokens[row]` at `positions[row]`, `padding` the additive bias
   * `[batch · (length + 1)]` or undefined. Returns the next-token logits `[batch · vocab]`.
   */
  step(tokens: Int32Array, positions: Int32Array, padding: Float32Array | undefined): Float32Array {
    const { config } = this.model
    const { hiddenSize, headDim, numAttentionHeads: heads, numKeyValueHeads: keyValueHeads, intermediateSize, vocabSize, rmsNormEps } = config
    const { x, normed, projected, attended, hidden, delta, scores, capacity } = this
    const length = this.length + 1
    if (length > capacity) throw new RangeError(`HostDecoder: ${length} positions exceed its capacity of ${capacity}`)
    const batch = this.batch
    const groups = heads / keyValueHeads
    const half = headDim / 2
    const queryWidth = heads * headDim
    const keyWidth = keyValueHeads * headDim
    const logits = new Float32Array(batch * vocabSize)
    const cos = new Float64Array(half)
    const sin = new Float64Array(half)
    for (let row = 0; row < batch; row++) {
      x.set(this.embedding.subarray(tokens[row]! * hiddenSize, (tokens[row]! + 1) * hiddenSize))
      for (let index = 0; index < half; index++) {
        const angle = Math.fround(positions[row]! * this.inverseFrequency[index]!)
        cos[index] = Math.fround(Math.cos(angle))
        sin[index] = Math.fround(Math.sin(angle))
      }
      this.layers.forEach((layer, layerIndex) => {
        rmsNormalise(x, normed, hiddenSize, rmsNormEps)
        matVec(layer.queryKeyValue, normed, hiddenSize, queryWidth + 2 * keyWidth, projected, layer.queryKeyValueBias)
        // RoPE on every q and k head (rotate-half layout).
        for (let head = 0; head < heads + keyValueHeads; head++) {
          const base = head * headDim
          for (let index = 0; index < half; index++) {
            const first = projected[base + index]!
            const second = projected[base + index + half]!
            projected[base + index] = first * cos[index]! - second * sin[index]!
            projected[base + index + half] = second * cos[index]! + first * sin[index]!
          }
        }
        const keys = this.keys[layerIndex]!
        const values = this.values[layerIndex]!
        for (let group = 0; group < keyValueHeads; group++) {
          const slot = ((row * keyValueHeads + group) * capacity + length - 1) * headDim
          keys.set(projected.subarray(queryWidth + group * headDim, queryWidth + (group + 1) * headDim), slot)
          values.set(projected.subarray(queryWidth + keyWidth + group * headDim, queryWidth + keyWidth + (group + 1) * headDim), slot)
        }
        for (let head = 0; head < heads; head++) {
          const group = Math.floor(head / groups)
          const cacheBase = (row * keyValueHeads + group) * capacity * headDim
          const queryBase = head * headDim
          let max = -Infinity
          for (let position = 0; position < length; position++) {
            const keyBase = cacheBase + position * headDim
            let score = 0
            for (let index = 0; index < headDim; index++) score += projected[queryBase + index]! * keys[keyBase + index]!
            score = Math.fround(score)
            if (padding !== undefined) score += padding[row * length + position]!
            scores[position] = score
            if (score > max) max = score
          }
          let total = 0
          for (let position = 0; position < length; position++) {
            const weight = Math.exp(scores[position]! - max)
            scores[position] = weight
            total += weight
          }
          const out = attended.subarray(queryBase, queryBase + headDim)
          out.fill(0)
          for (let position = 0; position < length; position++) {
            const weight = scores[position]! / total
            const valueBase = cacheBase + position * headDim
            for (let index = 0; index < headDim; index++) out[index] = out[index]! + weight * values[valueBase + index]!
          }
        }
        matVec(layer.output, attended, queryWidth, hiddenSize, delta, layer.outputBias)
        for (let index = 0; index < hiddenSize; index++) x[index] = x[index]! + delta[index]!
        rmsNormalise(x, normed, hiddenSize, rmsNormEps)
        matVec(layer.gateUp, normed, hiddenSize, 2 * intermediateSize, projected, layer.gateUpBias)
        for (let index = 0; index < intermediateSize; index++) {
          const gate = projected[index]!
          hidden[index] = (gate / (1 + Math.exp(-gate))) * projected[intermediateSize + index]!
        }
        matVec(layer.down, hidden, intermediateSize, hiddenSize, delta, layer.downBias)
        for (let index = 0; index < hiddenSize; index++) x[index] = x[index]! + delta[index]!
      })
      rmsNormalise(x, normed, hiddenSize, rmsNormEps)
      matVec(this.head, normed, hiddenSize, vocabSize, logits.subarray(row * vocabSize, (row + 1) * vocabSize), this.headBias)
    }
    this.length = length
    return logits
  }
}

/** `out[i] = x[i] / sqrt(mean(x²) + epsilon)` over the first `width` entries (the norm's weight is folded into the next matrix). */
function rmsNormalise(x: Float32Array, out: Float32Array, width: number, epsilon: number): void {
  let sum = 0
  for (let index = 0; index < width; index++) sum += x[index]! * x[index]!
  const scale = 1 / Math.sqrt(Math.fround(Math.fround(sum / width) + epsilon))
  for (let index = 0; index < width; index++) out[index] = x[index]! * scale
}

/**
 * `y = W x (+ bias)` for an output-major `W` (`[rows, columns]`): four rows at a time share each load of `x`
 * (about 1.1–1.6 G multiply-adds a second in V8, twice a plain dot product loop).
 */
function matVec(weight: Float32Array, x: Float32Array, columns: number, rows: number, y: Float32Array, bias: Float32Array | undefined): void {
  let row = 0
  for (; row + 3 < rows; row += 4) {
    const a = row * columns
    const b = a + columns
    const c = b + columns
    const d = c + columns
    let s0 = 0
    let s1 = 0
    let s2 = 0
    let s3 = 0
    for (let index = 0; index < columns; index++) {
      const value = x[index]!
      s0 += value * weight[a + index]!
      s1 += value * weight[b + index]!
      s2 += value * weight[c + index]!
      s3 += value * weight[d + index]!
    }
    y[row] = s0
    y[row + 1] = s1
    y[row + 2] = s2
    y[row + 3] = s3
  }
  for (; row < rows; row++) {
    const a = row * columns
    let sum = 0
    for (let index = 0; index < columns; index++) sum += x[index]! * weight[a + index]!
    y[row] = sum
  }
  if (bias !== undefined) for (let index = 0; index < rows; index++) y[index] = y[index]! + bias[index]!
}
