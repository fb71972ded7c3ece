import * as tf from '@tensorflow/tfjs-core'
import { yieldToEventLoop, type Random, type Sample } from '@ludic/core'
import { clipGradientsByGlobalNorm, computeGradients, sequenceLogprobs, type AdamW, type CausalLanguageModel } from '@ludic/model'
import { klLoss, readLossMetrics, type KlEstimator, type KlLossMetricTensors, type PolicyLoss, type PolicyLossMetricTensors } from '@ludic/objectives'
import { maskedMean } from '@ludic/tensors'
import { padRows, responseColumns, type TokenSequence } from './sequences.js'

/** What a PPO update needs besides the data: the model, its optimizer, and the loss terms' settings. */
export interface PpoSettings {
  model: CausalLanguageModel
  /** The parameters the optimizer updates (`model.trainableParameters()`). */
  parameters: ReadonlyMap<string, tf.Variable>
  optimizer: AdamW
  policyLoss: PolicyLoss
  /** The loss gets − c·entropy. */
  entropyCoefficient: number
  /** Response token ids that get no entropy bonus. */
  entropyExcluded: ReadonlySet<number>
  /** The KL term to the reference policy, when the batch has reference log-probs. */
  kl: { coefficient: number; estimator: KlEstimator } | undefined
  maxGradNorm: number
  /** Recompute each layer's activations in the backward pass (`sequenceLogprobs`' `recomputeLayers`). Default false. */
  recomputeLayers?: boolean
}

/** Per sample (row): its tokens and per-token values, all of the response's length. */
export interface PpoBatch {
  sequences: TokenSequence[]
  oldLogprobs: Float32Array[]
  advantages: Float32Array[]
  referenceLogprobs?: Float32Array[] | undefined
  /** Truncated importance weights of stale rollout weights (asynchronous collection). */
  importanceWeights?: Float32Array[] | undefined
  /** 1 where a token is external (a demonstration's, RL-PLUS), given to the policy loss as `externalMask`. */
  externalMasks?: Uint8Array[] | undefined
}

/**
 * PPO epochs (Schulman et al. 2017, as verl's actor update): `epochs` passes over the batch in mini-batches of
 * `miniBatchSize` rows, in a fresh order drawn from `random` each pass; one `ppoUpdate` per mini-batch, the event
 * loop given a turn after each (`yieldToEventLoop`). Returns each loss term's mean over the updates.
 */
export async function ppoEpochs(
  settings: PpoSettings,
  batch: PpoBatch,
  options: { epochs: number; miniBatchSize: number; learningRate: number; random: Random },
): Promise<Record<string, number>> {
  const sums: Record<string, number> = {}
  let updates = 0
  for (let epoch = 0; epoch < options.epochs; epoch++) {
    const order = options.random.shuffle(Array.from({ length: batch.sequences.length }, (_, index) => index))
    for (let start = 0; start < order.length; start += options.miniBatchSize) {
      const indices = order.slice(start, start + options.miniBatchSize)
      const pick = <T>(values: readonly T[] | undefined) => values && indices.map((index) => values[index]!)
      const miniBatch: PpoBatch = {
        sequences: pick(batch.sequences)!,
        oldLogprobs: pick(batch.oldLogprobs)!,
        advantages: pick(batch.advantages)!,
        referenceLogprobs: pick(batch.referenceLogprobs),
        importanceWeights: pick(batch.importanceWeights),
        ...(batch.externalMasks === undefined ? {} : { externalMasks: pick(batch.externalMasks) }),
      }
      for (const [name, value] of Object.entries(await ppoUpdate(settings, miniBatch, options.learningRate))) sums[name] = (sums[name] ?? 0) + value
      updates++
      await yieldToEventLoop() // concurrent work on this thread (a disaggregated source's episodes) goes on between updates
    }
  }
  return Object.fromEntries(Object.entries(sums).map(([name, total]) => [name, total / updates]))
}

/**
 * One PPO update on a mini-batch: loss = policy loss − c·entropy + β·KL, gradients clipped to `maxGradNorm`,
 * one AdamW step at `learningRate`. Returns the loss terms under their papers' names (`pgLoss`, `entropy`,
 * `approxKl`, `clipFraction`, `ratioMax`, `kl`, `loss`, `gradNorm`); leaves `tf.memory().numTensors` unchanged.
 * Nothing is read from the device while the gradient is computed: the loss terms are read once after it, before
 * the optimizer step (which a bad input, found then, never reaches). With `externalMasks` (demonstration rows),
 * the policy loss gets them as its `externalMask` input (`rl-plus` reads it; the other losses ignore it).
 */
