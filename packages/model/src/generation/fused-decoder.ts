import * as tf from '@tensorflow/tfjs-core'
import type { CausalLanguageModel } from '../model/causal-language-model.js'
import type { KeyValueCache } from '../model/key-value-cache.js'
import { architectureOf, type ArchitectureDefinition, type LinearPart, type NormPart } from '../model/architecture.js'
import { geluTanh } from '../layers/layer-norm.js'
import { inverseFrequencies } from '../layers/rotary-embedding.js'

/** One layer's inference weights, input-major (`[in, out]`), built once per generation. */
export interface FusedLayer {
  /**
   * `[hidden, (heads + kvHeads) · headDim]`: q and k, the attention norm's weight folded in (its bias into
   * `queryKeyBias`); q scaled by 1/√headDim, unless head norms follow (then `headNorms` carries the scale).
   */
  queryKey: tf.Tensor2D
  /**
   * With rotary positions and no head norms: the same columns rotated half (`rotate_half` of each head), so RoPE is
   * `queryKey·cos + queryKeyRotated·sin`.
   */
  queryKeyRotated: tf.Tensor2D | undefined
  queryKeyBias: tf.Tensor1D | undefined
  queryKeyRotatedBias: tf.Tensor1D | undefined
  /** Qwen3's RMSNorm weights of each q and k head, `[heads + kvHeads, headDim]` (q's scaled by 1/√headDim). */
  headNorms: tf.Tensor2D | undefined
  /** `[hidden, kvHeads · headDim]`, the attention norm folded in. */
  value: tf.Tensor2D
  valueBias: tf.Tensor1D | undefined
  /** `[heads · headDim, hidden]`. */
  output: tf.Tensor2D
  outputBias: tf.Tensor1D | undefined
  /** The MLP's input products `[hidden, intermediate]`, the MLP norm folded in: gate and up (SwiGLU), or one (GELU). */
  mlpIn: tf.Tensor2D[]
  mlpInBias: (tf.Tensor1D | undefined)[]
  /** `[intermediate, hidden]`. */
  down: tf.Tensor2D
  downBias: tf.Tensor1D | undefined
}

/**
 * Whether `FusedDecoder` can decode `model` for `contextLength` positions: it has a kernel for every part an
 * architecture's definition can have (`architectureOf`: RMSNorm or LayerNorm folded into the products that read them,
 * rotary positions folded into q and k or learned ones added to the embedding, q, k and v as three projections or
 * one, per-head q/k norms, SwiGLU or GELU, `[out, in]` or `[in, out]` weights), so every architecture; only a
 * generation longer than a sliding window is refused (`generate` refuses an explicit `decodePath: 'fused'` there,
 * and `'auto'` takes the layers).
 */
export function fusedDecoderSupports(model: CausalLanguageModel, contextLength: number): boolean {
  const { slidingWindow } = model.config
  return slidingWindow === null || contextLength <= slidingWindow
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
        const fused = fuseLayer(model, definition, layer)
        for (const tensor of layerTensors(fused)) tf.keep(tensor)
        layers.push(fused)
      }
      const output =
        definition.head === undefined ? (tf.transpose(model.parameter(definition.embedding)) as tf.Tensor2D) : inputMajor(model, definition.head.name) // [hidden, vocab]
      const folded = foldNorm(output, definition.head === undefined ? undefined : linearBias(model, definition.head.name), normOf(model, definition.finalNorm))
      head = tf.keep(folded.weight)
      headBias = folded.bias === undefined ? undefined : tf.keep(folded.bias)
    })
  } catch (error) {
    disposeFusedWeights({ layers, head: head!, headBias })
    throw error
  }
  return { layers, head: head!, headBias }
}

export function disposeFusedWeights(weights: FusedWeights): void {
  tf.dispose([weights.head, weights.headBias].filter((tensor) => tensor !== undefined))
  for (const layer of weights.layers) tf.dispose(layerTensors(layer))
}

