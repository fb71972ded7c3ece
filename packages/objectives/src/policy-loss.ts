import * as tf from '@tensorflow/tfjs-core'
import { z } from 'zod'
import { InvalidArgumentError } from '@ludic/core'
import { aggregateMasked, aggregationModeSchema, emptyMaskCheck, type AggregationMode } from './aggregate-loss.js'
import { keepLossMetrics, type LossMetricTensors } from './loss-metrics.js'
import { offTape } from '@ludic/tensors'
import { binaryMaskCheck, finiteChecks, nonNegativeCheck, requireFloatTensor, requireMaskTensor, zeroMasked, type ValueChecks } from './tensor-checks.js'

/**
 * What every policy loss takes and returns. A policy loss is made by a factory from its options
 * (`createPolicyLoss(name, options)`) and called once per micro-batch, usually inside `tf.grad` or
 * `computeGradients`: the returned `loss` is differentiable with respect to `logprobs`. A call reads nothing
 * from the device; its metrics are read after the step with `readLossMetrics` (see `PolicyLossResult`).
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
  importanceWeights?: tf.Tensor | undefined
  /** Valid tokens in the global batch (verl `batch_num_tokens`), for `token-mean` across data-parallel ranks. */
  globalTokenCount?: number | undefined
  /** Sequences in the global batch (verl `global_batch_size`), for the `seq-mean-*` modes across ranks. */
  globalBatchSize?: number | undefined
  /**
   * `[batch, tokens]` bool, optional: true where the token is external (a demonstration, not sampled from π_old;
   * `oldLogprobs` there is still the pre-update policy's log-prob of it). Read by `rl-plus` (absent: every token
   * internal); the other losses ignore it and treat every token as on-policy.
   */
  externalMask?: tf.Tensor | undefined
}

/**
 * Diagnostics as plain numbers, what `readLossMetrics(result.metrics)` returns (verl's names in brackets).
 * Computed in float32 on the device from the tensors the loss used, so a token counts as clipped exactly
 * where the loss clipped it. Losses without clipping report 0 for the clip metrics.
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

/**
 * The metrics of a policy-loss call as scalar tensors, with the checks of its input values (0/1 mask;
 * finite `logprobs`, `oldLogprobs`, `advantages` and `importanceWeights`, non-negative weights, at valid
 * tokens; a valid token where the mode divides by their count). They survive the caller's `tf.tidy`:
 * read them once, after the step, with `readLossMetrics`, which disposes them and throws if a check failed.
 */
export type PolicyLossMetricTensors = LossMetricTensors<PolicyLossMetrics>

/**
 * A policy-loss call makes no device read: called inside `tf.tidy` / `computeGradients`, `loss` and
 * `clippedTokens` are freed with the tidy (outside one, the caller disposes them); `metrics` outlive it and
 * are freed by `readLossMetrics`, which must be called once per call (it also reports bad input values).
 */
