import * as tf from '@tensorflow/tfjs-core'
import { z } from 'zod'
import { parseArgument } from '@ludic/core'
import { offTape, stopGradient } from '@ludic/tensors'
import { aggregateMasked, aggregationModeSchema, emptyMaskCheck } from './aggregate-loss.js'
import { keepLossMetrics, type LossMetricTensors } from './loss-metrics.js'
import { binaryMaskCheck, finiteChecks, readFinite, requireFloatTensor, requireMaskTensor } from './tensor-checks.js'

/**
 * Per-token estimators of KL(π ‖ π_ref) from the sampled token's log-probs (Schulman, "Approximating KL
 * divergence", http://joschu.net/blog/kl-approx.html), verl `kl_penalty`, with d = log π − log π_ref:
 *
 * - `k1` / `kl`: d
 * - `abs`: |d|
 * - `k2` / `mse`: ½·d²
 * - `k3` / `low_var_kl`: e^x − x − 1 with x = clamp(−d, ±20), then clamped to ±10
 * - a trailing `+` (`k3+`, `low_var_kl+`, `k1+`, `abs+`…): the same value, but the gradient of k2
 *   (straight-through: ½d² − sg(½d²) + sg(value)), whose expected gradient is the KL's; `k2+` = `mse+` = k2.
 */
export const klEstimators = ['k1', 'kl', 'abs', 'k2', 'mse', 'k3', 'low_var_kl', 'k1+', 'kl+', 'abs+', 'k2+', 'mse+', 'k3+', 'low_var_kl+'] as const
export type KlEstimator = (typeof klEstimators)[number]
export const klEstimatorSchema = z.enum(klEstimators)

/**
 * Elementwise KL estimate between `logprobs` and `referenceLogprobs` (same shape, float32, finite). No mask:
 * multiply by one or aggregate with `klLoss`. Differentiable with respect to `logprobs`.
 */
export function klPenalty(logprobs: tf.Tensor, referenceLogprobs: tf.Tensor, estimator: KlEstimator): tf.Tensor {
  const caller = 'klPenalty'
  const parsedEstimator = parseArgument(klEstimatorSchema, estimator, 'estimator')
  const policy = requireFloatTensor(logprobs, 'logprobs', caller, logprobs instanceof tf.Tensor ? logprobs.shape : [])
  const reference = requireFloatTensor(referenceLogprobs, 'referenceLogprobs', caller, policy.shape)
  readFinite(policy, 'logprobs', caller)
  readFinite(reference, 'referenceLogprobs', caller)
  return tf.tidy(() => klEstimate(policy, reference, parsedEstimator))
}

/** The estimator itself (inputs checked). Inside `tf.tidy`. */
export function klEstimate(logprobs: tf.Tensor, referenceLogprobs: tf.Tensor, estimator: KlEstimator): tf.Tensor {
  const straightThrough = estimator.endsWith('+')
  const base = (straightThrough ? estimator.slice(0, -1) : estimator) as KlEstimator
  const forward = klForward(logprobs, referenceLogprobs, base)
  if (!straightThrough || base === 'k2' || base === 'mse') return forward
  const backward = tf.mul(0.5, tf.square(tf.sub(logprobs, referenceLogprobs)))
  return tf.add(tf.sub(backward, stopGradient(backward)), stopGradient(forward))
}

function klForward(logprobs: tf.Tensor, referenceLogprobs: tf.Tensor, estimator: KlEstimator): tf.Tensor {
  const difference = tf.sub(logprobs, referenceLogprobs)
  switch (estimator) {
    case 'k1':
    case 'kl':
      return difference
    case 'abs':
      // d·sign(d): torch's |d| gradient, sign(d), which is 0 at d = 0 (tf.abs would give −1 there).
      return tf.mul(difference, tf.sign(difference))
    case 'k2':
    case 'mse':
      return tf.mul(0.5, tf.square(difference))
    default: {
      const logRatio = tf.clipByValue(tf.neg(difference), -20, 20) // log(π_ref/π)
      // e^x − x − 1 written expm1(x) − x: the same value, without float32 cancellation for small x.
      return tf.clipByValue(tf.sub(tf.expm1(logRatio), logRatio), -10, 10)
    }
  }
}

