import * as tf from '@tensorflow/tfjs-core'
import { z } from 'zod'
import { InvalidArgumentError } from '@ludic/core'
import { aggregateMasked, aggregationModeSchema, countMask, type AggregationMode, type MaskCounts } from './aggregate-loss.js'
import { describeIndex, readFinite, readMask, requireFloatTensor, zeroMasked } from './tensor-checks.js'

/**
 * What every policy loss takes and returns. A policy loss is made by a factory from its options
 * (`createPolicyLoss(name, options)`) and called once per micro-batch, usually inside `tf.grad` or an
 * optimizer's `minimize`: the returned `loss` is differentiable with respect to `logprobs`.
 */
export interface PolicyLossInputs {
  /** `[batch, tokens]` float32: log π_θ of each response token under the current policy (the differentiated input). */
  logprobs: tf.Tensor
  /** `[batch, tokens]` float32: log π_old of the same tokens, from the policy that generated them. */
  oldLogprobs: tf.Tensor
  /** `[batch, tokens]` float32: advantage of each token. */
  advantages: tf.Tensor
  /** `[batch, tokens]` 0/1 (float32, int32 or bool): 1 = a response token that counts. */
  mask: tf.Tensor
  /**
   * `[batch, tokens]` float32, optional: per-token weights that multiply the loss matrix before aggregation,
   * as constants (verl `rollout_is_weights`, rollout-correction importance weights).
   */
  importanceWeights?: tf.Tensor
  /** Valid tokens in the global batch (verl `batch_num_tokens`), for `token-mean` across data-parallel ranks. */
  globalTokenCount?: number
  /** Sequences in the global batch (verl `global_batch_size`), for the `seq-mean-*` modes across ranks. */
  globalBatchSize?: number
}

/**
 * Diagnostics as plain numbers (computed in float64 from the inputs; verl's names in brackets). Losses
 * without clipping report 0 for the clip metrics.
 */
export interface PolicyLossMetrics {
  /** The value of `loss`. */
  pgLoss: number
  /** [actor/ppo_kl] masked mean of log π_old − log π (clamped to ±20 where the loss clamps its log-ratio). */
  approxKl: number
  /** [actor/pg_clipfrac] fraction of valid tokens whose loss is clipped; the exact meaning per loss is in the README. */
  clipFraction: number
  /** [actor/pg_clipfrac_lower] for `ppo-clip`: dual-clip fraction; for `gmpo`: clipped with A < 0; for `dppo-*`: truncated ratio. */
  clipFractionLower: number
  /** Mean, min and max of the token ratio π/π_old = exp(clamp(log π − log π_old, ±20)) over valid tokens (1 when there are none). */
  ratioMean: number
  ratioMin: number
  ratioMax: number
  /** Valid tokens clipped at the lower bound (`clippedTokens.low`). */
  clippedLowTokens: number
  /** Valid tokens clipped at the upper bound (`clippedTokens.high`). */
  clippedHighTokens: number
  /** Σ mask. */
  validTokens: number
}

export interface PolicyLossResult {
  /** Scalar loss to minimise, differentiable with respect to `inputs.logprobs`. The caller disposes it. */
  loss: tf.Scalar
  metrics: PolicyLossMetrics
  /**
   * Which valid tokens were clipped, as row-major `[batch, tokens]` 0/1 flags: `low` where the lower ratio
   * bound is active, `high` where the upper one is (per loss in the README; all 0 for losses that do not clip).
   */
  clippedTokens: { low: Uint8Array; high: Uint8Array }
}

export type PolicyLoss = (inputs: PolicyLossInputs) => PolicyLossResult

/** Option fields shared by the policy losses that aggregate with a chosen mode. */
export const aggregationOptionFields = {
  /** verl `loss_agg_mode`. Default `token-mean`. */
  aggregation: aggregationModeSchema.default('token-mean'),
  /** verl `dp_size`. Default 1. */
  dataParallelSize: z.number().int().positive().default(1),
  /** verl `loss_scale_factor` for `seq-mean-token-sum-norm`. Default: the padded length. */
  lossScaleFactor: z.number().positive().optional(),
}