export interface PolicyLossResult {
  /** Scalar loss to minimise, differentiable with respect to `inputs.logprobs`. */
  loss: tf.Scalar
  metrics: PolicyLossMetricTensors
  /**
   * Which valid tokens were clipped, as `[batch, tokens]` bool tensors: `low` where the lower ratio bound is
   * active, `high` where the upper one is (per loss in the README; all false for losses that do not clip).
   */
  clippedTokens: { low: tf.Tensor; high: tf.Tensor }
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

/** The inputs of one call, their shapes and dtypes checked (their values are checked on the device). */
export interface PolicyBatch {
  caller: string
  logprobs: tf.Tensor
  oldLogprobs: tf.Tensor
  advantages: tf.Tensor
  /** As passed: float32, int32 or bool. */
  mask: tf.Tensor
  importanceWeights: tf.Tensor | undefined
  /** Tokens at positions ≥ this leave the mask (truncated PPO's generation budget); undefined = none. */
  tokenBudget: number | undefined
  globalTokenCount: number | undefined
  globalBatchSize: number | undefined
}

/** Checks the shapes and dtypes of the inputs and the global counts (no device read). */
export function checkPolicyInputs(inputs: PolicyLossInputs, caller: string): PolicyBatch {
  if (inputs === null || typeof inputs !== 'object') {
    throw new InvalidArgumentError({
      argument: 'inputs',
      value: inputs,
      message: `passed to '${caller}' must be an object { logprobs, oldLogprobs, advantages, mask }`,
    })
  }
  const logprobs = requireFloatTensor(inputs.logprobs, 'inputs.logprobs', caller, [-1, -1])
  const shape = logprobs.shape
  const oldLogprobs = requireFloatTensor(inputs.oldLogprobs, 'inputs.oldLogprobs', caller, shape)
  const advantages = requireFloatTensor(inputs.advantages, 'inputs.advantages', caller, shape)
  const mask = requireMaskTensor(inputs.mask, 'inputs.mask', caller, shape)
  const importanceWeights =
    inputs.importanceWeights === undefined ? undefined : requireFloatTensor(inputs.importanceWeights, 'inputs.importanceWeights', caller, shape)
  for (const key of ['globalTokenCount', 'globalBatchSize'] as const) {
    const value = inputs[key]
    if (value !== undefined && !(typeof value === 'number' && Number.isFinite(value) && value > 0)) {
      throw new InvalidArgumentError({ argument: `inputs.${key}`, value, message: `passed to '${caller}' must be a positive number` })
    }
  }
  return {
    caller,
    logprobs,
    oldLogprobs,
    advantages,
    mask,
    importanceWeights,
    tokenBudget: undefined,
    globalTokenCount: inputs.globalTokenCount,
    globalBatchSize: inputs.globalBatchSize,
  }
}

/** What a loss body receives: the input tensors with masked positions set to 0, and the aggregation. */
export interface MaskedPolicyInputs {
  logprobs: tf.Tensor
  oldLogprobs: tf.Tensor
  advantages: tf.Tensor
  /** float32 0/1, cut at the token budget if any. */
  mask: tf.Tensor
  /** agg_loss over `mask` with the batch's global counts (verl), the empty-mask check deferred to the metrics. */
  aggregate: (pgLosses: tf.Tensor, mode: AggregationMode, options: { dataParallelSize: number; lossScaleFactor?: number | undefined }) => tf.Scalar
}

/**
 * What a loss body returns: the loss, and the tensors the metrics come from — those that decided the loss,
 * so that a token counts as clipped exactly where the loss clipped it. Flags are bool `[batch, tokens]` and
 * must be false at masked positions, which comparisons of the loss's tensors are: the inputs are 0 there
 * (A = 0, log-ratio 0). `every policy loss` tests check it.
 */
export interface PolicyLossTerms {
  loss: tf.Scalar
  /** log π − log π_old as approxKl uses it (clamped to ±20 or not, as the loss). Default: clamped. */
  logRatio?: tf.Tensor
  /** exp(clamp(log π − log π_old, ±20)), where the loss computed it. */
  ratio?: tf.Tensor
  /** Counts in clipFraction. */
  clipped?: tf.Tensor
  /** Counts in clipFractionLower. */
  clippedLower?: tf.Tensor
  /** `clippedTokens.low` / `.high`. */
  low?: tf.Tensor
  high?: tf.Tensor
}

/**
 * Runs a policy loss on a checked batch: `body` computes the loss from the masked inputs (the algorithm,
 * one screen per loss) and returns the tensors its metrics come from. Everything is computed inside one
 * `tf.tidy` with no device read; the metric scalars and the value checks of the inputs are computed off the
 * gradient tape and kept for `readLossMetrics`.
 */
export function runPolicyLoss(batch: PolicyBatch, body: (inputs: MaskedPolicyInputs) => PolicyLossTerms): PolicyLossResult {
  let metrics: PolicyLossMetricTensors | undefined
  const { loss, low, high } = tf.tidy(() => {
    const { caller } = batch
    const givenMask = batch.mask.dtype === 'float32' ? batch.mask : tf.cast(batch.mask, 'float32')
    const mask = batch.tokenBudget === undefined ? givenMask : tf.mul(givenMask, budgetColumns(batch.tokenBudget, batch.mask.shape[1]!))
    const names = { mask: 'inputs.mask', counts: 'inputs' }
    const emptyChecks: ValueChecks[] = []
    const aggregate: MaskedPolicyInputs['aggregate'] = (pgLosses, mode, options) => {
      const aggregated = aggregateMasked(
        pgLosses,
        mask,
        mode,
        {
          dataParallelSize: options.dataParallelSize,
          globalTokenCount: batch.globalTokenCount,
          globalBatchSize: batch.globalBatchSize,
          lossScaleFactor: options.lossScaleFactor,
        },
        caller,
        names,
      )
      if (aggregated.localCount !== undefined) emptyChecks.push(emptyMaskCheck(aggregated.localCount, mode, caller, names))
      return aggregated.loss
    }
    const inputs = {
      logprobs: zeroMasked(batch.logprobs, mask),
      oldLogprobs: zeroMasked(batch.oldLogprobs, mask),
      advantages: zeroMasked(batch.advantages, mask),
      mask,
      aggregate,
    }
    const terms = body(inputs)
    // Flags are false at masked positions already: the loss's tensors compare inputs that are 0 there.
    const low = terms.low ?? tf.zeros(mask.shape, 'bool')
    const high = terms.high ?? tf.zeros(mask.shape, 'bool')
    metrics = offTape(() => {
      // The inputs' values at the valid tokens of the mask as given (the budget cuts what is trained on, not
      // what must be valid): the zeroed inputs of the loss, unless a budget cut them further.
      const given = batch.tokenBudget === undefined && batch.importanceWeights === undefined ? undefined : tf.notEqual(givenMask, 0)
      const atGiven = (tensor: tf.Tensor): tf.Tensor => tf.where(given!, tensor, tf.zerosLike(tensor))
      const atValid = (tensor: tf.Tensor, zeroed: tf.Tensor): tf.Tensor => (batch.tokenBudget === undefined ? zeroed : atGiven(tensor))
      const weights = batch.importanceWeights === undefined ? undefined : atGiven(batch.importanceWeights)
      const checked = [
        { argument: 'inputs.logprobs', tensor: atValid(batch.logprobs, inputs.logprobs) },
        { argument: 'inputs.oldLogprobs', tensor: atValid(batch.oldLogprobs, inputs.oldLogprobs) },
        { argument: 'inputs.advantages', tensor: atValid(batch.advantages, inputs.advantages) },
      ]
      if (weights !== undefined) checked.push({ argument: 'inputs.importanceWeights', tensor: weights })
      const checks = [
        binaryMaskCheck(batch.mask, 'inputs.mask', caller),
        finiteChecks(checked, caller),
        weights === undefined ? undefined : nonNegativeCheck(weights, 'inputs.importanceWeights', caller),
        ...emptyChecks,
      ]
      return keepLossMetrics<PolicyLossMetrics>(policyMetricValues(inputs, terms, low, high), checks)
    }, givenMask)
    return { loss: terms.loss, low, high }
  })
  return { loss, metrics: metrics!, clippedTokens: { low, high } }
}

/** `[1, tokens]` float32: 1 before the budget, 0 from it on. */
function budgetColumns(budget: number, tokens: number): tf.Tensor {
  return tf.tensor2d(
    Float32Array.from({ length: tokens }, (_, column) => (column < budget ? 1 : 0)),
    [1, tokens],
  )
}

/** The metric scalars from the loss's tensors, over the valid tokens (off the tape, inside `tf.tidy`). */
function policyMetricValues(inputs: MaskedPolicyInputs, terms: PolicyLossTerms, low: tf.Tensor, high: tf.Tensor): PolicyLossMetricTensors['values'] {
  const { mask } = inputs
  const validTokens = tf.sum(mask) as tf.Scalar
  // verl masked_mean: Σ x·mask / (Σ mask + 1e-8).
  const denominator = tf.add(validTokens, 1e-8)
  // At masked positions the log-ratio and the flags are 0 (the inputs are 0) and the ratio is 1.
  const logRatio = terms.logRatio ?? tf.clipByValue(tf.sub(inputs.logprobs, inputs.oldLogprobs), -20, 20)
  const ratio = terms.ratio ?? tf.exp(tf.clipByValue(logRatio, -20, 20))
  const validRatio = tf.mul(ratio, mask) // masked positions 0
  const flag = (flags: tf.Tensor | undefined): tf.Tensor => (flags === undefined ? tf.zerosLike(ratio) : tf.cast(flags, 'float32'))
  // Σ over the valid tokens of the log-ratio, the ratio and the four flags, in one reduction.
  const perToken = tf.stack([logRatio, validRatio, flag(terms.clipped), flag(terms.clippedLower), flag(low), flag(high)]) // [6, batch, tokens]
  const [logRatioSum, ratioSum, clippedSum, clippedLowerSum, lowCount, highCount] = tf.unstack(tf.sum(perToken, [1, 2])) as tf.Scalar[]
  const one = tf.scalar(1)
  const hasValid = tf.greater(validTokens, 0)
  const ifValid = (value: tf.Tensor): tf.Scalar => tf.where(hasValid, value, one) as tf.Scalar
  return {
    pgLoss: tf.clone(terms.loss),
    approxKl: tf.div(tf.neg(logRatioSum!), denominator) as tf.Scalar,
    clipFraction: tf.div(clippedSum!, denominator) as tf.Scalar,
    clipFractionLower: tf.div(clippedLowerSum!, denominator) as tf.Scalar,
    ratioMean: ifValid(tf.div(ratioSum!, tf.maximum(validTokens, 1))),
    // Ratios are positive: min = 1 / max(mask / ratio) and max = max(ratio · mask) skip the masked 0s.
    ratioMin: ifValid(tf.div(1, tf.max(tf.div(mask, ratio)))),
    ratioMax: ifValid(tf.max(validRatio)),
    clippedLowTokens: lowCount!,
    clippedHighTokens: highCount!,
    validTokens,
  }
}

/** Multiplies the loss matrix by the importance weights, if any (constants, as verl). Inside `tf.tidy`. */
export function applyImportanceWeights(pgLosses: tf.Tensor, batch: PolicyBatch, mask: tf.Tensor): tf.Tensor {
  return batch.importanceWeights === undefined ? pgLosses : tf.mul(pgLosses, zeroMasked(batch.importanceWeights, mask))
}