/**
 * The exact KL over the whole vocabulary at each response position, not an estimate from the sampled token: `full`,
 * KL(π ‖ π_ref) = Σ_v π(v) (log π(v) − log π_ref(v)) (verl's `kl_penalty="full"`, which verl leaves unimplemented),
 * and `full-forward`, KL(π_ref ‖ π) = Σ_v π_ref(v) (log π_ref(v) − log π(v)). They need both distributions whole
 * (`sequenceLogprobs`'s `klTo` of `@ludic/model` computes them chunk by chunk) and go through `exactKlLoss`; the
 * per-token `klPenalty` and `klLoss` take the estimators above. Unlike a sampled-token estimator, their gradient
 * reaches every token at every position: `full-forward`'s is β (π − π_ref) at the logits, so a move the policy has
 * pushed to probability ≈ 0 is pulled back toward the reference's probability whether or not it was sampled (the
 * sampled-token estimators' gradient at that move vanishes with its probability).
 */
export const exactKlEstimators = ['full', 'full-forward'] as const
export type ExactKlEstimator = (typeof exactKlEstimators)[number]

/** Every name a KL term of a trainer takes: a sampled-token estimator (`klEstimators`) or an exact one (`exactKlEstimators`). */
export const klTermEstimators = [...klEstimators, ...exactKlEstimators] as const
export type KlTermEstimator = (typeof klTermEstimators)[number]
export const klTermEstimatorSchema = z.enum(klTermEstimators)

/** Whether `estimator` is an exact one (`exactKlEstimators`): its values come from the whole distributions. */
export const isExactKlEstimator = (estimator: KlTermEstimator): estimator is ExactKlEstimator => (exactKlEstimators as readonly string[]).includes(estimator)

export const klLossOptionsSchema = z.strictObject({
  /** The estimator. Default `low_var_kl` (k3, verl's `kl_loss_type` default). */
  estimator: klEstimatorSchema.default('low_var_kl'),
  /** verl `loss_agg_mode`. Default `token-mean`. */
  aggregation: aggregationModeSchema.default('token-mean'),
  dataParallelSize: z.number().int().positive().default(1),
  globalTokenCount: z.number().positive().optional(),
  globalBatchSize: z.number().positive().optional(),
  lossScaleFactor: z.number().positive().optional(),
})
export type KlLossOptions = z.input<typeof klLossOptionsSchema>

/** Diagnostics of `klLoss` as plain numbers, what `readLossMetrics(result.metrics)` returns. */
export interface KlLossMetrics {
  /** The value of `loss`. */
  klLoss: number
}

/**
 * The metrics of a `klLoss` call as scalar tensors, with the checks of its input values (0/1 mask, finite
 * log-probs at valid tokens, a valid token where the mode divides by their count): read them once, after the
 * step, with `readLossMetrics` (see `LossMetricTensors`).
 */
export type KlLossMetricTensors = LossMetricTensors<KlLossMetrics>

/**
 * KL to the reference policy as a loss term (verl `use_kl_loss`: `kl_loss = agg_loss(kl_penalty(...), mask)`,
 * added to the policy loss times a coefficient, as in GRPO). No device read: `loss` follows the caller's
 * `tf.tidy`; `metrics` (`klLoss`, its value) outlive it and are read and freed by `readLossMetrics`.
 */
