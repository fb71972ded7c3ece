import { InvalidArgumentError } from '@ludic/core'
import * as tf from '@tensorflow/tfjs-core'
import type { CausalLanguageModel } from '../model/causal-language-model.js'
import type { KeyValueCache } from '../model/key-value-cache.js'
import { architectureOf } from '../model/architecture.js'
import { inverseFrequencies } from '../layers/rotary-embedding.js'

/** One layer's inference weights, input-major (`[in, out]`), built once per generation. */
export interface FusedLayer {
  /** `[hidden, (heads + kvHeads) · headDim]`: q (scaled by 1/√headDim) and k, the attention norm's weight folded in. */
  queryKey: tf.Tensor2D
  /** The same columns rotated half (`rotate_half` of each head), so RoPE is `queryKey·cos + queryKeyRotated·sin`. */
  queryKeyRotated: tf.Tensor2D
  /** `[hidden, kvHeads · headDim]`, the attention norm's weight folded in. */
  value: tf.Tensor2D
  queryKeyBias: tf.Tensor1D | undefined
  queryKeyRotatedBias: tf.Tensor1D | undefined
  valueBias: tf.Tensor1D | undefined
  /** `[heads · headDim, hidden]`. */
  output: tf.Tensor2D
  outputBias: tf.Tensor1D | undefined
  /** `[hidden, intermediate]` each, the MLP norm's weight folded in. */
  gate: tf.Tensor2D
  up: tf.Tensor2D
  gateBias: tf.Tensor1D | undefined
  upBias: tf.Tensor1D | undefined
  /** `[intermediate, hidden]`. */
  down: tf.Tensor2D
  downBias: tf.Tensor1D | undefined
}

/**
 * The parts of `model`'s definition (`architectureOf`) the fused decoder has no kernel for, in words; undefined when
 * it has one for every part. Its kernels: `[out, in]` weights, RMSNorm folded into the products that read it, rotary
 * positions folded into q and k, q, k and v as three projections, SwiGLU. So not GPT-2 (LayerNorm's bias does not fold into a product; learned
 * positions; one `c_attn`; GELU) nor Qwen3 (per-head query/key norms sit between the product and the rotation).
 */
export function fusedDecoderMissing(model: CausalLanguageModel): string | undefined {
  const definition = architectureOf(model.config)
  const layer = definition.layer(0)
  const missing = [
    definition.linearLayout === 'output-major' ? undefined : 'input-major (Conv1D) weights',
    definition.norm === 'rms' ? undefined : 'LayerNorm',
    definition.positions === 'rotary' ? undefined : 'learned positions',
    layer.queryKeyValue.length === 3 ? undefined : 'a fused q/k/v projection',
    layer.queryNorm === undefined ? undefined : 'query/key norms',
    definition.activation === 'swiglu' ? undefined : 'a GELU MLP',
  ].filter((part) => part !== undefined)
  return missing.length === 0 ? undefined : missing.join(', ')
}

/**
 * Whether `FusedDecoder` can decode `model`: every part of its definition has a fused kernel (`fusedDecoderMissing`:
 * Llama, Qwen2, Mistral, the presets) and, with a sliding window, the whole generation fits in it. `generate` refuses
 * an explicit `decodePath: 'fused'` otherwise, and `'auto'` takes the host path or the layers.
 */
export function fusedDecoderSupports(model: CausalLanguageModel, contextLength: number): boolean {
  const { config } = model
  if (fusedDecoderMissing(model) !== undefined) return false
  return config.slidingWindow === null || contextLength <= config.slidingWindow
}

/** The fused inference weights of every layer and the output projection (see `FusedDecoder`). */
export interface FusedWeights {
  layers: FusedLayer[]
  /** `[hidden, vocab]`: the output projection with the final norm's weight folded in. */
  head: tf.Tensor2D
  headBias: tf.Tensor1D | undefined
}

