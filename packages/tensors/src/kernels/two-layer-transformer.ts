import * as tf from '@tensorflow/tfjs-core'
import '../backend/register-gradients.js'
import { sampleValues } from './backend-comparison.js'

/**
 * Test support: the smallest decoder-only transformer that runs every kernel a training step needs
 * (embedding gather and its UnsortedSegmentSum gradient, RMS normalisation, q/k/v projections,
 * causal-masked softmax attention with batched and transposed matmuls, a SwiGLU MLP in layer 0 and
 * a GELU MLP in layer 1, the output projection, log-softmax cross-entropy with a float32 one-hot,
 * and an Adam update). Written in plain `tf` ops, nanoGPT style: every reshape says its shape.
 */
export interface TransformerSize {
  vocabulary: number
  width: number
  heads: number
  hiddenWidth: number
  /** Sequences per batch and tokens per sequence. */
  batch: number
  time: number
}

export const tinyTransformerSize: TransformerSize = { vocabulary: 48, width: 32, heads: 4, hiddenWidth: 64, batch: 3, time: 12 }

/** Parameters by name (`layer0.query`…); the variables themselves carry tfjs's unique names. */
export type TransformerParameters = Record<string, tf.Variable>

/** Parameters from a deterministic seed (same values on every backend). */
export function createParameters(size: TransformerSize, seed = 7): TransformerParameters {
  let next = seed
  const matrix = (name: string, rows: number, columns: number): [string, tf.Variable] => {
    const scale = 1 / Math.sqrt(rows)
    const values = sampleValues(rows * columns, next++).map((value) => value * scale)
    return [name, tf.tidy(() => tf.variable(tf.tensor2d(values, [rows, columns])))]
  }
  const gain = (name: string): [string, tf.Variable] => [name, tf.tidy(() => tf.variable(tf.ones([size.width])))]
  const { width, hiddenWidth, vocabulary } = size
  return Object.fromEntries([
    matrix('embedding', vocabulary, width),
    ...[0, 1].flatMap((layer) => [
      gain(`layer${layer}.attentionNorm`),
      matrix(`layer${layer}.query`, width, width),
      matrix(`layer${layer}.key`, width, width),
      matrix(`layer${layer}.value`, width, width),
      matrix(`layer${layer}.attentionOutput`, width, width),
      gain(`layer${layer}.mlpNorm`),
      matrix(`layer${layer}.up`, width, hiddenWidth),
      ...(layer === 0 ? [matrix(`layer${layer}.gate`, width, hiddenWidth)] : []),
      matrix(`layer${layer}.down`, hiddenWidth, width),
    ]),
    gain('finalNorm'),
    matrix('output', width, vocabulary),
  ])
}

function rmsNorm(x: tf.Tensor, gain: tf.Tensor): tf.Tensor {
  // x: [..., width]; mean of squares over the last axis
  return tf.mul(tf.mul(x, tf.rsqrt(tf.add(tf.mean(tf.square(x), -1, true), 1e-6))), gain)
}

/** SwiGLU (Shazeer, 2020): silu(gate) · up. */
function swiglu(gate: tf.Tensor, up: tf.Tensor): tf.Tensor {
  return tf.mul(tf.mul(gate, tf.sigmoid(gate)), up)
}

/** GELU, exact form: x · Φ(x) = x/2 · (1 + erf(x/√2)). */
function gelu(x: tf.Tensor): tf.Tensor {
  return tf.mul(tf.mul(x, 0.5), tf.add(tf.erf(tf.mul(x, Math.SQRT1_2)), 1))
}

