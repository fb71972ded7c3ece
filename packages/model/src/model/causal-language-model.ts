import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError, LudicError, parseArgument, ShapeError } from '@ludic/core'
import { z } from 'zod'
import type { ModelConfig } from '../config/model-config.js'
import { geluTanh, layerNorm } from '../layers/layer-norm.js'
import { rmsNorm } from '../layers/rms-norm.js'
import { swiGlu } from '../layers/swiglu.js'
import { applyRotary, inverseFrequencies, rotaryTables } from '../layers/rotary-embedding.js'
import { matchesParameterNamePattern, type ParameterNamePattern } from '../parameter-name-pattern.js'
import { recomputed } from '../training/recompute.js'
import { checkContextLength, ContextLengthError } from './context-length.js'
import { KeyValueCache } from './key-value-cache.js'
import { architectureOf, linearIsInputMajor, type ArchitectureDefinition, type NormPart } from './architecture.js'
import { attentionBias, defaultPositions, readIntegerMatrix, type HostMatrix, type IntegerMatrix } from './model-inputs.js'

/** Options of `model.forward` and `model.hiddenStates`. */
export interface ForwardOptions {
  /**
   * `[batch, past + time]`: 1 for tokens to attend to, 0 for padding, over the cached positions and the new
   * ones (transformers' convention). Default: every position attended.
   */
  attentionMask?: IntegerMatrix
  /**
   * `[batch, time]` position ids of the new tokens. Default: `cumsum(attentionMask) - 1` when a mask is given
   * (so left padding does not shift positions, as transformers' `generate`), else `past … past + time - 1`.
   */
  positions?: IntegerMatrix
  /** Keys and values of earlier positions; the new ones are appended to it (see `KeyValueCache`). */
  cache?: KeyValueCache
  /** Training mode: LoRA dropout is applied. Default: false. */
  training?: boolean
  /**
   * Recompute each layer in the backward pass instead of keeping its intermediates for the gradient
   * (activation checkpointing, see `recomputed`): a gradient's memory holds one layer's activations, not all
   * of them, for one more forward pass of time. Not with a cache, nor with adapter dropout in training mode.
   * Default: false.
   */
  recomputeLayers?: boolean
}

const integerMatrixSchema = z.custom<IntegerMatrix>(
  (value) => value instanceof tf.Tensor || Array.isArray(value),
  'must be an int32 tf.Tensor2D or an array of integer rows',
)

/** The schema of `ForwardOptions` (the matrices' contents are checked by the forward pass itself). */
export const forwardOptionsSchema = z
  .object({
    attentionMask: integerMatrixSchema.optional(),
    positions: integerMatrixSchema.optional(),
    cache: z.instanceof(KeyValueCache, { message: 'must be a KeyValueCache (model.createCache())' }).optional(),
    training: z.boolean().default(false),
    recomputeLayers: z.boolean().default(false),
  })
  .strict()

/** Something added to the output of a linear layer (a LoRA adapter): `y = x Wᵀ + b + adapter(x)`. */
export interface LinearAdapter {
  /** `x`: `[rows, in]` → `[rows, out]`. */
  apply(x: tf.Tensor2D, training: boolean): tf.Tensor2D
  /** Whether the adapter is currently merged into the base weight (then `apply` is skipped). */
  readonly merged: boolean
  /** Whether `apply` draws randomness in training mode (dropout): then a layer cannot be recomputed. */
  readonly stochastic?: boolean
}

let modelCount = 0

/**
 * The rows (batch · time) from which `fusedLinear` projects q, k and v (and gate and up) with one matmul:
 * concatenating the weights costs a copy of them, about `1 / rows` of the matmul's work.
 */
const fusedProjectionMinimumRows = 32

/**
 * The most floats of weights `fusedLinear` concatenates in one call: 2¹⁹ (2 MiB). The copy is a pass over the
 * weights on every forward (and the split of their gradient on every backward) while what it saves is a kernel or
 * two, so it pays for small weights only: on the native backend fusing made the small presets' training step
 * faster, a mid-sized one's no faster, and a Qwen3-0.6B-shaped prefill slower, the copy outweighing the kernels
 * saved (the package README's "Fused projections, measured" has the figures).
 */