/** Builds `FusedWeights` from the model's current parameters and adapters; the caller owns (and disposes) them. */
export function fuseWeights(model: CausalLanguageModel): FusedWeights {
  const { config } = model
  const definition = architectureOf(config)
  const layers: FusedLayer[] = []
  let head: tf.Tensor2D | undefined
  let headBias: tf.Tensor1D | undefined
  try {
    tf.tidy(() => {
      for (let layer = 0; layer < config.numHiddenLayers; layer++) {
        const fused = fuseLayer(model, layer)
        for (const tensor of Object.values(fused)) if (tensor !== undefined) tf.keep(tensor)
        layers.push(fused)
      }
      const finalNorm = tf.reshape(model.parameter(`${definition.finalNorm.name}.weight`), [-1, 1]) // [hidden, 1]
      const output = definition.head === undefined ? tf.transpose(model.parameter(definition.embedding)) : inputMajor(model, definition.head.name) // [hidden, vocab]
      head = tf.keep(tf.mul(output, finalNorm) as tf.Tensor2D)
      headBias = definition.head === undefined ? undefined : linearBias(model, definition.head.name)
      if (headBias !== undefined) tf.keep(headBias)
    })
  } catch (error) {
    disposeFusedWeights({ layers, head: head!, headBias })
    throw error
  }
  return { layers, head: head!, headBias }
}

export function disposeFusedWeights(weights: FusedWeights): void {
  tf.dispose([weights.head, weights.headBias].filter((tensor) => tensor !== undefined))
  for (const layer of weights.layers) tf.dispose(Object.values(layer).filter((tensor) => tensor !== undefined))
}

/** The weight of linear layer `name` input-major (`[in, out]`), with an attached unmerged adapter's update added. */
function inputMajor(model: CausalLanguageModel, name: string): tf.Tensor2D {
  const weight = tf.transpose(model.parameter(`${name}.weight`)) as tf.Tensor2D // [in, out]
  const adapter = model.linearAdapters().get(name)
  if (adapter === undefined || adapter.merged) return weight
  // A linear adapter's update, input-major, is its output for the identity matrix.
  return tf.add(weight, adapter.apply(tf.eye(weight.shape[0]), false)) as tf.Tensor2D
}

function linearBias(model: CausalLanguageModel, name: string): tf.Tensor1D | undefined {
  const bias = model.parameters().get(`${name}.bias`)
  return bias === undefined ? undefined : (tf.clone(bias) as tf.Tensor1D)
}

function fuseLayer(model: CausalLanguageModel, layer: number): FusedLayer {
  const { headDim, numAttentionHeads: heads, numKeyValueHeads: keyValueHeads } = model.config
  const parts = architectureOf(model.config).layer(layer)
  const [queryName, keyName, valueName] = parts.queryKeyValue.map((part) => part.name) as [string, string, string]
  const [gateName, upName] = parts.mlpIn.map((part) => part.name) as [string, string]
  const { name: outputName } = parts.output
  const { name: downName } = parts.mlpOut
  const attentionNorm = tf.reshape(model.parameter(`${parts.attentionNorm.name}.weight`), [-1, 1]) // [hidden, 1]
  const mlpNorm = tf.reshape(model.parameter(`${parts.mlpNorm.name}.weight`), [-1, 1])
  const scale = 1 / Math.sqrt(headDim)
  const query = tf.mul(inputMajor(model, queryName), scale) // [hidden, heads · headDim]
  const key = inputMajor(model, keyName) // [hidden, kvHeads · headDim]
  const queryKey = tf.concat([query, key], 1) // [hidden, (heads + kvHeads) · headDim]
  // rotate_half of each head: output j takes -x[j + half] (first half) or x[j - half] (second half).
  const half = headDim / 2
  const columns = (heads + keyValueHeads) * headDim
  const source = new Int32Array(columns)
  const sign = new Float32Array(columns)
  for (let column = 0; column < columns; column++) {
    const within = column % headDim
    source[column] = within < half ? column + half : column - half
    sign[column] = within < half ? -1 : 1
  }
  const rotate = (x: tf.Tensor, axis: number) => tf.mul(tf.gather(x, tf.tensor1d(source, 'int32'), axis), tf.tensor1d(sign)) // sign broadcasts over the last axis
  const queryBias = linearBias(model, queryName)
  const keyBias = linearBias(model, keyName)
  const queryKeyBias =
    queryBias === undefined && keyBias === undefined
      ? undefined
      : (tf.concat([
          queryBias === undefined ? tf.zeros([heads * headDim]) : tf.mul(queryBias, scale),
          keyBias ?? tf.zeros([keyValueHeads * headDim]),
        ]) as tf.Tensor1D)
  return {
    queryKey: tf.mul(queryKey, attentionNorm) as tf.Tensor2D,
    queryKeyRotated: tf.mul(rotate(queryKey, 1), attentionNorm) as tf.Tensor2D,
    value: tf.mul(inputMajor(model, valueName), attentionNorm) as tf.Tensor2D,
    queryKeyBias,
    queryKeyRotatedBias: queryKeyBias === undefined ? undefined : (rotate(queryKeyBias, 0) as tf.Tensor1D),
    valueBias: linearBias(model, valueName),
    output: inputMajor(model, outputName),
    outputBias: linearBias(model, outputName),
    gate: tf.mul(inputMajor(model, gateName), mlpNorm) as tf.Tensor2D,
    up: tf.mul(inputMajor(model, upName), mlpNorm) as tf.Tensor2D,
    gateBias: linearBias(model, gateName),
    upBias: linearBias(model, upName),
    down: inputMajor(model, downName),
    downBias: linearBias(model, downName),
  }
}

