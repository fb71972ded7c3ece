import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError, yieldToEventLoop, type Random } from '@ludic/core'
import { clipGradientsByGlobalNorm, computeGradients, sequenceLogprobs, type AdamW, type CausalLanguageModel } from '@ludic/model'
import {
  exactKlLoss,
  isExactKlEstimator,
  klLoss,
  readLossMetrics,
  type KlEstimator,
  type KlLossMetricTensors,
  type KlTermEstimator,
  type PolicyLoss,
  type PolicyLossMetricTensors,
} from '@ludic/objectives'
import { padRows, raggedOf, type TokenSequence } from '../sequences.js'
import { criticLoss, updateSeparateCritic, type Critic, type CriticRows } from './critic.js'

/** What the policy update needs besides the data: the model, its optimizer, and the loss terms' settings. */
export interface PolicyUpdateSettings {
  model: CausalLanguageModel
  /** The parameters the optimizer updates (`model.trainableParameters()`). */
  parameters: ReadonlyMap<string, tf.Variable>
  optimizer: AdamW
  policyLoss: PolicyLoss
  /** The loss gets − c·entropy. */
  entropyCoefficient: number
  /** Response token ids that get no entropy bonus. */
  entropyExcluded: ReadonlySet<number>
  /**
   * The KL term to the reference policy: a sampled-token estimator's when the batch has reference log-probs, an exact
   * one's (`full`, `full-forward`) from `reference`, run beside the policy on each micro-batch.
   */
  kl: { coefficient: number; estimator: KlTermEstimator; reference?: CausalLanguageModel | undefined } | undefined
  maxGradNorm: number
  /**
   * The sampling temperature: the update's log-probs and entropy are those of softmax(logits / T), the distribution the
   * rollout sampled and recorded (verl's and TRL's rule). Default 1.
   */
  temperature?: number
  /** Recompute each layer's activations in the backward pass (`sequenceLogprobs`' `recomputeLayers`). Default false. */
  recomputeLayers?: boolean
  /**
   * Prompt + response tokens of one forward/backward pass at most: a mini-batch is split into micro-batches within
   * this budget (a sequence longer than it is a micro-batch alone), their gradients summed and one optimizer step
   * taken, with every loss normalised by the mini-batch's own counts (verl's `ppo_max_token_len_per_gpu` with
   * `use_dynamic_bsz`): the step is the one a single pass over the mini-batch would take. Default: none (one pass).
   */
  microBatchTokens?: number | undefined
  /**
   * The critic: a shared head's value loss joins each micro-batch's loss (one forward, one backward); a separate
   * critic takes its own step on each mini-batch after the policy's. Needs `oldValues` and `returns` rows.
   */
  critic?: Critic | undefined
}

/** Per sample (row): its tokens and per-token values, all of the response's length. */
export interface PolicyUpdateRows {
  sequences: readonly TokenSequence[]
  oldLogprobs: readonly Float32Array[]
  advantages: readonly Float32Array[]
  referenceLogprobs?: readonly Float32Array[] | undefined
  /** Truncated importance weights of an off-policy batch. */
  importanceWeights?: readonly Float32Array[] | undefined
  /** 1 where a token is external (a demonstration's, RL-PLUS), given to the policy loss as `externalMask`. */
  externalMasks?: readonly Uint8Array[] | undefined
  /** The critic's values when the batch was played (the value loss's clip centre), with a critic. */
  oldValues?: readonly Float32Array[] | undefined
  /** The value targets (the estimator's returns), with a critic. */
  returns?: readonly Float32Array[] | undefined
}

/** The rows at `indices`, in that order. */
export function pickRows<Rows extends object>(rows: Rows, indices: readonly number[]): Rows {
  const picked: Record<string, unknown> = {}
  for (const [name, value] of Object.entries(rows)) picked[name] = Array.isArray(value) ? indices.map((index) => value[index]) : value
  return picked as Rows
}

/**
 * Micro-batches of a mini-batch: consecutive rows whose prompt + response tokens stay within `budget` (a row alone
 * past it is one micro-batch). No budget: the whole mini-batch.
 */
export function microBatches(sequences: readonly TokenSequence[], budget: number | undefined): number[][] {
  if (budget === undefined) return [sequences.map((_, index) => index)]
  if (!Number.isInteger(budget) || budget < 1)
    throw new InvalidArgumentError({ argument: 'microBatchTokens', value: budget, message: 'must be a positive integer' })
  const batches: number[][] = []
  let current: number[] = []
  let tokens = 0
  sequences.forEach((sequence, index) => {
    const length = sequence.promptIds.length + sequence.responseIds.length
    if (current.length > 0 && tokens + length > budget) {
      batches.push(current)
      current = []
      tokens = 0
    }
    current.push(index)
    tokens += length
  })
  if (current.length > 0) batches.push(current)
  return batches
}