const fusedProjectionMaximumWeightFloats = 2 ** 19

/**
 * Whether the active backend gains from `fusedLinear`. Not WebAssembly: there its products of the wider
 * concatenated weights measured slower than the separate ones (package README, "Fused projections, measured").
 */
function fusesProjections(): boolean {
  return tf.getBackend() !== 'wasm'
}

/**
 * A decoder-only transformer (Llama, Qwen2, Qwen3, Mistral), nanoGPT style: embedding, then per layer
 * `x + attention(norm(x))` and `x + mlp(norm(x))`, a final norm and the output projection.
 *
 * Parameters are `tf.Variable`s keyed by Hugging Face's names and stored in Hugging Face's shapes (linear
 * weights `[out, in]`), so checkpoints map one to one and an optimizer can address them by name. Create
 * one with `createModel` or `loadModel`; free it with `dispose()`.
 */
export class CausalLanguageModel {
  readonly config: ModelConfig
  /** The `config.json` the model was loaded from, if any: its other fields are written back on save. */
  readonly sourceConfig: Readonly<Record<string, unknown>> | undefined
  /** Unique prefix of the variables' tfjs names (tfjs needs globally unique variable names). */
  readonly variablePrefix: string
  private readonly weights = new Map<string, tf.Variable>()
  private readonly adapters = new Map<string, LinearAdapter>()
  private readonly inverseFrequency: Float32Array
  private readonly definition: ArchitectureDefinition
  private contextLimit: number
  private disposed = false

  constructor(
    config: ModelConfig,
    weights: ReadonlyMap<string, tf.Tensor>,
    options: { sourceConfig?: Record<string, unknown>; maxContextTokens?: number | undefined } = {},
  ) {
    this.config = config
    this.sourceConfig = options.sourceConfig
    this.variablePrefix = `ludic-model-${++modelCount}`
    this.definition = architectureOf(config)
    this.contextLimit = config.maxPositionEmbeddings
    if (options.maxContextTokens !== undefined) this.maxContextTokens = options.maxContextTokens
    for (const [name, tensor] of weights) this.addParameter(name, tensor)
    this.inverseFrequency = inverseFrequencies(config.headDim, config.ropeTheta, config.ropeScaling)
  }

  /**
   * The most positions one forward pass or generation may span (cached + new tokens, left padding included;
   * prompt + new tokens for `generate`), checked before anything reaches the backend (a `ContextLengthError`).
   * Default: the config's `maxPositionEmbeddings`. Rotary models may be given more (they extrapolate, with
   * the quality that brings, and attention memory grows with its square); GPT-2's learned positions cap it
   * at `n_positions`.
   */
  get maxContextTokens(): number {
    return this.contextLimit
  }