/** Clip range of the ratio: [1 − clipLow, 1 + clipHigh] (verl `clip_ratio_low` / `clip_ratio_high`; DAPO's clip-higher when clipHigh > clipLow). */
export const clipOptionFields = {
  /** ε_low. Default 0.2. */
  clipLow: z.number().nonnegative().default(0.2),
  /** ε_high. Default 0.2 (DAPO uses 0.28). */
  clipHigh: z.number().nonnegative().default(0.2),
}

/** The inputs of one call, checked and read to plain arrays once. */
export interface PolicyBatch {
  caller: string
  logprobs: tf.Tensor
  oldLogprobs: tf.Tensor
  advantages: tf.Tensor
  mask: tf.Tensor
  importanceWeights: tf.Tensor | undefined
  data: {
    logprobs: Float32Array
    oldLogprobs: Float32Array
    advantages: Float32Array
    mask: Float32Array
    importanceWeights: Float32Array | undefined
  }
  counts: MaskCounts
  globalTokenCount: number | undefined
  globalBatchSize: number | undefined
}

/** Checks shapes, dtypes, the mask and finiteness (at valid tokens) of the inputs and reads them. */
export function readPolicyBatch(inputs: PolicyLossInputs, caller: string): PolicyBatch {
  if (inputs === null || typeof inputs !== 'object') {
    throw new InvalidArgumentError({ argument: 'inputs', value: inputs, message: `passed to '${caller}' must be an object { logprobs, oldLogprobs, advantages, mask }` })
  }
  const logprobs = requireFloatTensor(inputs.logprobs, 'inputs.logprobs', caller, [-1, -1])
  const shape = logprobs.shape
  const oldLogprobs = requireFloatTensor(inputs.oldLogprobs, 'inputs.oldLogprobs', caller, shape)
  const advantages = requireFloatTensor(inputs.advantages, 'inputs.advantages', caller, shape)
  const maskRead = readMask(inputs.mask, 'inputs.mask', caller, shape)
  const importanceWeights =
    inputs.importanceWeights === undefined ? undefined : requireFloatTensor(inputs.importanceWeights, 'inputs.importanceWeights', caller, shape)
  for (const key of ['globalTokenCount', 'globalBatchSize'] as const) {
    const value = inputs[key]
    if (value !== undefined && !(typeof value === 'number' && Number.isFinite(value) && value > 0)) {
      throw new InvalidArgumentError({ argument: `inputs.${key}`, value, message: `passed to '${caller}' must be a positive number` })
    }
  }
  const mask = maskRead.data
  const [batch, tokens] = shape as [number, number]
  const weights = importanceWeights === undefined ? undefined : readFinite(importanceWeights, 'inputs.importanceWeights', caller, mask)
  const negative = weights?.findIndex((weight, index) => mask[index] !== 0 && weight < 0) ?? -1
  if (negative >= 0) {
    throw new InvalidArgumentError({
      argument: 'inputs.importanceWeights',
      value: weights![negative],
      message: `passed to '${caller}' must be non-negative (at ${describeIndex(negative, shape)})`,
    })
  }
  return {
    caller,
    logprobs,
    oldLogprobs,
    advantages,
    mask: maskRead.tensor,
    importanceWeights,
    data: {
      logprobs: readFinite(logprobs, 'inputs.logprobs', caller, mask),
      oldLogprobs: readFinite(oldLogprobs, 'inputs.oldLogprobs', caller, mask),
      advantages: readFinite(advantages, 'inputs.advantages', caller, mask),
      mask,
      importanceWeights: weights,
    },
    counts: countMask(mask, batch, tokens),
    globalTokenCount: inputs.globalTokenCount,
    globalBatchSize: inputs.globalBatchSize,
  }
}

/**
 * The input tensors with masked positions set to 0 (float32 mask included). Call inside `tf.tidy`:
 * whatever sits at masked positions (padding, NaN) then cannot reach the loss or its gradient.
 */
export function maskedInputs(batch: PolicyBatch): { logprobs: tf.Tensor; oldLogprobs: tf.Tensor; advantages: tf.Tensor; mask: tf.Tensor } {
  const mask = batch.mask.dtype === 'float32' ? batch.mask : tf.cast(batch.mask, 'float32')
  return {
    logprobs: zeroMasked(batch.logprobs, mask),
    oldLogprobs: zeroMasked(batch.oldLogprobs, mask),
    advantages: zeroMasked(batch.advantages, mask),
    mask,
  }
}