/** Every tensor a fused layer holds. */
function layerTensors(layer: FusedLayer): tf.Tensor[] {
  return Object.values(layer)
    .flat()
    .filter((tensor): tensor is tf.Tensor => tensor !== undefined)
}

/** The weight of linear layer `name` input-major (`[in, out]`), with an attached unmerged adapter's update added. */
function inputMajor(model: CausalLanguageModel, name: string): tf.Tensor2D {
  const stored = model.parameter(`${name}.weight`)
  // A clone of an input-major weight (GPT-2's Conv1D), not the parameter itself: the fused weights are disposed with the decoder.
  const weight = (model.linearLayout(name).inputMajor ? tf.clone(stored) : tf.transpose(stored)) as tf.Tensor2D // [in, out]
  const adapter = model.linearAdapters().get(name)
  if (adapter === undefined || adapter.merged) return weight
  // A linear adapter's update, input-major, is its output for the identity matrix.
  return tf.add(weight, adapter.apply(tf.eye(weight.shape[0]), false)) as tf.Tensor2D
}

function linearBias(model: CausalLanguageModel, name: string): tf.Tensor1D | undefined {
  const bias = model.parameters().get(`${name}.bias`)
  return bias === undefined ? undefined : (tf.clone(bias) as tf.Tensor1D)
}

/** A norm's weight `[hidden, 1]` (to scale a product's rows) and LayerNorm's bias `[1, hidden]`. */
interface FoldedNorm {
  scale: tf.Tensor2D
  shift: tf.Tensor2D | undefined
}

function normOf(model: CausalLanguageModel, part: NormPart): FoldedNorm {
  const scale = tf.reshape(model.parameter(`${part.name}.weight`), [-1, 1]) as tf.Tensor2D
  return { scale, shift: part.bias ? (tf.reshape(model.parameter(`${part.name}.bias`), [1, -1]) as tf.Tensor2D) : undefined }
}

/** A product reading a norm's output, the norm folded in: `(γ⊙x̂ + β)·W + b = x̂·(diag γ·W) + (β·W + b)`. */
function foldNorm(weight: tf.Tensor2D, bias: tf.Tensor1D | undefined, norm: FoldedNorm): { weight: tf.Tensor2D; bias: tf.Tensor1D | undefined } {
  const folded = tf.mul(weight, norm.scale) as tf.Tensor2D
  if (norm.shift === undefined) return { weight: folded, bias }
  const shifted = tf.reshape(tf.matMul(norm.shift, weight), [-1]) as tf.Tensor1D // [out]
  return { weight: folded, bias: bias === undefined ? shifted : (tf.add(bias, shifted) as tf.Tensor1D) }
}

/** The linear layers `parts` side by side, input-major (`[in, Σ out]`), and their biases joined (zeros where one has none). */
function joinedLinear(model: CausalLanguageModel, parts: LinearPart[]): { weight: tf.Tensor2D; bias: tf.Tensor1D | undefined } {
  const weights = parts.map((part) => inputMajor(model, part.name))
  const biases = parts.map((part) => linearBias(model, part.name))
  const weight = weights.length === 1 ? weights[0]! : (tf.concat(weights, 1) as tf.Tensor2D)
  if (biases.every((bias) => bias === undefined)) return { weight, bias: undefined }
  const joined = biases.map((bias, index) => bias ?? tf.zeros([parts[index]!.outputs]))
  return { weight, bias: (joined.length === 1 ? joined[0]! : tf.concat(joined)) as tf.Tensor1D }
}

/**
 * `rotate_half` of each head as a signed permutation of `columns` columns (heads of `headDim`): output j takes
 * −x[j + half] (first half of a head) or x[j − half] (second half).
 */
function rotateHalfColumns(columns: number, headDim: number): { source: Int32Array; sign: Float32Array } {
  const half = headDim / 2
  const source = new Int32Array(columns)
  const sign = new Float32Array(columns)
  for (let column = 0; column < columns; column++) {
    const within = column % headDim
    source[column] = within < half ? column + half : column - half
    sign[column] = within < half ? -1 : 1
  }
  return { source, sign }
}