/**
 * Policy-update epochs (PPO, Schulman et al. 2017, as verl's actor update): `epochs` passes over the rows in
 * mini-batches of `miniBatchSize`, in a fresh order drawn from `random` each pass; one optimizer step per mini-batch
 * (`updateMiniBatch`), the event loop given a turn after each. Returns each loss term's mean over the steps.
 */
export async function policyUpdateEpochs(
  settings: PolicyUpdateSettings,
  rows: PolicyUpdateRows,
  options: {
    epochs: number
    miniBatchSize: number
    learningRate: number
    random: Random
    /** The policy's learning rate before its schedule: a separate critic follows the schedule's multiplier. Default: `learningRate`. */
    baseLearningRate?: number
  },
): Promise<Record<string, number>> {
  const sums: Record<string, number> = {}
  let updates = 0
  for (let epoch = 0; epoch < options.epochs; epoch++) {
    const order = options.random.shuffle(Array.from({ length: rows.sequences.length }, (_, index) => index))
    for (let start = 0; start < order.length; start += options.miniBatchSize) {
      const miniBatch = pickRows(rows, order.slice(start, start + options.miniBatchSize))
      const metrics = await updateMiniBatch(settings, miniBatch, options.learningRate)
      if (settings.critic?.kind === 'separate') {
        const scale = options.learningRate / Math.max(options.baseLearningRate ?? options.learningRate, Number.MIN_VALUE)
        Object.assign(
          metrics,
          updateSeparateCritic(settings.critic, criticRows(miniBatch), { microBatchTokens: settings.microBatchTokens, learningRateScale: scale }),
        )
      }
      for (const [name, value] of Object.entries(metrics)) sums[name] = (sums[name] ?? 0) + value
      updates++
      await yieldToEventLoop() // concurrent work on this thread (a disaggregated source's episodes) goes on between updates
    }
  }
  return Object.fromEntries(Object.entries(sums).map(([name, total]) => [name, total / updates]))
}

/** A micro-batch's loss terms, normalised by the whole mini-batch's counts, kept for reading after the backward passes. */
export interface MicroBatchTerms {
  loss: tf.Scalar
  entropy: tf.Scalar
  policy: PolicyLossMetricTensors
  kl: KlLossMetricTensors | undefined
  /** A shared critic head's value loss metrics (read while its loss was computed). */
  value: { valueLoss: number; valueClipFraction: number; valuePredictionMean: number } | undefined
  /** Bytes of live tensors at the end of this micro-batch's forward pass, when all its backward's activations are held. */
  forwardBytes: number
}

/**
 * One optimizer step on a mini-batch: loss = policy loss − c·entropy + β·KL, over its micro-batches (see
 * `microBatchTokens`) with their gradients summed as they come, clipped to `maxGradNorm`, one AdamW step at
 * `learningRate`. Every term is normalised by the mini-batch's counts (the policy loss through `globalTokenCount` and
 * `globalBatchSize`, the entropy and the KL as token means), so the summed gradient is the mini-batch's. Returns the
 * terms under their papers' names (`pgLoss`, `entropy`, `approxKl`, `clipFraction`, `ratioMax`, `kl`, `loss`,
 * `grad_norm`, `microBatches`, and `forwardTensorBytes`: the live tensor bytes at the end of the largest micro-batch's
 * forward, a lower bound of the update's peak, which adds the backward's temporaries); leaves `tf.memory().numTensors` unchanged. Nothing is read from the device while
 * gradients are computed: the terms are read after the last micro-batch, before the optimizer step (which a bad input
 * never reaches).
 */