/** Multiplies the loss matrix by the importance weights, if any (constants, as verl). Inside `tf.tidy`. */
export function applyImportanceWeights(pgLosses: tf.Tensor, batch: PolicyBatch, mask: tf.Tensor): tf.Tensor {
  return batch.importanceWeights === undefined ? pgLosses : tf.mul(pgLosses, zeroMasked(batch.importanceWeights, mask))
}

/** agg_loss over the batch's mask with its global counts. Inside `tf.tidy`. */
export function aggregatePolicyLoss(
  pgLosses: tf.Tensor,
  batch: PolicyBatch,
  mode: AggregationMode,
  options: { dataParallelSize: number; lossScaleFactor?: number | undefined },
): tf.Scalar {
  return aggregateMasked(
    pgLosses,
    batch.mask,
    batch.data.mask,
    mode,
    {
      dataParallelSize: options.dataParallelSize,
      globalTokenCount: batch.globalTokenCount,
      globalBatchSize: batch.globalBatchSize,
      lossScaleFactor: options.lossScaleFactor,
    },
    batch.caller,
    { mask: 'inputs.mask', counts: 'inputs' },
  )
}

/**
 * Accumulates the metrics over valid tokens. `visit` is called for each valid token with its flat index
 * and returns its flags: `clipped` (counts in clipFraction), `clippedLower` (clipFractionLower), and the
 * per-token `low` / `high` flags. `approxKlClamped` says whether approxKl uses the ±20-clamped log-ratio.
 */
export function collectPolicyMetrics(
  batch: PolicyBatch,
  loss: tf.Scalar,
  approxKlClamped: boolean,
  visit?: (index: number) => { clipped?: boolean; clippedLower?: boolean; low?: boolean; high?: boolean },
): { metrics: PolicyLossMetrics; clippedTokens: { low: Uint8Array; high: Uint8Array } } {
  const { logprobs, oldLogprobs, mask } = batch.data
  const low = new Uint8Array(mask.length)
  const high = new Uint8Array(mask.length)
  let klSum = 0
  let ratioSum = 0
  let ratioMin = Infinity
  let ratioMax = -Infinity
  let clipped = 0
  let clippedLower = 0
  let lowCount = 0
  let highCount = 0
  for (let index = 0; index < mask.length; index++) {
    if (mask[index] === 0) continue
    const logRatio = logprobs[index]! - oldLogprobs[index]!
    const clampedLogRatio = Math.min(Math.max(logRatio, -20), 20)
    klSum += -(approxKlClamped ? clampedLogRatio : logRatio)
    const ratio = Math.exp(clampedLogRatio)
    ratioSum += ratio
    ratioMin = Math.min(ratioMin, ratio)
    ratioMax = Math.max(ratioMax, ratio)
    const flags = visit?.(index)
    if (flags === undefined) continue
    if (flags.clipped === true) clipped++
    if (flags.clippedLower === true) clippedLower++
    if (flags.low === true) {
      low[index] = 1
      lowCount++
    }
    if (flags.high === true) {
      high[index] = 1
      highCount++
    }
  }
  const validTokens = batch.counts.validTokens
  // verl masked_mean: Σ x·mask / (Σ mask + 1e-8).
  const maskedMean = (total: number): number => total / (validTokens + 1e-8)
  return {
    metrics: {
      pgLoss: loss.dataSync()[0]!,
      approxKl: maskedMean(klSum),
      clipFraction: maskedMean(clipped),
      clipFractionLower: maskedMean(clippedLower),
      ratioMean: validTokens === 0 ? 1 : ratioSum / validTokens,
      ratioMin: validTokens === 0 ? 1 : ratioMin,
      ratioMax: validTokens === 0 ? 1 : ratioMax,
      clippedLowTokens: lowCount,
      clippedHighTokens: highCount,
      validTokens,
    },
    clippedTokens: { low, high },
  }
}

/** JS `clamp`, as torch.clamp. */
export function clamp(value: number, minimum: number, maximum: number): number {
  return Math.min(Math.max(value, minimum), maximum)
}