function fuseLayer(model: CausalLanguageModel, definition: ArchitectureDefinition, layer: number): FusedLayer {
  const { headDim, numAttentionHeads: heads, numKeyValueHeads: keyValueHeads, hiddenSize } = model.config
  const parts = definition.layer(layer)
  const queryWidth = heads * headDim
  const keyWidth = keyValueHeads * headDim
  const scale = 1 / Math.sqrt(headDim)
  const headNormed = parts.queryNorm !== undefined && parts.keyNorm !== undefined
  // q, k and v side by side (three projections, or one: GPT-2's c_attn); q scaled by 1/√headDim here unless head norms follow.
  const joined = joinedLinear(model, parts.queryKeyValue) // [hidden, (heads + 2 kvHeads) · headDim]
  const columnScale = tf.concat([tf.fill([queryWidth], headNormed ? 1 : scale), tf.ones([keyWidth])])
  const scaledQueryKey = tf.mul(tf.slice(joined.weight, [0, 0], [hiddenSize, queryWidth + keyWidth]), columnScale) as tf.Tensor2D
  const scaledQueryKeyBias = joined.bias === undefined ? undefined : (tf.mul(tf.slice(joined.bias, [0], [queryWidth + keyWidth]), columnScale) as tf.Tensor1D)
  const attentionNorm = normOf(model, parts.attentionNorm)
  const queryKey = foldNorm(scaledQueryKey, scaledQueryKeyBias, attentionNorm)
  const value = foldNorm(
    tf.slice(joined.weight, [0, queryWidth + keyWidth], [hiddenSize, keyWidth]),
    joined.bias === undefined ? undefined : tf.slice(joined.bias, [queryWidth + keyWidth], [keyWidth]),
    attentionNorm,
  )
  // RoPE folded into a second product where nothing sits between the product and the rotation.
  const foldsRotation = definition.positions === 'rotary' && !headNormed
  const { source, sign } = rotateHalfColumns(queryWidth + keyWidth, headDim)
  const rotate = (x: tf.Tensor, axis: number) => tf.mul(tf.gather(x, tf.tensor1d(source, 'int32'), axis), tf.tensor1d(sign)) // sign broadcasts over the last axis
  const headNorms = headNormed
    ? (tf.concat([
        tf.mul(tf.tile(tf.reshape(model.parameter(`${parts.queryNorm!.name}.weight`), [1, headDim]), [heads, 1]), scale),
        tf.tile(tf.reshape(model.parameter(`${parts.keyNorm!.name}.weight`), [1, headDim]), [keyValueHeads, 1]),
      ]) as tf.Tensor2D)
    : undefined
  const mlpNorm = normOf(model, parts.mlpNorm)
  const mlpIn = parts.mlpIn.map((part) => foldNorm(inputMajor(model, part.name), linearBias(model, part.name), mlpNorm))
  return {
    queryKey: queryKey.weight,
    queryKeyRotated: foldsRotation ? (rotate(queryKey.weight, 1) as tf.Tensor2D) : undefined,
    queryKeyBias: queryKey.bias,
    queryKeyRotatedBias: foldsRotation && queryKey.bias !== undefined ? (rotate(queryKey.bias, 0) as tf.Tensor1D) : undefined,
    headNorms,
    value: value.weight,
    valueBias: value.bias,
    output: inputMajor(model, parts.output.name),
    outputBias: linearBias(model, parts.output.name),
    mlpIn: mlpIn.map((product) => product.weight),
    mlpInBias: mlpIn.map((product) => product.bias),
    down: inputMajor(model, parts.mlpOut.name),
    downBias: linearBias(model, parts.mlpOut.name),
  }
}