export async function updateMiniBatch(settings: PolicyUpdateSettings, rows: PolicyUpdateRows, learningRate: number): Promise<Record<string, number>> {
  const accumulated = accumulateGradients(settings, rows)
  try {
    const read = await readTerms(accumulated.terms)
    const clipped = clipGradientsByGlobalNorm(accumulated.gradients, settings.maxGradNorm)
    settings.optimizer.step(clipped.gradients, { learningRate })
    tf.dispose([...clipped.gradients.values()])
    const tokens = Math.max(accumulated.globalTokenCount, 1)
    const weighted = (value: (index: number) => number) =>
      read.reduce((total, metrics, index) => total + (metrics.policy.validTokens / tokens) * value(index), 0)
    const summed = (value: (index: number) => number) => read.reduce((total, _, index) => total + value(index), 0)
    return {
      ...(read[0]!.kl === undefined ? {} : { kl: summed((index) => read[index]!.kl!.klLoss) }),
      ...(read[0]!.value === undefined
        ? {}
        : {
            valueLoss: summed((index) => read[index]!.value!.valueLoss),
            valueClipFraction: weighted((index) => read[index]!.value!.valueClipFraction),
            valuePredictionMean: weighted((index) => read[index]!.value!.valuePredictionMean),
          }),
      pgLoss: summed((index) => read[index]!.policy.pgLoss),
      entropy: summed((index) => read[index]!.entropy),
      approxKl: weighted((index) => read[index]!.policy.approxKl),
      clipFraction: weighted((index) => read[index]!.policy.clipFraction),
      ratioMax: Math.max(...read.map((metrics) => metrics.policy.ratioMax)),
      loss: summed((index) => read[index]!.loss),
      grad_norm: clipped.norm,
      microBatches: read.length,
      forwardTensorBytes: Math.max(...accumulated.terms.map((micro) => micro.forwardBytes)),
    }
  } finally {
    accumulated.dispose()
  }
}

/** A mini-batch's summed gradient and the unread terms of its micro-batches; `dispose` frees what is left. */
export interface AccumulatedGradients {
  gradients: Map<string, tf.Tensor>
  terms: MicroBatchTerms[]
  globalTokenCount: number
  dispose(): void
}

/**
 * The gradient of a mini-batch's loss, summed over its micro-batches as they are computed (each micro-batch's own
 * gradients freed once added), every term normalised by the mini-batch's counts. The caller reads the terms once
 * (`readTerms`) and disposes.
 */
export function accumulateGradients(settings: PolicyUpdateSettings, rows: PolicyUpdateRows): AccumulatedGradients {
  const globalTokenCount = rows.sequences.reduce((total, sequence) => total + sequence.responseIds.length, 0)
  const globalBatchSize = rows.sequences.length
  const entropyTokenCount = entropyTokens(rows.sequences, settings.entropyExcluded)
  const terms: MicroBatchTerms[] = []
  let sum: Map<string, tf.Tensor> | undefined
  const dispose = () => {
    for (const micro of terms) tf.dispose([micro.loss, micro.entropy])
    if (sum !== undefined) tf.dispose([...sum.values()])
  }
  try {
    for (const indices of microBatches(rows.sequences, settings.microBatchTokens)) {
      const { gradients, ...micro } = microBatchTerms(settings, pickRows(rows, indices), { globalTokenCount, globalBatchSize, entropyTokenCount })
      terms.push(micro)
      sum = accumulate(sum, gradients)
    }
  } catch (error) {
    dispose()
    throw error
  }
  return { gradients: sum!, terms, globalTokenCount, dispose }
}

/** Reads each micro-batch's loss terms once (freeing their metric tensors). */
export function readTerms(terms: readonly MicroBatchTerms[]) {
  return Promise.all(
    terms.map(async (micro) => {
      const totals = tf.stack([micro.loss, micro.entropy])
      try {
        const [metrics, values] = await Promise.all([readLossMetrics({ policy: micro.policy, kl: micro.kl }), totals.data()])
        return { ...metrics, value: micro.value, loss: values[0]!, entropy: values[1]! }
      } finally {
        totals.dispose()
      }
    }),
  )
}

/** The running sum of the micro-batches' gradients: `gradients` added to `sum`, both freed (the first is kept as the sum). */
function accumulate(sum: Map<string, tf.Tensor> | undefined, gradients: Map<string, tf.Tensor>): Map<string, tf.Tensor> {
  if (sum === undefined) return gradients
  const next = new Map<string, tf.Tensor>()
  for (const [name, gradient] of gradients) next.set(name, tf.add(sum.get(name)!, gradient))
  tf.dispose([...sum.values(), ...gradients.values()])
  return next
}

