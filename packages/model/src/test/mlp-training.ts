import * as tf from '@tensorflow/tfjs-core'
import { createRandom, type Random } from '@ludic/core'
import { createAdamW, type AdamW } from '../training/adamw.js'
import { clipGradientsByGlobalNorm } from '../training/clip-gradients-by-global-norm.js'
import { computeGradients } from '../training/compute-gradients.js'
import { warmupCosineSchedule } from '../training/learning-rate-schedules.js'

/**
 * Test support (not exported): a two-layer MLP classifier over a `Map` of variables, trained with
 * everything a real run uses — a data order, dropout masks and label noise drawn from one seeded
 * generator, gradient clipping, a warm-up cosine schedule and AdamW — so that resuming from a checkpoint
 * can be checked bit for bit.
 */
export const mlpSize = { inputs: 8, hidden: 32, classes: 4, examples: 64, batch: 16 } as const
export const mlpTotalSteps = 12
const baseLearningRate = 0.05
const schedule = warmupCosineSchedule({ warmupSteps: 3, totalSteps: mlpTotalSteps, minRatio: 0.1 })

/** A fixed data set (the same for every seed). */
export function mlpDataset(): { inputs: Float32Array; labels: Int32Array } {
  const random = createRandom(99)
  const inputs = Float32Array.from({ length: mlpSize.examples * mlpSize.inputs }, () => random.nextNormal())
  const labels = Int32Array.from({ length: mlpSize.examples }, () => random.nextInt(mlpSize.classes))
  return { inputs, labels }
}

/** Parameters with Hugging Face-style names, initialised from `seed`. */
export function createMlpParameters(seed: number): Map<string, tf.Variable> {
  const random = createRandom(seed)
  const matrix = (rows: number, columns: number) =>
    tf.tidy(() =>
      tf.variable(
        tf.tensor(
          Float32Array.from({ length: rows * columns }, () => random.nextNormal() / Math.sqrt(rows)),
          [rows, columns],
        ),
      ),
    )
  return new Map([
    ['model.layers.0.weight', matrix(mlpSize.inputs, mlpSize.hidden)],
    ['model.layers.0.bias', tf.tidy(() => tf.variable(tf.zeros([mlpSize.hidden])))],
    ['model.norm.weight', tf.tidy(() => tf.variable(tf.ones([mlpSize.hidden])))],
    ['model.layers.1.weight', matrix(mlpSize.hidden, mlpSize.classes)],
    ['model.layers.1.bias', tf.tidy(() => tf.variable(tf.zeros([mlpSize.classes])))],
  ])
}

export function createMlpOptimizer(parameters: Map<string, tf.Variable>): AdamW {
  return createAdamW(parameters, { learningRate: baseLearningRate, weightDecay: 0.1, excludeFromWeightDecay: ['**.bias', '**norm.weight'] })
}

/**
 * Takes the optimizer steps `from` … `to − 1` (step numbers drive the schedule). Every random choice
 * comes from `random`, in a fixed order: the batch (with replacement), a dropout mask, label noise.
 */
export function trainMlp(parameters: Map<string, tf.Variable>, optimizer: AdamW, random: Random, from: number, to: number): number[] {
  const { inputs, labels } = mlpDataset()
  const p = (name: string) => parameters.get(name)!
  const losses: number[] = []
  for (let step = from; step < to; step++) {
    const rows = Array.from({ length: mlpSize.batch }, () => random.nextInt(mlpSize.examples))
    const keep = Float32Array.from({ length: mlpSize.batch * mlpSize.hidden }, () => (random.nextFloat() < 0.8 ? 1 / 0.8 : 0))
    const batchLabels = Int32Array.from(rows, (row) => (random.nextFloat() < 0.1 ? random.nextInt(mlpSize.classes) : labels[row]!))
    const batchInputs = new Float32Array(mlpSize.batch * mlpSize.inputs)
    rows.forEach((row, index) => batchInputs.set(inputs.subarray(row * mlpSize.inputs, (row + 1) * mlpSize.inputs), index * mlpSize.inputs))
    const x = tf.tensor2d(batchInputs, [mlpSize.batch, mlpSize.inputs])
    const mask = tf.tensor2d(keep, [mlpSize.batch, mlpSize.hidden])
    const targets = tf.tidy(() => tf.oneHot(tf.tensor1d(batchLabels, 'int32'), mlpSize.classes))
    const { loss, gradients } = computeGradients(
      () =>
        tf.tidy(() => {
          const hidden = tf.mul(tf.mul(tf.relu(tf.add(tf.matMul(x, p('model.layers.0.weight')), p('model.layers.0.bias'))), p('model.norm.weight')), mask) // [batch, hidden]
          const logits = tf.add(tf.matMul(hidden, p('model.layers.1.weight')), p('model.layers.1.bias')) // [batch, classes]
          return tf.losses.softmaxCrossEntropy(targets, logits) as tf.Scalar
        }),
      parameters,
    )
    const clipped = clipGradientsByGlobalNorm(gradients, 1)
    optimizer.step(clipped.gradients, { learningRate: baseLearningRate * schedule(step) })
    losses.push(loss.dataSync()[0]!)
    tf.dispose([x, mask, targets, loss, ...gradients.values(), ...clipped.gradients.values()])
  }
  return losses
}

/** A fresh run: parameters from `parameterSeed`, a new optimizer, the generator from `randomSeed`. */
export function startMlpRun(parameterSeed: number, randomSeed: number) {
  const parameters = createMlpParameters(parameterSeed)
  const optimizer = createMlpOptimizer(parameters)
  const random = createRandom(randomSeed)
  return {
    parameters,
    optimizer,
    random,
    dispose: () => {
      optimizer.dispose()
      tf.dispose([...parameters.values()])
    },
  }
}

/** Every parameter and optimizer tensor as bytes, for bit-for-bit comparison. */
export async function snapshotOf(parameters: Map<string, tf.Variable>, optimizer: AdamW): Promise<Map<string, Uint8Array>> {
  const snapshot = new Map<string, Uint8Array>()
  for (const [name, parameter] of parameters) snapshot.set(name, new Uint8Array(Float32Array.from(parameter.dataSync()).buffer))
  const state = await optimizer.exportState()
  for (const [name, tensor] of state.tensors) snapshot.set(`optimizer:${name}`, new Uint8Array(tensor.data.buffer))
  snapshot.set('optimizer:step', Uint8Array.of(state.step))
  return snapshot
}