export async function ppoUpdate(settings: PpoSettings, batch: PpoBatch, learningRate: number): Promise<Record<string, number>> {
  const { model, kl, entropyCoefficient, entropyExcluded } = settings
  const { sequences, oldLogprobs, advantages, referenceLogprobs, importanceWeights, externalMasks } = batch
  const rows = sequences.length
  const columns = responseColumns(sequences)
  const matrix = (values: readonly ArrayLike<number>[]) => tf.tensor2d(padRows(values, columns), [rows, columns])
  let policyMetrics: PolicyLossMetricTensors | undefined
  let klMetrics: KlLossMetricTensors | undefined
  let entropy: tf.Scalar | undefined
  const { loss, gradients } = computeGradients(
    () =>
      tf.tidy(() => {
        const { logprobs, entropies, responseMask } = sequenceLogprobs(
          model,
          { promptIds: sequences.map((s) => s.promptIds), responseIds: sequences.map((s) => s.responseIds) },
          { withEntropy: true, recomputeLayers: settings.recomputeLayers ?? false },
        ) // [rows, columns]
        const pg = settings.policyLoss({
          logprobs,
          oldLogprobs: matrix(oldLogprobs),
          advantages: matrix(advantages),
          mask: responseMask,
          ...(importanceWeights === undefined ? {} : { importanceWeights: matrix(importanceWeights) }),
          ...(externalMasks === undefined ? {} : { externalMask: tf.notEqual(matrix(externalMasks), 0) }),
        })
        const entropyMask =
          entropyExcluded.size === 0
            ? responseMask
            : tf.mul(tf.cast(responseMask, 'float32'), tf.tensor2d(entropyKeep(sequences, columns, entropyExcluded), [rows, columns]))
        policyMetrics = pg.metrics // kept by the loss: read (and freed) below
        entropy = tf.keep(maskedMean(entropies!, entropyMask) as tf.Scalar)
        let total: tf.Scalar = entropyCoefficient > 0 ? tf.sub(pg.loss, tf.mul(entropyCoefficient, entropy)) : pg.loss
        if (kl !== undefined && referenceLogprobs !== undefined) {
          const klTerm = klLoss({ logprobs, referenceLogprobs: matrix(referenceLogprobs), mask: responseMask }, { estimator: kl.estimator })
          klMetrics = klTerm.metrics
          total = tf.add(total, tf.mul(kl.coefficient, klTerm.loss))
        }
        return total
      }),
    settings.parameters,
  )
  const totals = tf.stack([loss, entropy!])
  try {
    const [read, [lossValue, entropyValue]] = await Promise.all([readLossMetrics({ policy: policyMetrics!, kl: klMetrics }), totals.data()])
    const clipped = clipGradientsByGlobalNorm(gradients, settings.maxGradNorm)
    settings.optimizer.step(clipped.gradients, { learningRate })
    tf.dispose([...clipped.gradients.values()])
    const { pgLoss, approxKl, clipFraction, ratioMax } = read.policy
    return {
      ...(read.kl === undefined ? {} : { kl: read.kl.klLoss }),
      pgLoss,
      entropy: entropyValue!,
      approxKl,
      clipFraction,
      ratioMax,
      loss: lossValue!,
      gradNorm: clipped.norm,
    }
  } finally {
    tf.dispose([totals, loss, entropy!, ...gradients.values()])
  }
}

/** 1 where a response token counts toward the entropy bonus, 0 where its id is excluded (row-major, padded). */
export function entropyKeep(sequences: readonly TokenSequence[], columns: number, excluded: ReadonlySet<number>): Float32Array {
  const keep = new Float32Array(sequences.length * columns)
  sequences.forEach((sequence, row) => {
    for (let column = 0; column < Math.min(columns, sequence.responseIds.length); column++)
      keep[row * columns + column] = excluded.has(sequence.responseIds[column]!) ? 0 : 1
  })
  return keep
}

/** Per token, min(exp(current − rollout log-prob), cap): the truncated importance ratio of stale rollout weights. */
export function importanceWeights(
  currentLogprobs: readonly Float32Array[],
  samples: readonly Sample[],
  cap: number,
): { weights: Float32Array[]; mean: number; truncated: number } {
  let total = 0
  let truncated = 0
  let count = 0
  const weights = samples.map((sample, row) => {
    const current = currentLogprobs[row]!
    return Float32Array.from(sample.rolloutLogprobs, (rolloutLogprob, column) => {
      const ratio = Math.exp(current[column]! - rolloutLogprob)
      const weight = Number.isFinite(ratio) ? Math.min(ratio, cap) : cap
      if (ratio > cap || !Number.isFinite(ratio)) truncated++
      total += weight
      count++
      return weight
    })
  })
  return { weights, mean: count === 0 ? 1 : total / count, truncated: count === 0 ? 0 : truncated / count }
}