/** Mean next-token cross-entropy of `targets` [batch, time] given `tokens` [batch, time] (int32). */
export function transformerLoss(parameters: TransformerParameters, size: TransformerSize, tokens: tf.Tensor2D, targets: tf.Tensor2D): tf.Scalar {
  const { batch, time, width, heads, vocabulary } = size
  const headWidth = width / heads
  const p = (name: string): tf.Variable => parameters[name]!
  // 0 on and below the diagonal, -1e9 above: [time, time]
  const causalBias = tf.mul(tf.sub(1, tf.linalg.bandPart(tf.ones([time, time]), -1, 0)), -1e9)
  let x = tf.gather(p('embedding'), tokens) // [batch, time, width]
  for (const layer of [0, 1]) {
    const normed = tf.reshape(rmsNorm(x, p(`layer${layer}.attentionNorm`)), [batch * time, width])
    const splitHeads = (weights: tf.Tensor): tf.Tensor => tf.transpose(tf.reshape(tf.matMul(normed, weights), [batch, time, heads, headWidth]), [0, 2, 1, 3]) // [batch, heads, time, headWidth]
    const query = splitHeads(p(`layer${layer}.query`))
    const key = splitHeads(p(`layer${layer}.key`))
    const value = splitHeads(p(`layer${layer}.value`))
    const scores = tf.add(tf.mul(tf.matMul(query, key, false, true), 1 / Math.sqrt(headWidth)), causalBias) // [batch, heads, time, time]
    const attended = tf.matMul(tf.softmax(scores), value) // [batch, heads, time, headWidth]
    const merged = tf.reshape(tf.transpose(attended, [0, 2, 1, 3]), [batch * time, width])
    x = tf.add(x, tf.reshape(tf.matMul(merged, p(`layer${layer}.attentionOutput`)), [batch, time, width]))
    const mlpInput = tf.reshape(rmsNorm(x, p(`layer${layer}.mlpNorm`)), [batch * time, width])
    const up = tf.matMul(mlpInput, p(`layer${layer}.up`)) // [batch · time, hiddenWidth]
    const hidden = layer === 0 ? swiglu(tf.matMul(mlpInput, p(`layer${layer}.gate`)), up) : gelu(up)
    x = tf.add(x, tf.reshape(tf.matMul(hidden, p(`layer${layer}.down`)), [batch, time, width]))
  }
  const logits = tf.matMul(tf.reshape(rmsNorm(x, p('finalNorm')), [batch * time, width]), p('output')) // [batch · time, vocabulary]
  const logProbabilities = tf.logSoftmax(logits)
  const targetMask = tf.oneHot(tf.reshape(targets, [batch * time]), vocabulary, 1, 0, 'float32')
  return tf.neg(tf.mean(tf.sum(tf.mul(logProbabilities, targetMask), -1))) as tf.Scalar
}

/** Adam (Kingma & Ba, 2015) with bias correction; moments are variables created on the first step. */
export class AdamUpdate {
  private readonly firstMoments = new Map<string, tf.Variable>()
  private readonly secondMoments = new Map<string, tf.Variable>()
  private steps = 0

  constructor(
    private readonly learningRate = 1e-2,
    private readonly beta1 = 0.9,
    private readonly beta2 = 0.999,
    private readonly epsilon = 1e-8,
  ) {}

  /** `gradients` as `tf.variableGrads` returns them: keyed by the variables' tfjs names. */
  apply(parameters: TransformerParameters, gradients: tf.NamedTensorMap): void {
    this.steps++
    const correction1 = 1 - this.beta1 ** this.steps
    const correction2 = 1 - this.beta2 ** this.steps
    tf.tidy(() => {
      for (const [name, parameter] of Object.entries(parameters)) {
        const gradient = gradients[parameter.name]!
        const first = this.moment(this.firstMoments, name, parameter)
        const second = this.moment(this.secondMoments, name, parameter)
        first.assign(tf.add(tf.mul(first, this.beta1), tf.mul(gradient, 1 - this.beta1)))
        second.assign(tf.add(tf.mul(second, this.beta2), tf.mul(tf.square(gradient), 1 - this.beta2)))
        const step = tf.div(tf.div(first, correction1), tf.add(tf.sqrt(tf.div(second, correction2)), this.epsilon))
        parameter.assign(tf.sub(parameter, tf.mul(step, this.learningRate)))
      }
    })
  }

  private moment(moments: Map<string, tf.Variable>, name: string, parameter: tf.Variable): tf.Variable {
    let moment = moments.get(name)
    if (moment === undefined) {
      moment = tf.variable(tf.zerosLike(parameter), false)
      moments.set(name, moment)
    }
    return moment
  }

  dispose(): void {
    for (const moment of [...this.firstMoments.values(), ...this.secondMoments.values()]) moment.dispose()
  }
}

/**
 * One training step: loss and gradients (`tf.variableGrads`), then the Adam update. Returns the loss
 * and, when `keepGradients`, the gradients by parameter name (the caller disposes them); disposes
 * everything else.
 */
export function trainingStep(
  parameters: TransformerParameters,
  size: TransformerSize,
  optimizer: AdamUpdate,
  tokens: tf.Tensor2D,
  targets: tf.Tensor2D,
  keepGradients = false,
): { loss: number; gradients?: tf.NamedTensorMap } {
  const { value, grads } = tf.variableGrads(() => transformerLoss(parameters, size, tokens, targets), Object.values(parameters))
  const loss = value.dataSync()[0]!
  value.dispose()
  optimizer.apply(parameters, grads)
  if (keepGradients) {
    return { loss, gradients: Object.fromEntries(Object.entries(parameters).map(([name, parameter]) => [name, grads[parameter.name]!])) }
  }
  tf.dispose(Object.values(grads))
  return { loss }
}