/** The loss of one micro-batch and its gradients, every term normalised by the mini-batch's counts. */
function microBatchTerms(
  settings: PolicyUpdateSettings,
  rows: PolicyUpdateRows,
  counts: { globalTokenCount: number; globalBatchSize: number; entropyTokenCount: number },
): MicroBatchTerms & { gradients: Map<string, tf.Tensor> } {
  const { model, kl, entropyCoefficient, entropyExcluded } = settings
  const { sequences, oldLogprobs, advantages, referenceLogprobs, importanceWeights, externalMasks } = rows
  let policy: PolicyLossMetricTensors | undefined
  let klMetrics: KlLossMetricTensors | undefined
  let value: MicroBatchTerms['value']
  let entropy: tf.Scalar | undefined
  let forwardBytes = 0
  const sharedCritic = settings.critic?.kind === 'shared' ? settings.critic : undefined
  // An exact KL (`full`, `full-forward`) comes from the whole distributions: the reference runs beside the policy.
  const exact = kl !== undefined && isExactKlEstimator(kl.estimator) ? kl : undefined
  if (exact !== undefined && exact.reference === undefined)
    throw new InvalidArgumentError({ argument: 'settings.kl.reference', value: undefined, message: `is needed by the exact estimator '${exact.estimator}'` })
  const { loss, gradients } = computeGradients(
    () =>
      tf.tidy(() => {
        const {
          logprobs,
          entropies,
          responseMask,
          values,
          kl: exactValues,
        } = sequenceLogprobs(model, raggedOf(sequences), {
          withEntropy: true,
          ...(exact === undefined ? {} : { klTo: { reference: exact.reference!, direction: exact.estimator === 'full' ? 'reverse' : 'forward' } }),
          temperature: settings.temperature ?? 1,
          recomputeLayers: settings.recomputeLayers ?? false,
          ...(sharedCritic === undefined ? {} : { valueHead: sharedCritic.valueHead }),
        }) // [rows, columns]
        // Every column is padded to the forward's own layout: one padding, derived from the forward.
        const [batch, columns] = logprobs.shape
        const matrix = (values: readonly ArrayLike<number>[]) => tf.tensor2d(padRows(values, columns), [batch, columns])
        const pg = settings.policyLoss({
          logprobs,
          oldLogprobs: matrix(oldLogprobs),
          advantages: matrix(advantages),
          mask: responseMask,
          globalTokenCount: Math.max(counts.globalTokenCount, 1),
          globalBatchSize: counts.globalBatchSize,
          ...(importanceWeights === undefined ? {} : { importanceWeights: matrix(importanceWeights) }),
          ...(externalMasks === undefined ? {} : { externalMask: tf.notEqual(matrix(externalMasks), 0) }),
        })
        const entropyMask =
          entropyExcluded.size === 0 ? responseMask : tf.mul(responseMask, tf.tensor2d(entropyKeep(sequences, columns, entropyExcluded), [batch, columns]))
        policy = pg.metrics // kept by the loss: read (and freed) after the backward pass
        // The mini-batch's token mean, this micro-batch's share (a single micro-batch: maskedMean's value exactly).
        entropy = tf.keep(tf.div(tf.sum(tf.mul(entropies!, entropyMask)), counts.entropyTokenCount + 1e-8) as tf.Scalar)
        let total: tf.Scalar = entropyCoefficient > 0 ? tf.sub(pg.loss, tf.mul(entropyCoefficient, entropy)) : pg.loss
        if (kl !== undefined && (exactValues !== undefined || referenceLogprobs !== undefined)) {
          const globalTokenCount = Math.max(counts.globalTokenCount, 1)
          const klTerm =
            exactValues !== undefined
              ? exactKlLoss({ kl: exactValues, mask: responseMask }, { globalTokenCount })
              : klLoss(
                  { logprobs, referenceLogprobs: matrix(referenceLogprobs!), mask: responseMask },
                  { estimator: kl.estimator as KlEstimator, globalTokenCount },
                )
          klMetrics = klTerm.metrics
          total = tf.add(total, tf.mul(kl.coefficient, klTerm.loss))
        }
        if (sharedCritic !== undefined) {
          const term = criticLoss(values!, responseMask, criticRows(rows), sharedCritic, counts.globalTokenCount)
          value = term.metrics
          total = tf.add(total, tf.mul(sharedCritic.valueCoefficient, term.loss))
        }
        forwardBytes = tf.memory().numBytes
        return total
      }),
    settings.parameters,
  )
  return { loss, entropy: entropy!, policy: policy!, kl: klMetrics, value, forwardBytes, gradients }
}

/** Response tokens that count toward the entropy bonus (those whose id is not excluded). */
function entropyTokens(sequences: readonly TokenSequence[], excluded: ReadonlySet<number>): number {
  let count = 0
  for (const sequence of sequences) for (const id of sequence.responseIds) if (!excluded.has(id)) count++
  return count
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

/** The critic's rows of a policy update's rows (a critic needs `oldValues` and `returns`). */
function criticRows(rows: PolicyUpdateRows): CriticRows {
  if (rows.oldValues === undefined || rows.returns === undefined)
    throw new InvalidArgumentError({ argument: 'rows', value: 'no oldValues or returns', message: 'a critic trains on the values and returns of its rows' })
  return { sequences: rows.sequences, oldValues: rows.oldValues, returns: rows.returns }
}