/**
 * Single-token decode steps with far fewer, larger TensorFlow.js ops than `model.hiddenStates`: the same
 * function, rearranged for time = 1. Built once per generation from the model's current weights (and every
 * attached, unmerged linear adapter, added into the weight it adapts), it keeps
 *
 * - the weights input-major (`[in, out]`; a transposed operand costs the WebAssembly backend a transpose
 *   per call), with each norm's weight folded into the projections that read it (`W·(γ⊙x̂) = (W·diag γ)·x̂`) and a
 *   LayerNorm's bias into their biases (`+ β·W`), q and k fused into one matrix (GPT-2's one `c_attn` split into
 *   them) and 1/√headDim folded into q;
 * - RoPE as two matrix products: `rotate_half` is a signed permutation of each head's outputs, so its columns
 *   are precomputed and a step computes `x̂Wqk ⊙ cos + x̂(Wqk R) ⊙ sin`; after Qwen3's head norms, which sit
 *   between the product and the rotation, the permutation as a gather and a sign on q and k instead (1/√headDim
 *   then folded into the q norm's weight); GPT-2's learned positions added to the embedding, its GELU for SwiGLU;
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
  private readonly definition: ArchitectureDefinition
  /** `rotate_half` of every q and k column as a gather and a sign (`rotateHalfColumns`), for RoPE after head norms. */
  private readonly rotation: { source: tf.Tensor1D; sign: tf.Tensor1D } | undefined
  /** Per layer `[batch, kvHeads, headDim, length]`. */
  private keys: tf.Tensor4D[] = []
  /** Per layer `[batch, kvHeads, length, headDim]`. */
  private values: tf.Tensor4D[] = []
  private disposed = false

  constructor(private readonly model: CausalLanguageModel) {
    const { config } = model
    this.definition = architectureOf(config)
    this.inverseFrequency = inverseFrequencies(config.headDim, config.ropeTheta, config.ropeScaling)
    if (this.definition.positions === 'rotary' && this.definition.layer(0).queryNorm !== undefined) {
      const { source, sign } = rotateHalfColumns((config.numAttentionHeads + config.numKeyValueHeads) * config.headDim, config.headDim)
      this.rotation = { source: tf.tensor1d(source, 'int32'), sign: tf.tensor1d(sign) }
    }
    let weights: FusedWeights
    try {
      weights = fuseWeights(model)
    } catch (error) {
      if (this.rotation !== undefined) tf.dispose([this.rotation.source, this.rotation.sign])
      throw error
    }
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
    const { definition } = this
    const batch = tokens.length
    const length = this.keys[0]!.shape[3] + 1
    const groups = heads / keyValueHeads
    const queryWidth = heads * headDim
    const keyWidth = keyValueHeads * headDim
    if (definition.positionEmbedding !== undefined) {
      const largest = positions.reduce((maximum, position) => Math.max(maximum, position), 0)
      if (largest >= config.maxPositionEmbeddings)
        throw new RangeError(`FusedDecoder: position ${largest}, past the learned positions 0 … ${config.maxPositionEmbeddings - 1}`)
    }
    const rotary = definition.positions === 'rotary' ? this.rotaryRows(positions) : undefined
    const nextKeys: tf.Tensor4D[] = []
    const nextValues: tf.Tensor4D[] = []
    const logits = tf.tidy(() => {
      const cosine = rotary === undefined ? undefined : tf.tensor2d(rotary.cos, [batch, queryWidth + keyWidth])
      const sine = rotary === undefined ? undefined : tf.tensor2d(rotary.sin, [batch, queryWidth + keyWidth])
      const bias = padding === undefined ? undefined : tf.tensor4d(padding, [batch, 1, 1, length])
      // x̂ of the definition's norm; its weight and bias are folded into the products that read it.
      const normalise =
        definition.norm === 'rms'
          ? (x: tf.Tensor2D) => tf.mul(x, tf.rsqrt(tf.add(tf.mean(tf.square(x), -1, true), rmsNormEps))) as tf.Tensor2D
          : (x: tf.Tensor2D) => {
              const { mean, variance } = tf.moments(x, -1, true)
              return tf.mul(tf.sub(x, mean), tf.rsqrt(tf.add(variance, rmsNormEps))) as tf.Tensor2D
            }
      const linear = (x: tf.Tensor2D, weight: tf.Tensor2D, linearBias: tf.Tensor1D | undefined) => {
        const y = tf.matMul(x, weight)
        return linearBias === undefined ? y : tf.add(y, linearBias)
      }
      let x = tf.gather(this.model.parameter(definition.embedding), tf.tensor1d(tokens, 'int32')) as tf.Tensor2D // [batch, hidden]
      if (definition.positionEmbedding !== undefined)
        x = tf.add(x, tf.gather(this.model.parameter(definition.positionEmbedding), tf.tensor1d(positions, 'int32')))
      this.layers.forEach((weights, layer) => {
        const h = normalise(x)
        let queryKey: tf.Tensor2D // [batch, (heads + kvHeads) · headDim], rotated
        if (weights.queryKeyRotated !== undefined) {
          queryKey = tf.add(
            tf.mul(linear(h, weights.queryKey, weights.queryKeyBias), cosine!),
            tf.mul(linear(h, weights.queryKeyRotated, weights.queryKeyRotatedBias), sine!),
          ) as tf.Tensor2D
        } else {
          queryKey = linear(h, weights.queryKey, weights.queryKeyBias) as tf.Tensor2D
          if (weights.headNorms !== undefined) {
            const byHead = tf.reshape(queryKey, [batch, heads + keyValueHeads, headDim])
            const normed = tf.mul(tf.mul(byHead, tf.rsqrt(tf.add(tf.mean(tf.square(byHead), -1, true), rmsNormEps))), weights.headNorms)
            queryKey = tf.reshape(normed, [batch, queryWidth + keyWidth]) as tf.Tensor2D
          }
          // RoPE after the head norms: x ⊙ cos + rotate_half(x) ⊙ sin.
          if (cosine !== undefined) queryKey = tf.add(tf.mul(queryKey, cosine), tf.mul(this.rotateHalf(queryKey), sine!)) as tf.Tensor2D
        }
        const query = tf.reshape(tf.slice(queryKey, [0, 0], [batch, queryWidth]), [batch, keyValueHeads, groups, headDim])
        const key = tf.reshape(tf.slice(queryKey, [0, queryWidth], [batch, keyWidth]), [batch, keyValueHeads, headDim, 1])
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
        let hidden: tf.Tensor2D // [batch, intermediate]
        if (definition.activation === 'swiglu') {
          const gate = linear(m, weights.mlpIn[0]!, weights.mlpInBias[0])
          hidden = tf.mul(tf.mul(gate, tf.sigmoid(gate)), linear(m, weights.mlpIn[1]!, weights.mlpInBias[1])) as tf.Tensor2D
        } else hidden = geluTanh(linear(m, weights.mlpIn[0]!, weights.mlpInBias[0])) as tf.Tensor2D
        x = tf.add(x, linear(hidden, weights.down, weights.downBias))
      })
      return linear(normalise(x), this.head, this.headBias) as tf.Tensor2D // [batch, vocab]
    })
    tf.dispose([...this.keys, ...this.values])
    this.keys = nextKeys
    this.values = nextValues
    return logits
  }

  /** `rotate_half` of each q and k head of `x` (`[batch, (heads + kvHeads) · headDim]`). */
  private rotateHalf(x: tf.Tensor2D): tf.Tensor2D {
    const { source, sign } = this.rotation!
    return tf.mul(tf.gather(x, source, 1), sign) as tf.Tensor2D
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
    tf.dispose([...this.keys, ...this.values, ...(this.rotation === undefined ? [] : [this.rotation.source, this.rotation.sign])])
    disposeFusedWeights({ layers: this.layers, head: this.head, headBias: this.headBias })
    this.keys = []
    this.values = []
  }
}