  set maxContextTokens(value: number) {
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new InvalidArgumentError({ argument: 'maxContextTokens', value, message: 'must be a positive integer' })
    }
    if (this.definition.positions === 'learned' && value > this.config.maxPositionEmbeddings) {
      throw new InvalidArgumentError({
        argument: 'maxContextTokens',
        value,
        message: `GPT-2 has learned positions 0 … ${this.config.maxPositionEmbeddings - 1} only (n_positions ${this.config.maxPositionEmbeddings})`,
      })
    }
    this.contextLimit = value
  }

  // ---- parameters -------------------------------------------------------------------------------

  /** Every parameter by Hugging Face name (`model.layers.0.self_attn.q_proj.weight` …), in checkpoint order. */
  parameters(): Map<string, tf.Variable> {
    this.checkAlive()
    return new Map(this.weights)
  }

  /** The parameters that are not frozen (`variable.trainable`), by name. */
  trainableParameters(): Map<string, tf.Variable> {
    return new Map([...this.parameters()].filter(([, variable]) => variable.trainable))
  }

  /** One parameter by name; throws naming the nearest names when there is none. */
  parameter(name: string): tf.Variable {
    const variable = this.weights.get(name)
    if (variable === undefined) {
      throw new InvalidArgumentError({
        argument: 'name',
        value: name,
        message: `the model has no parameter of that name (it has ${this.weights.size}, e.g. ${[...this.weights.keys()].slice(0, 3).join(', ')})`,
      })
    }
    return variable
  }

  /** Total number of parameter elements. */
  get numParameters(): number {
    let total = 0
    for (const variable of this.weights.values()) total += variable.size
    return total
  }

  /**
   * Adds a parameter (a copy of `initialValue`, as a variable) under a Hugging Face name; used by LoRA and
   * the value and reward heads. The caller keeps ownership of `initialValue`.
   */
  addParameter(name: string, initialValue: tf.Tensor, trainable = true): tf.Variable {
    this.checkAlive()
    if (this.weights.has(name)) throw new InvalidArgumentError({ argument: 'name', value: name, message: 'the model already has a parameter of that name' })
    const variable = tf.variable(initialValue, trainable, `${this.variablePrefix}/${name}`)
    this.weights.set(name, variable)
    return variable
  }

  /** Removes and frees a parameter added with `addParameter`. */
  removeParameter(name: string): void {
    this.parameter(name).dispose()
    this.weights.delete(name)
  }

  /**
   * Marks the parameters matching `patterns` as frozen (`trainable = false`) and returns their names. A pattern
   * is a glob over the whole name (`'model.embed_tokens.weight'`, `'model.layers.0.**'`, `'**.bias'`) or a
   * `RegExp` (see `ParameterNamePattern`); patterns that match no parameter are an `InvalidArgumentError`.
   */
  freeze(patterns: ParameterNamePattern | readonly ParameterNamePattern[]): string[] {
    return this.setTrainable(patterns, false, 'freeze')
  }

  /** Marks the parameters matching `patterns` as trainable again and returns their names (see `freeze`). */
  unfreeze(patterns: ParameterNamePattern | readonly ParameterNamePattern[]): string[] {
    return this.setTrainable(patterns, true, 'unfreeze')
  }

  private setTrainable(patterns: ParameterNamePattern | readonly ParameterNamePattern[], trainable: boolean, caller: string): string[] {
    const matched = [...this.parameters()].filter(([name]) => matchesParameterNamePattern(name, patterns))
    if (matched.length === 0) {
      const some = [...this.weights.keys()].slice(0, 3).join(', ')
      throw new InvalidArgumentError({
        argument: 'patterns',
        value: patterns,
        message: `${caller}: matches no parameter (a string is a glob over the whole dotted name, e.g. 'model.layers.0.**' or '**.bias'; the names are like ${some}, …)`,
      })
    }
    for (const [, variable] of matched) variable.trainable = trainable
    return matched.map(([name]) => name)
  }

  /** Attaches (or with `undefined`, detaches) an adapter to a linear layer, e.g. `model.layers.0.self_attn.q_proj`. */
  setAdapter(linearName: string, adapter: LinearAdapter | undefined): void {
    this.parameter(`${linearName}.weight`)
    if (adapter === undefined) this.adapters.delete(linearName)
    else this.adapters.set(linearName, adapter)
  }

  /** The adapters attached to linear layers, by layer name. */
  linearAdapters(): Map<string, LinearAdapter> {
    return new Map(this.adapters)
  }

  /**
   * The linear layers whose unmerged adapter draws dropout in training mode (`LinearAdapter.stochastic`): a forward
   * with `training` draws randomness exactly when there is one, so a layer cannot be recomputed then and identical rows
   * do not give identical states.
   */
  stochasticLayers(): string[] {
    return [...this.adapters].filter(([, adapter]) => !adapter.merged && adapter.stochastic === true).map(([name]) => name)
  }

  /**
   * The names of the linear layers (`model.layers.0.self_attn.q_proj`, …; GPT-2's `transformer.h.0.attn.c_attn`,
   * …; `lm_head` when untied).
   */
  linearNames(): string[] {
    const linear = /(_proj|\.c_attn|\.c_fc)\.weight$|^lm_head\.weight$/
    return [...this.weights.keys()].filter((name) => linear.test(name) && !/\.lora_[AB]\./.test(name)).map((name) => name.slice(0, -'.weight'.length))
  }

  /** A cache for incremental decoding (see `KeyValueCache`). */
  createCache(): KeyValueCache {
    return new KeyValueCache(this.config.numHiddenLayers)
  }

  dispose(): void {
    if (this.disposed) return
    for (const variable of this.weights.values()) variable.dispose()
    this.weights.clear()
    this.adapters.clear()
    this.disposed = true
  }

  get isDisposed(): boolean {
    return this.disposed
  }

  // ---- forward ----------------------------------------------------------------------------------

  /**
   * Next-token logits `[batch, time, vocab]` (float32) for `inputIds` `[batch, time]` (int32 ids in
   * `[0, vocab)`). With a cache, `inputIds` are the new tokens only and the cache grows by `time`.
   * Differentiable with respect to the parameters.
   */
  forward(inputIds: IntegerMatrix, options: ForwardOptions = {}): tf.Tensor3D {
    return tf.tidy(() => this.logitsFromHidden(this.hiddenStates(inputIds, options)))
  }

  /** The final-normed hidden states `[batch, time, hidden]`, before the output projection. */
  hiddenStates(inputIds: IntegerMatrix, options: ForwardOptions = {}): tf.Tensor3D {
    this.checkAlive()
    const { config } = this
    const ids = readIntegerMatrix(inputIds, 'inputIds', [0, config.vocabSize])
    const { rows: batch, columns: time } = ids
    if (batch === 0 || time === 0)
      throw new ShapeError({ argument: 'inputIds', expected: [-1, -1], actual: [batch, time], message: 'needs at least one row and one token' })
    const { attentionMask, positions: givenPositions, cache, training, recomputeLayers } = parseArgument(forwardOptionsSchema, options, 'options')
    if (recomputeLayers && cache !== undefined) {
      throw new InvalidArgumentError({ argument: 'options.recomputeLayers', value: true, message: 'recomputes layers for a gradient: not with a cache' })
    }
    const stochastic = recomputeLayers && training ? this.stochasticLayers() : []
    if (stochastic.length > 0) {
      throw new InvalidArgumentError({
        argument: 'options.recomputeLayers',
        value: true,
        message: `the adapters of ${stochastic.slice(0, 3).join(', ')}${stochastic.length > 3 ? ', …' : ''} draw dropout in training mode, which a recomputed layer would draw anew`,
      })
    }
    cache?.checkBatch(batch)
    const past = cache?.length ?? 0
    const mask = attentionMask === undefined ? undefined : readIntegerMatrix(attentionMask, 'attentionMask', [0, 2])
    if (mask !== undefined && (mask.rows !== batch || mask.columns !== past + time)) {
      throw new ShapeError({
        argument: 'attentionMask',
        expected: [batch, past + time],
        actual: [mask.rows, mask.columns],
        message: 'must cover the cached and the new positions',
      })
    }
    if (past + time > 2 * this.maxContextTokens) {
      // Each row's positions are checked below; this bounds the padding (left-padded prompts and right-padded
      // responses, each within the context, span at most twice it).
      throw new ContextLengthError({
        argument: 'inputIds',
        value: [batch, time],
        limit: 2 * this.maxContextTokens,
        requested: past + time,
        message: `the cache (${past} positions) + inputIds (${time} a row) span ${past + time} positions, padding included, past twice the model's context of ${this.maxContextTokens} tokens`,
      })
    }
    const positions = this.resolvePositions(givenPositions, batch, time, past, mask)
    const largest = positions.reduce((maximum, position) => Math.max(maximum, position), 0)
    if (this.definition.positions === 'learned' && largest >= config.maxPositionEmbeddings) {
      throw new InvalidArgumentError({
        argument: 'positions',
        value: largest,
        message: `GPT-2 has learned positions 0 … ${config.maxPositionEmbeddings - 1} only`,
      })
    }
    checkContextLength(this, largest + 1, {
      argument: givenPositions === undefined ? 'inputIds' : 'positions',
      value: largest,
      what:
        givenPositions === undefined
          ? `the longest row (${past > 0 ? `the cache's ${past} positions and ` : ''}its tokens${mask === undefined ? '' : ' the attention mask attends'})`
          : `position ${largest} (counting from 0)`,
    })

    const hidden = tf.tidy(() => {
      const { definition } = this
      const bias = attentionBias(batch, time, past, mask, config.slidingWindow) // [batch or 1, 1, time, past + time]
      const rotary = definition.positions === 'rotary' ? rotaryTables(this.inverseFrequency, positions, batch, time) : undefined // each [batch, 1, time, headDim / 2]
      const context: AttentionContext = { batch, time, rotary, bias, cache, training }
      const tokens = tf.tensor2d(ids.data, [batch, time], 'int32')
      let x = tf.gather(this.parameter(definition.embedding), tokens) as tf.Tensor3D // [batch, time, hidden]
      if (definition.positionEmbedding !== undefined) {
        x = tf.add(x, tf.gather(this.parameter(definition.positionEmbedding), tf.tensor2d(positions, [batch, time], 'int32'))) // learned positions
      }
      for (let layer = 0; layer < config.numHiddenLayers; layer++) {
        const parts = definition.layer(layer)
        // One scope a layer: its intermediates that no gradient saved are freed before the next layer runs.
        const step = (input: tf.Tensor, stepContext: AttentionContext) =>
          tf.tidy(() => {
            const attended = tf.add(input, this.attention(layer, this.norm(input, parts.attentionNorm), stepContext))
            return tf.add(attended, this.mlp(layer, this.norm(attended, parts.mlpNorm), stepContext))
          })
        if (recomputeLayers) {
          const parameters = [...this.weights]
            .filter(([name, variable]) => variable.trainable && name.startsWith(`${parts.prefix}.`))
            .map(([, variable]) => variable)
          const tables = rotary === undefined ? [] : [rotary.cos, rotary.sin]
          x = recomputed(
            ([input, savedBias, cos, sin]) =>
              step(input!, { ...context, bias: savedBias!, rotary: rotary === undefined ? undefined : { cos: cos!, sin: sin! } }),
            [x, bias, ...tables],
            parameters,
          ) as tf.Tensor3D
        } else x = step(x, context) as tf.Tensor3D
      }
      return this.norm(x, definition.finalNorm) as tf.Tensor3D
    })
    cache?.advance(batch, time)
    return hidden
  }

  /**
   * The output projection's weight `[vocab, hidden]` when `logitsFromHidden` is `h Wᵀ` alone — the tied embedding,
   * or `lm_head` without a bias or an unmerged adapter — else undefined (the logits need `logitsFromHidden`).
   */
  plainHeadWeight(): tf.Variable | undefined {
    if (this.config.tieWordEmbeddings) return this.parameter(this.definition.embedding)
    const adapter = this.adapters.get('lm_head')
    if ((adapter !== undefined && !adapter.merged) || this.weights.has('lm_head.bias')) return undefined
    return this.parameter('lm_head.weight')
  }

  /** Logits `[batch, time, vocab]` from final-normed hidden states `[batch, time, hidden]`. */
  logitsFromHidden(hidden: tf.Tensor3D, training = false): tf.Tensor3D {
    const [batch, time, width] = hidden.shape
    return tf.tidy(() => {
      const flat = tf.reshape(hidden, [batch * time, width]) as tf.Tensor2D // [batch · time, hidden]
      const logits = this.config.tieWordEmbeddings
        ? tf.matMul(flat, this.parameter(this.definition.embedding), false, true)
        : this.linear('lm_head', flat, training)
      return tf.reshape(logits, [batch, time, this.config.vocabSize]) as tf.Tensor3D // [batch, time, vocab]
    })
  }

  /** The definition's norm: RMSNorm, or LayerNorm with a bias (GPT-2). */
  private norm(x: tf.Tensor, part: NormPart): tf.Tensor {
    const weight = this.parameter(`${part.name}.weight`)
    if (this.definition.norm === 'layer') return layerNorm(x, weight, this.parameter(`${part.name}.bias`), this.config.rmsNormEps)
    return rmsNorm(x, weight, this.config.rmsNormEps)
  }

  /**
   * Causal self-attention; `h`: `[batch, time, hidden]`. q, k and v from the definition's projections (three, or
   * one split in three: GPT-2's `c_attn`), each query and key head RMS-normalised where the definition has q/k norms
   * (Qwen3), rotated with rotary positions (not with learned ones), attended, and projected out.
   */
  private attention(layer: number, h: tf.Tensor, context: AttentionContext): tf.Tensor {
    const { batch, time, rotary, training } = context
    const { numAttentionHeads: heads, numKeyValueHeads: keyValueHeads, headDim, hiddenSize, rmsNormEps } = this.config
    const parts = this.definition.layer(layer)
    const flat = tf.reshape(h, [batch * time, hiddenSize]) as tf.Tensor2D // [batch · time, hidden]
    const projections = parts.queryKeyValue.map((part) => part.name)
    const fused = projections.length === 1 ? this.linear(projections[0]!, flat, training) : this.fusedLinear(projections, flat, training) // [batch · time, (heads + 2 kvHeads) · headDim]
    let attended: tf.Tensor2D // [batch · time, heads · headDim]
    if (fused !== undefined && rotary !== undefined && parts.queryNorm === undefined) {
      // One transpose for q, k and v, and one rotation for q and k together.
      const { cos, sin } = rotary
      const allHeads = tf.transpose(tf.reshape(fused, [batch, time, heads + 2 * keyValueHeads, headDim]), [0, 2, 1, 3]) // [batch, heads + 2 kvHeads, time, headDim]
      const [queryKey, value] = tf.split(allHeads, [heads + keyValueHeads, keyValueHeads], 1) as [tf.Tensor, tf.Tensor]
      const [rotatedQuery, rotatedKey] = tf.split(applyRotary(queryKey, cos, sin), [heads, keyValueHeads], 1) as [tf.Tensor, tf.Tensor]
      attended = this.attend(layer, rotatedQuery, rotatedKey, value, context)
    } else {
      const [queryRows, keyRows, valueRows] =
        fused === undefined
          ? projections.map((name) => this.linear(name, flat, training))
          : (tf.split(fused, [heads * headDim, keyValueHeads * headDim, keyValueHeads * headDim], -1) as tf.Tensor2D[])
      let query = tf.reshape(queryRows!, [batch, time, heads, headDim]) // [batch, time, heads, headDim]
      let key = tf.reshape(keyRows!, [batch, time, keyValueHeads, headDim]) // [batch, time, kvHeads, headDim]
      const value = tf.reshape(valueRows!, [batch, time, keyValueHeads, headDim]) // [batch, time, kvHeads, headDim]
      if (parts.queryNorm !== undefined && parts.keyNorm !== undefined) {
        query = rmsNorm(query, this.parameter(`${parts.queryNorm.name}.weight`), rmsNormEps)
        key = rmsNorm(key, this.parameter(`${parts.keyNorm.name}.weight`), rmsNormEps)
      }
      let headsQuery = tf.transpose(query, [0, 2, 1, 3]) // [batch, heads, time, headDim]
      let headsKey = tf.transpose(key, [0, 2, 1, 3]) // [batch, kvHeads, time, headDim]
      if (rotary !== undefined) {
        headsQuery = applyRotary(headsQuery, rotary.cos, rotary.sin)
        headsKey = applyRotary(headsKey, rotary.cos, rotary.sin)
      }
      attended = this.attend(layer, headsQuery, headsKey, tf.transpose(value, [0, 2, 1, 3]), context)
    }
    return tf.reshape(this.linear(parts.output.name, attended, training), [batch, time, hiddenSize]) // [batch, time, hidden]
  }

  /**
   * softmax(q kᵀ / √headDim + bias) v with grouped-query attention (Ainslie et al., 2023): the `groups` query
   * heads that share a key/value head are stacked along time, so no key or value is repeated. `query`:
   * `[batch, heads, time, headDim]`; `key`, `value`: `[batch, kvHeads, time, headDim]`, appended to the cache
   * when there is one. Returns the heads merged: `[batch · time, heads · headDim]`.
   */
  private attend(layer: number, query: tf.Tensor, key: tf.Tensor, value: tf.Tensor, context: AttentionContext): tf.Tensor2D {
    const { batch, time, bias, cache } = context
    const { numAttentionHeads: heads, numKeyValueHeads: keyValueHeads, headDim } = this.config
    const groups = heads / keyValueHeads
    if (cache !== undefined) ({ key, value } = cache.append(layer, key as tf.Tensor4D, value as tf.Tensor4D)) // [batch, kvHeads, past + time, headDim]
    const total = key.shape[2]!
    const groupedQuery = tf.reshape(query, [batch, keyValueHeads, groups * time, headDim]) // [batch, kvHeads, groups · time, headDim]
    const scores = tf.mul(tf.matMul(groupedQuery, key, false, true), 1 / Math.sqrt(headDim)) // [batch, kvHeads, groups · time, past + time]
    const masked = tf.add(tf.reshape(scores, [batch, heads, time, total]), bias) // [batch, heads, time, past + time]
    const weights = tf.reshape(tf.softmax(masked), [batch, keyValueHeads, groups * time, total]) // [batch, kvHeads, groups · time, past + time]
    const attended = tf.reshape(tf.matMul(weights, value), [batch, heads, time, headDim]) // [batch, heads, time, headDim]
    return tf.reshape(tf.transpose(attended, [0, 2, 1, 3]), [batch * time, heads * headDim]) as tf.Tensor2D // [batch · time, heads · headDim]
  }

  /** The MLP: SwiGLU (Shazeer, 2020) `down(silu(gate(h)) · up(h))`, or GPT-2's `c_proj(gelu(c_fc(h)))`; `h`: `[batch, time, hidden]`. */
  private mlp(layer: number, h: tf.Tensor, context: AttentionContext): tf.Tensor {
    const { batch, time, training } = context
    const { hiddenSize } = this.config
    const parts = this.definition.layer(layer)
    const flat = tf.reshape(h, [batch * time, hiddenSize]) as tf.Tensor2D // [batch · time, hidden]
    let hidden: tf.Tensor2D // [batch · time, intermediate]
    if (this.definition.activation === 'gelu-tanh') hidden = geluTanh(this.linear(parts.mlpIn[0]!.name, flat, training)) as tf.Tensor2D
    else {
      const [gateName, upName] = parts.mlpIn.map((part) => part.name) as [string, string]
      const fused = this.fusedLinear([gateName, upName], flat, training) // [batch · time, 2 · intermediate]
      if (fused !== undefined) hidden = swiGlu(fused)
      else {
        const gate = this.linear(gateName, flat, training) // [batch · time, intermediate]
        const up = this.linear(upName, flat, training) // [batch · time, intermediate]
        hidden = tf.mul(tf.mul(gate, tf.sigmoid(gate)), up) as tf.Tensor2D
      }
    }
    return tf.reshape(this.linear(parts.mlpOut.name, hidden, training), [batch, time, hiddenSize]) // [batch, time, hidden]
  }

  /**
   * Input and output widths of a linear layer, and whether its weight is stored `[in, out]` (GPT-2's
   * `Conv1D`) rather than `[out, in]` (`nn.Linear`).
   */
  linearLayout(name: string): { inputs: number; outputs: number; inputMajor: boolean } {
    const [rows, columns] = this.parameter(`${name}.weight`).shape as [number, number]
    const inputMajor = linearIsInputMajor(this.definition, name)
    return inputMajor ? { inputs: rows, outputs: columns, inputMajor } : { inputs: columns, outputs: rows, inputMajor }
  }

  /**
   * `x [W₁; W₂; …]ᵀ + [b₁; b₂; …]`: the linear layers `names` (`[out, in]` weights reading the same input: q, k
   * and v; gate and up) as one matmul over their concatenated weights — fewer, larger kernels forward and
   * backward. The concatenation copies the weights on every call, so it is used only from
   * `fusedProjectionMinimumRows` rows up (a training batch or a prompt, not a decode step), for weights of at most
   * `fusedProjectionMaximumWeightFloats` floats together, and not when a layer has an unmerged adapter or only some
   * have a bias (then `undefined`: project them one by one). Nor in training when every weight is frozen (LoRA on
   * the other layers): the gradient's tape would keep the concatenated copy until the backward pass, where the
   * separate products keep only references to the weights.
   */
  private fusedLinear(names: readonly string[], x: tf.Tensor2D, training: boolean): tf.Tensor2D | undefined {
    if (x.shape[0] < fusedProjectionMinimumRows || this.definition.linearLayout === 'input-major' || !fusesProjections()) return undefined
    if (names.some((name) => this.adapters.get(name)?.merged === false)) return undefined
    const weights = names.map((name) => this.parameter(`${name}.weight`))
    if (training && weights.every((weight) => !weight.trainable)) return undefined
    if (weights.reduce((floats, weight) => floats + weight.size, 0) > fusedProjectionMaximumWeightFloats) return undefined
    const biases = names.map((name) => this.weights.get(`${name}.bias`))
    const biased = biases.filter((bias) => bias !== undefined)
    if (biased.length !== 0 && biased.length !== names.length) return undefined
    const weight = tf.concat(weights, 0) // [Σ out, in]
    const y = tf.matMul(x, weight, false, true) as tf.Tensor2D // [rows, Σ out]
    return biased.length === 0 ? y : (tf.add(y, tf.concat(biased, 0)) as tf.Tensor2D)
  }

  /** `x Wᵀ + b` (`x W + b` for `Conv1D`), plus an attached adapter's output; `x`: `[rows, in]` → `[rows, out]`. */
  private linear(name: string, x: tf.Tensor2D, training: boolean): tf.Tensor2D {
    const weight = this.parameter(`${name}.weight`)
    const bias = this.weights.get(`${name}.bias`)
    const inputMajor = linearIsInputMajor(this.definition, name)
    let y: tf.Tensor2D = tf.matMul(x, weight, false, !inputMajor) // [rows, out]
    if (bias !== undefined) y = tf.add(y, bias) as tf.Tensor2D
    const adapter = this.adapters.get(name)
    if (adapter !== undefined && !adapter.merged) y = tf.add(y, adapter.apply(x, training))
    return y
  }

  private resolvePositions(value: IntegerMatrix | undefined, batch: number, time: number, past: number, mask: HostMatrix | undefined): Int32Array {
    if (value === undefined) return defaultPositions(batch, time, past, mask)
    const positions = readIntegerMatrix(value, 'positions', [0, 2 ** 31 - 1])
    if (positions.rows !== batch || positions.columns !== time) {
      throw new ShapeError({
        argument: 'positions',
        expected: [batch, time],
        actual: [positions.rows, positions.columns],
        message: 'must have the shape of inputIds',
      })
    }
    return positions.data
  }

  private checkAlive(): void {
    if (this.disposed) throw new LudicError('the model was disposed')
  }
}

interface AttentionContext {
  batch: number
  time: number
  /** The rotary tables (with rotary positions only). */
  rotary: { cos: tf.Tensor; sin: tf.Tensor } | undefined
  bias: tf.Tensor
  cache: KeyValueCache | undefined
  training: boolean
}
