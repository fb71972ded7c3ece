import * as tf from '@tensorflow/tfjs-core'
import { z } from 'zod'
import { parseArgument } from '@ludic/core'
import { aggregateMasked, aggregationModeSchema, emptyMaskCheck } from './aggregate-loss.js'
import { alignDistilTeacherOptionsSchema, checkTeacherInputs, teacherFromLogits, type AlignDistilTeacherInputs } from './align-distil-teacher.js'
import { keepLossMetrics, type LossMetricTensors } from './loss-metrics.js'
import { offTape } from '@ludic/tensors'
import { binaryMaskCheck, finiteChecks, requireFloatTensor, requireMaskTensor, type ValueChecks } from './tensor-checks.js'

export const alignDistilLossOptionsSchema = alignDistilTeacherOptionsSchema.extend({
  /** β₀, the β the DPO (and reverse-DPO) models were trained with: the reward is β₀·log-ratio (Eq. 5, 12). Default 0.1 (released scripts). */
  beta: z.number().positive().default(0.1),
  /**
   * Multiply each token's KL by β_t = β₀/α_t, the RLHF KL coefficient Eq. 18 weighs it with (the released code
   * does). `false` distils with weight 1. Default true.
   */
  weightByKlCoefficient: z.boolean().default(true),
  /**
   * How the token losses become a scalar (`aggregateLoss` modes). Default `seq-mean-token-mean`: Eq. 18's
   * 1/|B| Σ_x 1/|y| Σ_t (the released scripts' `--reward_len_norm`).
   */
  aggregation: aggregationModeSchema.default('seq-mean-token-mean'),
  dataParallelSize: z.number().int().positive().default(1),
  lossScaleFactor: z.number().positive().optional(),
})
export type AlignDistilLossOptions = z.input<typeof alignDistilLossOptionsSchema>

export interface AlignDistilLossInputs extends AlignDistilTeacherInputs {
  /** `[batch, tokens, vocab]` float32: the policy's logits at the response positions (differentiated). */
  logits: tf.Tensor
  /** `[batch, tokens]` 0/1 (float32, int32 or bool): 1 = a response token that counts. */
  mask: tf.Tensor
  /** Valid tokens in the global batch, for `token-mean` across data-parallel ranks. */
  globalTokenCount?: number | undefined
  /** Sequences in the global batch, for the `seq-mean-*` modes across ranks. */
  globalBatchSize?: number | undefined
}

/** Diagnostics of an AlignDistil call, what `readLossMetrics(result.metrics)` returns. */
export interface AlignDistilLossMetrics {
  /** The value of `loss`. */
  loss: number
  /** Mean over valid tokens of KL(π_θ ‖ π*), unweighted. */
  teacherKl: number
  /** Mean over valid tokens of α_t. */
  extrapolationMean: number
  /** Mean over valid tokens of D_TVD(t) between the two models of the reward. */
  totalVariationMean: number
  /** Σ mask. */
  validTokens: number
}

export type AlignDistilLossMetricTensors = LossMetricTensors<AlignDistilLossMetrics>
export type AlignDistilLoss = (inputs: AlignDistilLossInputs) => { loss: tf.Scalar; metrics: AlignDistilLossMetricTensors }

/**
 * AlignDistil's distillation loss (Zhang et al., ACL 2025, https://arxiv.org/abs/2503.02832, Eq. 18–19): the
 * reverse KL from the policy to the teacher of `alignDistilTeacher` at every response token,
 *
 *   ℓ_t = β_t · KL(π_θ(·|y<t) ‖ π*(·|y<t)) = β_t · Σ_v π_θ(v)·(log π_θ(v) − log π*(v)),   β_t = β₀/α_t
 *
 * aggregated over the mask (`seq-mean-token-mean` = Eq. 18's 1/|B| Σ_x β_t/|y| Σ_t). The direction is
 * Theorem 1's: the policy is the first argument (mode-seeking), as the RLHF objective it equals. On-policy
 * (Eq. 18) the responses are the policy's samples; off-policy (Eq. 19) a dataset's — the loss is the same.
 * Gradients reach `logits` only. No device read: `metrics` are read once, after the step, by `readLossMetrics`
 * (which also reports a non-0/1 mask or a non-finite logit at a valid token).
 */
export function createAlignDistilLoss(options: AlignDistilLossOptions = {}): AlignDistilLoss {
  const parsed = parseArgument(alignDistilLossOptionsSchema, options, 'options')
  const caller = 'align-distil'
  return (inputs) => {
    const { dpo, contrast } = checkTeacherInputs(inputs, parsed, caller, [-1, -1, -1])
    const logits = requireFloatTensor(inputs.logits, 'inputs.logits', caller, dpo.shape)
    const mask = requireMaskTensor(inputs.mask, 'inputs.mask', caller, dpo.shape.slice(0, 2))
    const counts = { globalTokenCount: inputs.globalTokenCount, globalBatchSize: inputs.globalBatchSize }
    let metrics: AlignDistilLossMetricTensors | undefined
    const loss = tf.tidy(() => {
      const floatMask = mask.dtype === 'float32' ? mask : tf.cast(mask, 'float32')
      const valid = tf.broadcastTo(tf.expandDims(tf.notEqual(floatMask, 0), -1), dpo.shape) // [batch, tokens, vocab]
      // Masked positions become 0 logits (uniform distributions, KL 0): a NaN there reaches neither loss nor gradient.
      const atValid = (values: tf.Tensor): tf.Tensor => tf.where(valid, values, tf.zerosLike(values))
      const [policyLogits, dpoLogits, contrastLogits] = [atValid(logits), atValid(dpo), atValid(contrast.tensor)]
      const teacher = teacherFromLogits(dpoLogits, contrastLogits, parsed)
      const policyLogprobs = tf.logSoftmax(policyLogits) // [batch, tokens, vocab]
      const teacherKl = tf.sum(tf.mul(tf.exp(policyLogprobs), tf.sub(policyLogprobs, teacher.logprobs)), -1) // [batch, tokens]
      const tokenLosses = parsed.weightByKlCoefficient ? tf.mul(tf.div(parsed.beta, teacher.extrapolation), teacherKl) : teacherKl
      const names = { mask: 'inputs.mask', counts: 'inputs' }
      const aggregated = aggregateMasked(tokenLosses, floatMask, parsed.aggregation, { ...parsed, ...counts }, caller, names)
      metrics = offTape(() => {
        const validTokens = tf.sum(floatMask) as tf.Scalar
        const meanOverValid = (values: tf.Tensor): tf.Scalar => tf.div(tf.sum(tf.mul(values, floatMask)), tf.maximum(validTokens, 1)) as tf.Scalar
        const checks: (ValueChecks | undefined)[] = [
          binaryMaskCheck(mask, 'inputs.mask', caller),
          finiteChecks(
            [
              { argument: 'inputs.logits', tensor: policyLogits },
              { argument: 'inputs.dpoLogits', tensor: dpoLogits },
              { argument: contrast.argument, tensor: contrastLogits },
            ],
            caller,
          ),
          aggregated.localCount === undefined ? undefined : emptyMaskCheck(aggregated.localCount, parsed.aggregation, caller, names),
        ]
        return keepLossMetrics<AlignDistilLossMetrics>(
          {
            loss: tf.clone(aggregated.loss),
            teacherKl: meanOverValid(teacherKl),
            extrapolationMean: meanOverValid(teacher.extrapolation),
            totalVariationMean: meanOverValid(teacher.totalVariation),
            validTokens,
          },
          checks,
        )
      }, floatMask)
      return aggregated.loss
    })
    return { loss, metrics: metrics! }
  }
}