export function klLoss(
  inputs: { logprobs: tf.Tensor; referenceLogprobs: tf.Tensor; mask: tf.Tensor },
  options: KlLossOptions = {},
): { loss: tf.Scalar; metrics: KlLossMetricTensors } {
  const caller = 'klLoss'
  const parsed = parseArgument(klLossOptionsSchema, options, 'options')
  const policy = requireFloatTensor(inputs.logprobs, 'inputs.logprobs', caller, [-1, -1])
  const reference = requireFloatTensor(inputs.referenceLogprobs, 'inputs.referenceLogprobs', caller, policy.shape)
  const mask = requireMaskTensor(inputs.mask, 'inputs.mask', caller, policy.shape)
  return aggregateKlTerm(caller, mask, parsed, (zero) => {
    const policyAtValid = zero(policy)
    const referenceAtValid = zero(reference)
    return {
      kl: klEstimate(policyAtValid, referenceAtValid, parsed.estimator), // [batch, tokens]
      checked: [
        { argument: 'inputs.logprobs', tensor: policyAtValid },
        { argument: 'inputs.referenceLogprobs', tensor: referenceAtValid },
      ],
    }
  })
}

/**
 * A KL term's aggregation over `mask` and its metrics (`klLoss` and `exactKlLoss`): `perToken` gets a function that
 * zeroes a tensor where the mask is 0 and returns the per-token values and the tensors whose finiteness is checked.
 */
function aggregateKlTerm(
  caller: string,
  mask: tf.Tensor,
  parsed: z.output<typeof exactKlLossOptionsSchema>,
  perToken: (zero: (x: tf.Tensor) => tf.Tensor) => { kl: tf.Tensor; checked: { argument: string; tensor: tf.Tensor }[] },
): { loss: tf.Scalar; metrics: KlLossMetricTensors } {
  let metrics: KlLossMetricTensors | undefined
  const loss = tf.tidy(() => {
    const floatMask = tf.cast(mask, 'float32')
    const valid = tf.notEqual(floatMask, 0)
    const { kl, checked } = perToken((x) => tf.where(valid, x, tf.zerosLike(x)))
    const names = { mask: 'inputs.mask', counts: 'options' }
    const aggregated = aggregateMasked(kl, floatMask, parsed.aggregation, parsed, caller, names)
    metrics = offTape(
      () =>
        keepLossMetrics<KlLossMetrics>({ klLoss: tf.clone(aggregated.loss) }, [
          binaryMaskCheck(mask, 'inputs.mask', caller),
          finiteChecks(checked, caller),
          aggregated.localCount === undefined ? undefined : emptyMaskCheck(aggregated.localCount, parsed.aggregation, caller, names),
        ]),
      floatMask,
    )
    return aggregated.loss
  })
  return { loss, metrics: metrics! }
}

export const exactKlLossOptionsSchema = klLossOptionsSchema.omit({ estimator: true })
export type ExactKlLossOptions = z.input<typeof exactKlLossOptionsSchema>

/**
 * The exact KL (`exactKlEstimators`) as a loss term: `inputs.kl` `[batch, tokens]` holds each position's KL over the
 * whole vocabulary (differentiable with respect to the policy: `sequenceLogprobs(…, { klTo })`'s `kl`), aggregated
 * over `mask` as `klLoss` aggregates its estimates (verl `agg_loss`, default `token-mean`), with the same metrics.
 */
export function exactKlLoss(inputs: { kl: tf.Tensor; mask: tf.Tensor }, options: ExactKlLossOptions = {}): { loss: tf.Scalar; metrics: KlLossMetricTensors } {
  const caller = 'exactKlLoss'
  const parsed = parseArgument(exactKlLossOptionsSchema, options, 'options')
  const values = requireFloatTensor(inputs.kl, 'inputs.kl', caller, [-1, -1])
  const mask = requireMaskTensor(inputs.mask, 'inputs.mask', caller, values.shape)
  return aggregateKlTerm(caller, mask, parsed, (zero) => {
    const kl = zero(values)
    return { kl, checked: [{ argument: 'inputs.kl', tensor: kl }] }
  })
}