/**
 * Single-token decode steps with far fewer, larger TensorFlow.js ops than `model.hiddenStates`: the same
 * function, rearranged for time = 1. Built once per generation from the model's current weights (and every
 * attached, unmerged linear adapter, added into the weight it adapts), it keeps
 *
 * - the weights input-major (`[in, out]`; a transposed operand costs the WebAssembly backend a transpose
 *   per call), with each RMSNorm's weight folded into the projections that read it (`W·(γ⊙x̂) = (W·diag γ)·x̂`),
 *   q and k fused into one matrix and 1/√headDim folded into q;
 * - RoPE as two matrix products: `rotate_half` is a signed permutation of each head's outputs, so its columns
 *   are precomputed and a step computes `x̂Wqk ⊙ cos + x̂(Wqk R) ⊙ sin`;
 * - keys transposed (`[batch, kvHeads, headDim, length]`), so `q·Kᵀ` is a plain batched product, and a new
 *   token's key, value and query reach their attention layout by reshapes alone (time = 1).
 *
 * Results equal `model.hiddenStates` + `logitsFromHidden` up to float32 rounding (different summation
 * orders). `dispose()` frees the fused weights and the cache it holds.
 */
export class FusedDecoder {
  private readonly layers: FusedLayer[]
  /** `[hidden, vocab]`: the output projection with the final norm's weight folded in. */
  private readonly head: tf.Tensor2D
  private readonly headBias: tf.Tensor1D | undefined
  private readonly inverseFrequency: Float32Array
  /** Per layer `[batch, kvHeads, headDim, length]`. */
  private keys: tf.Tensor4D[] = []
  /** Per layer `[batch, kvHeads, length, headDim]`. */
  private values: tf.Tensor4D[] = []
  private disposed = false

  constructor(private readonly model: CausalLanguageModel) {
    const { config } = model
    const missing = fusedDecoderMissing(model)
    if (missing !== undefined) {
      throw new InvalidArgumentError({
        argument: 'model',
        value: config.architecture,
        message: `the fused decoder has no kernel for ${missing} (${config.architecture}): it runs Llama, Qwen2 and Mistral`,
      })
    }
    this.inverseFrequency = inverseFrequencies(config.headDim, config.ropeTheta, config.ropeScaling)
    const weights = fuseWeights(model)
    this.layers = weights.layers
    this.head = weights.head
    this.headBias = weights.headBias
  }

  /**
   * Takes over the keys and values of a prefilled `cache` (which is then empty of them; the caller still
   * disposes it): keys transposed to `[batch, kvHeads, headDim, length]`.
   */
  adoptCache(cache: KeyValueCache): void {
    const taken = cache.take()
    this.keys = taken.keys.map((key) => {
      const transposed = tf.transpose(key, [0, 1, 3, 2]) as tf.Tensor4D
      key.dispose()
      return transposed
    })
    this.values = taken.values
  }

  /**
   * One decode step: `tokens[row]` at `positions[row]`; `padding` is the additive attention bias
   * `[batch · (length + 1)]` (0 attended, negative masked) or undefined when every position is attended.
   * Returns the next-token logits `[batch, vocab]`; the cache grows by one position.
   */
  step(tokens: Int32Array, positions: Int32Array, padding: Float32Array | undefined): tf.Tensor2D {
    const { config } = this.model
    const { headDim, numAttentionHeads: heads, numKeyValueHeads: keyValueHeads, rmsNormEps } = config
    const batch = tokens.length
    const length = this.keys[0]!.shape[3] + 1
    const groups = heads / keyValueHeads
    const queryWidth = heads * headDim
    const keyWidth = keyValueHeads * headDim
    const { cos, sin } = this.rotaryRows(positions)
    const nextKeys: tf.Tensor4D[] = []
    const nextValues: tf.Tensor4D[] = []
    const logits = tf.tidy(() => {
      const cosine = tf.tensor2d(cos, [batch, queryWidth + keyWidth])
      const sine = tf.tensor2d(sin, [batch, queryWidth + keyWidth])
      const bias = padding === undefined ? undefined : tf.tensor4d(padding, [batch, 1, 1, length])
      const normalise = (x: tf.Tensor2D) => tf.mul(x, tf.rsqrt(tf.add(tf.mean(tf.square(x), -1, true), rmsNormEps))) as tf.Tensor2D
      const linear = (x: tf.Tensor2D, weight: tf.Tensor2D, linearBias: tf.Tensor1D | undefined) => {
        const y = tf.matMul(x, weight)
        return linearBias === undefined ? y : tf.add(y, linearBias)
      }
      let x = tf.gather(this.model.parameter(architectureOf(this.model.config).embedding), tf.tensor1d(tokens, 'int32')) as tf.Tensor2D // [batch, hidden]
      this.layers.forEach((weights, layer) => {
        const h = normalise(x)
        const rotated = tf.add(
          tf.mul(linear(h, weights.queryKey, weights.queryKeyBias), cosine),
          tf.mul(linear(h, weights.queryKeyRotated, weights.queryKeyRotatedBias), sine),
        ) // [batch, (heads + kvHeads) · headDim]
        const query = tf.reshape(tf.slice(rotated, [0, 0], [batch, queryWidth]), [batch, keyValueHeads, groups, headDim])
        const key = tf.reshape(tf.slice(rotated, [0, queryWidth], [batch, keyWidth]), [batch, keyValueHeads, headDim, 1])
        const value = tf.reshape(linear(h, weights.value, weights.valueBias), [batch, keyValueHeads, 1, headDim])
        const keys = tf.keep(tf.concat([this.keys[layer]!, key], 3)) as tf.Tensor4D // [batch, kvHeads, headDim, length]
        const values = tf.keep(tf.concat([this.values[layer]!, value], 2)) as tf.Tensor4D // [batch, kvHeads, length, headDim]
        nextKeys.push(keys)
        nextValues.push(values)
        const scores = tf.matMul(query, keys) // [batch, kvHeads, groups, length]
        const weightsOfKeys = tf.softmax(bias === undefined ? scores : tf.add(scores, bias))
        const attended = tf.reshape(tf.matMul(weightsOfKeys, values), [batch, queryWidth]) as tf.Tensor2D // [batch, heads · headDim]
        x = tf.add(x, linear(attended, weights.output, weights.outputBias))
        const m = normalise(x)
        const gate = linear(m, weights.gate, weights.gateBias)
        const hidden = tf.mul(tf.mul(gate, tf.sigmoid(gate)), linear(m, weights.up, weights.upBias)) as tf.Tensor2D
        x = tf.add(x, linear(hidden, weights.down, weights.downBias))
      })
      return linear(normalise(x), this.head, this.headBias) as tf.Tensor2D // [batch, vocab]
    })
    tf.dispose([...this.keys, ...this.values])
    this.keys = nextKeys
    this.values = nextValues
    return logits
  }

  /** cos and sin of each row's angles, tiled over the q and k heads: each `[batch · (heads + kvHeads) · headDim]`. */
  private rotaryRows(positions: Int32Array): { cos: Float32Array; sin: Float32Array } {
    const { headDim, numAttentionHeads: heads, numKeyValueHeads: keyValueHeads } = this.model.config
    const half = headDim / 2
    const width = (heads + keyValueHeads) * headDim
    const cos = new Float32Array(positions.length * width)
    const sin = new Float32Array(positions.length * width)
    const headCos = new Float32Array(headDim)
    const headSin = new Float32Array(headDim)
    positions.forEach((position, row) => {
      for (let index = 0; index < half; index++) {
        const angle = Math.fround(position * this.inverseFrequency[index]!)
        headCos[index] = headCos[index + half] = Math.cos(angle)
        headSin[index] = headSin[index + half] = Math.sin(angle)
      }
      for (let head = 0; head < heads + keyValueHeads; head++) {
        cos.set(headCos, row * width + head * headDim)
        sin.set(headSin, row * width + head * headDim)
      }
    })
    return { cos, sin }
  }

  dispose(): void {
    if (this.disposed) return
    this.disposed = true
    tf.dispose([...this.keys, ...this.values])
    disposeFusedWeights({ layers: this.layers, head: this.head, headBias: this.headBias })
    this.keys = []
    this.values = []
  }
}
