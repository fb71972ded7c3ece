import * as tf from '@tensorflow/tfjs-core'
import { z } from 'zod'
import { logSigmoid } from './log-sigmoid.js'
import { InvalidArgumentError, parseArgument } from '@ludic/core'
import { mean, readLengths, readSequenceValues } from './sequence-inputs.js'

/**
 * TRL DPO `loss_type`s (`trl/trainer/dpo_trainer.py`), names unchanged. With the log-ratios
 * ℓ_c = log π(y_c) − log π_ref(y_c), ℓ_r likewise, the f-divergence scores s_c = f(ℓ_c), s_r = f(ℓ_r)
 * (`reverse_kl`: f(ℓ) = ℓ) and δ = s_c − s_r, the per-pair losses are:
 *
 * | type | loss | reference |
 * |---|---|---|
 * | `sigmoid` | −log σ(βδ) | DPO, Rafailov et al. 2023 |
 * | `hinge` | max(0, 1 − βδ) | SLiC, Zhao et al. 2023 |
 * | `ipo` | (s_c/\|y_c\| − s_r/\|y_r\| − 1/(2β))² (length-normalised) | IPO, Azar et al. 2023 |
 * | `robust` | (−(1−ε) log σ(βδ) + ε log σ(−βδ)) / (1 − 2ε) | rDPO, Chowdhury et al. 2024 |
 * | `exo_pair` | σ(βδ)(log σ(βδ) − log(1−ε)) + σ(−βδ)(log σ(−βδ) − log ε), ε > 0 | EXO, Ji et al. 2024 |
 * | `nca_pair` | −log σ(βs_c) − ½ log σ(−βs_c) − ½ log σ(−βs_r) | NCA, Chen et al. 2024 |
 * | `bco_pair` | −log σ(βs_c) − log σ(−βs_r) | BCO, Jung et al. 2024 |
 * | `sppo_hard` | (s_c − 1/(2β))² + (s_r + 1/(2β))² | SPPO, Wu et al. 2024 |
 * | `aot` | −(1−ε) log σ(βΔ_k) − ε log σ(−βΔ_k), Δ = sort(log π_c − log π_r) − sort(log π_ref,c − log π_ref,r) | AOT, Melnyk et al. 2024 |
 * | `aot_unpaired` | same with Δ = sort(ℓ_c) − sort(ℓ_r) | AOT |
 * | `apo_zero` | 1 − σ(βℓ_c) + σ(βℓ_r) | APO, D'Oosterlinck et al. 2024 |
 * | `apo_down` | σ(βℓ_c) + 1 − σ(βδ) | APO |
 * | `discopop` | z = βδ, m = σ(z/τ): −log σ(z)(1 − m) + e^{−z} m | DiscoPOP, Chris Lu et al. 2024 |
 * | `sigmoid_norm` | −log σ(β(s_c/\|y_c\| − s_r/\|y_r\|)) | length-normalised DPO |
 *
 * Lengths |y| are clamped to at least 1. Several types can be combined: the loss is Σ_k w_k·mean(loss_k).
 */
export const dpoLossTypes = [
  'sigmoid',
  'hinge',
  'ipo',
  'exo_pair',
  'nca_pair',
  'robust',
  'bco_pair',
  'sppo_hard',
  'aot',
  'aot_unpaired',
  'apo_zero',
  'apo_down',
  'discopop',
  'sigmoid_norm',
] as const
export type DpoLossType = (typeof dpoLossTypes)[number]

/** TRL `f_divergence_type`: how a log-ratio becomes a score (Wang et al. 2023, "Beyond reverse KL"). */
export const fDivergenceTypes = ['reverse_kl', 'forward_kl', 'js_divergence', 'alpha_divergence'] as const
export type FDivergenceType = (typeof fDivergenceTypes)[number]

export const preferenceLossOptionsSchema = z.strictObject({
  /** β, the strength of the implicit KL to the reference. Default 0.1 (TRL). */
  beta: z.number().positive().default(0.1),
  /** ε for `robust`, `exo_pair`, `aot`, `aot_unpaired` (label noise). Default 0. Must be < 0.5. */
  labelSmoothing: z.number().min(0).lt(0.5).default(0),
  /** τ of `discopop`. Default 0.05 (TRL). */
  discopopTau: z.number().positive().default(0.05),
  /** Score of a log-ratio: `reverse_kl` ℓ, `forward_kl` −e^{−ℓ}, `js_divergence` log σ(ℓ), `alpha_divergence` e^{min((α−1)ℓ, 80)}/(α−1). Default `reverse_kl`. */
  fDivergenceType: z.enum(fDivergenceTypes).default('reverse_kl'),
  /** α of `alpha_divergence` (|α − 1| < 1e-6 is `reverse_kl`). Default 1 (TRL). */
  alphaDivergenceCoefficient: z.number().default(1),
  /** Weights of the loss types when several are combined (TRL `loss_weights`). Default: 1 each. */
  lossWeights: z.array(z.number().nonnegative()).optional(),
})
export type PreferenceLossOptions = z.input<typeof preferenceLossOptionsSchema>

export interface PreferenceLossInputs {
  /** `[batch]` float32: log π of each chosen completion (sum over its tokens). Differentiated. */
  chosenLogprobs: tf.Tensor
  /** `[batch]` float32: log π of each rejected completion. Differentiated. */
  rejectedLogprobs: tf.Tensor
  /** `[batch]` float32: log π_ref of each chosen completion. */
  referenceChosenLogprobs: tf.Tensor
  /** `[batch]` float32: log π_ref of each rejected completion. */
  referenceRejectedLogprobs: tf.Tensor
  /** `[batch]` int32 or float32: completion token counts (needed by `ipo` and `sigmoid_norm`). */
  chosenLengths?: tf.Tensor
  rejectedLengths?: tf.Tensor
}

/** As TRL logs them (`rewards/chosen`…): means over the batch, as plain numbers. */
export interface PreferenceLossMetrics {
  /** The value of `loss`. */
  loss: number
  /** mean β·ℓ_c */
  rewardsChosen: number
  /** mean β·ℓ_r */
  rewardsRejected: number
  /** mean(β·ℓ_c > β·ℓ_r) */
  rewardsAccuracy: number
  /** mean(β·ℓ_c − β·ℓ_r) */
  rewardsMargin: number
  /** mean log π(y_c) */
  logprobsChosen: number
  /** mean log π(y_r) */
  logprobsRejected: number
}

export interface PreferenceLossResult {
  /** Scalar loss, differentiable with respect to the policy log-probs. The caller disposes it. */
  loss: tf.Scalar
  metrics: PreferenceLossMetrics
  /** Per pair: β·ℓ_c and β·ℓ_r (TRL `chosen_rewards`, `rejected_rewards`). */
  chosenRewards: Float32Array
  rejectedRewards: Float32Array
  /** Per pair: Σ_k w_k·loss_k (for `aot*`, in the sorted order). */
  perSequenceLoss: Float32Array
}

export type PreferenceLoss = (inputs: PreferenceLossInputs) => PreferenceLossResult

/**
 * Makes a DPO-family loss (one type or several combined with `lossWeights`), as TRL's `DPOTrainer` with
 * `loss_type`. Inputs are sequence log-probs `[batch]`; see `dpoLossTypes` for the formulas.
 */
export function createPreferenceLoss(type: DpoLossType | readonly DpoLossType[] = 'sigmoid', options: PreferenceLossOptions = {}): PreferenceLoss {
  const types =
    typeof type === 'string' ? [parseArgument(z.enum(dpoLossTypes), type, 'type')] : parseArgument(z.array(z.enum(dpoLossTypes)).min(1), type, 'type')
  const parsed = parseArgument(preferenceLossOptionsSchema, options, 'options')
  const weights = parsed.lossWeights ?? types.map(() => 1)
  if (weights.length !== types.length) {
    throw new InvalidArgumentError({ argument: 'options.lossWeights', value: weights, message: `must have one weight per loss type (${types.length})` })
  }
  if (types.includes('exo_pair') && parsed.labelSmoothing === 0) {
    throw new InvalidArgumentError({ argument: 'options.labelSmoothing', value: 0, message: "must be greater than 0 when using 'exo_pair' loss (TRL)" })
  }
  const needsLengths = types.some((name) => name === 'ipo' || name === 'sigmoid_norm')
  const { beta, labelSmoothing, discopopTau } = parsed
  const caller = `preference loss (${types.join(', ')})`

  // f-divergence score of a log-ratio.
  const score = (logratio: tf.Tensor): tf.Tensor => {
    switch (parsed.fDivergenceType) {
      case 'reverse_kl':
        return logratio
      case 'forward_kl':
        return tf.neg(tf.exp(tf.neg(logratio)))
      case 'js_divergence':
        return logSigmoid(logratio)
      case 'alpha_divergence': {
        const alpha = parsed.alphaDivergenceCoefficient
        if (Math.abs(alpha - 1) < 1e-6) return logratio
        return tf.div(tf.exp(tf.minimum(tf.mul(logratio, alpha - 1), 80)), alpha - 1)
      }
    }
  }

  return (inputs) => {
    if (inputs === null || typeof inputs !== 'object') {
      throw new InvalidArgumentError({ argument: 'inputs', value: inputs, message: `passed to '${caller}' must be an object of [batch] tensors` })
    }
    const chosen = readSequenceValues(inputs.chosenLogprobs, 'inputs.chosenLogprobs', caller, -1)
    const batch = chosen.tensor.shape[0]!
    const rejected = readSequenceValues(inputs.rejectedLogprobs, 'inputs.rejectedLogprobs', caller, batch)
    const referenceChosen = readSequenceValues(inputs.referenceChosenLogprobs, 'inputs.referenceChosenLogprobs', caller, batch)
    const referenceRejected = readSequenceValues(inputs.referenceRejectedLogprobs, 'inputs.referenceRejectedLogprobs', caller, batch)
    let lengths: { chosen: tf.Tensor; rejected: tf.Tensor } | undefined
    if (needsLengths || inputs.chosenLengths !== undefined || inputs.rejectedLengths !== undefined) {
      if (inputs.chosenLengths === undefined || inputs.rejectedLengths === undefined) {
        throw new InvalidArgumentError({
          argument: inputs.chosenLengths === undefined ? 'inputs.chosenLengths' : 'inputs.rejectedLengths',
          value: undefined,
          message: `is required by '${caller}' (ipo and sigmoid_norm normalise by length)`,
        })
      }
      // Clamped to at least 1, as TRL.
      const chosenLengths = readLengths(inputs.chosenLengths, 'inputs.chosenLengths', caller, batch).map((length) => Math.max(length, 1))
      const rejectedLengths = readLengths(inputs.rejectedLengths, 'inputs.rejectedLengths', caller, batch).map((length) => Math.max(length, 1))
      lengths = { chosen: tf.tensor1d(chosenLengths), rejected: tf.tensor1d(rejectedLengths) }
    }
    // aot sorts the batch: the permutations (no gradient) from the values.
    const ascending = (values: ArrayLike<number>): Int32Array =>
      Int32Array.from(Array.from({ length: batch }, (_, index) => index).sort((a, b) => values[a]! - values[b]!))
    const difference = (a: Float32Array, b: Float32Array): Float64Array => Float64Array.from(a, (value, index) => value - b[index]!)

    let result: { loss: tf.Scalar; perSequence: tf.Tensor }
    try {
      result = tf.tidy(() => {
        const chosenLogratios = tf.sub(chosen.tensor, referenceChosen.tensor) // [batch]
        const rejectedLogratios = tf.sub(rejected.tensor, referenceRejected.tensor)
        const chosenScores = score(chosenLogratios)
        const rejectedScores = score(rejectedLogratios)
        const delta = tf.sub(chosenScores, rejectedScores)
        const smoothedSigmoidLoss = (x: tf.Tensor): tf.Tensor =>
          tf.sub(tf.mul(tf.neg(logSigmoid(tf.mul(beta, x))), 1 - labelSmoothing), tf.mul(logSigmoid(tf.mul(-beta, x)), labelSmoothing))
        const perType = (name: DpoLossType): tf.Tensor => {
          switch (name) {
            case 'sigmoid':
              return tf.neg(logSigmoid(tf.mul(beta, delta)))
            case 'hinge':
              return tf.relu(tf.sub(1, tf.mul(beta, delta)))
            case 'ipo':
              return tf.square(tf.sub(tf.sub(tf.div(chosenScores, lengths!.chosen), tf.div(rejectedScores, lengths!.rejected)), 1 / (2 * beta)))
            case 'exo_pair': {
              const logits = tf.mul(beta, delta)
              const chosenWeight = tf.sigmoid(logits)
              const rejectedWeight = tf.sigmoid(tf.neg(logits))
              return tf.add(
                tf.mul(chosenWeight, tf.sub(logSigmoid(logits), Math.log1p(-labelSmoothing))),
                tf.mul(rejectedWeight, tf.sub(logSigmoid(tf.neg(logits)), Math.log(labelSmoothing))),
              )
            }
            case 'nca_pair': {
              const chosenRewards = tf.mul(beta, chosenScores)
              const rejectedRewards = tf.mul(beta, rejectedScores)
              return tf.sub(
                tf.sub(tf.neg(logSigmoid(chosenRewards)), tf.mul(0.5, logSigmoid(tf.neg(chosenRewards)))),
                tf.mul(0.5, logSigmoid(tf.neg(rejectedRewards))),
              )
            }
            case 'robust':
              return tf.div(
                tf.add(tf.mul(-(1 - labelSmoothing), logSigmoid(tf.mul(beta, delta))), tf.mul(labelSmoothing, logSigmoid(tf.mul(-beta, delta)))),
                1 - 2 * labelSmoothing,
              )
            case 'bco_pair':
              return tf.sub(tf.neg(logSigmoid(tf.mul(beta, chosenScores))), logSigmoid(tf.mul(-beta, rejectedScores)))
            case 'sppo_hard':
              return tf.add(tf.square(tf.sub(chosenScores, 0.5 / beta)), tf.square(tf.add(rejectedScores, 0.5 / beta)))
            case 'aot': {
              const policyOrder = tf.tensor1d(ascending(difference(chosen.data, rejected.data)), 'int32')
              const referenceOrder = tf.tensor1d(ascending(difference(referenceChosen.data, referenceRejected.data)), 'int32')
              const sortedDelta = tf.sub(
                tf.gather(tf.sub(chosen.tensor, rejected.tensor), policyOrder),
                tf.gather(tf.sub(referenceChosen.tensor, referenceRejected.tensor), referenceOrder),
              )
              return smoothedSigmoidLoss(sortedDelta)
            }
            case 'aot_unpaired': {
              const chosenOrder = tf.tensor1d(ascending(difference(chosen.data, referenceChosen.data)), 'int32')
              const rejectedOrder = tf.tensor1d(ascending(difference(rejected.data, referenceRejected.data)), 'int32')
              return smoothedSigmoidLoss(tf.sub(tf.gather(chosenLogratios, chosenOrder), tf.gather(rejectedLogratios, rejectedOrder)))
            }
            case 'apo_zero':
              return tf.add(tf.sub(1, tf.sigmoid(tf.mul(beta, chosenLogratios))), tf.sigmoid(tf.mul(beta, rejectedLogratios)))
            case 'apo_down':
              return tf.add(tf.sigmoid(tf.mul(beta, chosenLogratios)), tf.sub(1, tf.sigmoid(tf.mul(beta, delta))))
            case 'discopop': {
              const logits = tf.mul(beta, delta)
              const modulation = tf.sigmoid(tf.div(logits, discopopTau))
              return tf.add(tf.mul(tf.neg(logSigmoid(logits)), tf.sub(1, modulation)), tf.mul(tf.exp(tf.neg(logits)), modulation))
            }
            case 'sigmoid_norm':
              return tf.neg(logSigmoid(tf.mul(beta, tf.sub(tf.div(chosenScores, lengths!.chosen), tf.div(rejectedScores, lengths!.rejected)))))
          }
        }
        const perSequence = types.map((name, index) => tf.mul(perType(name), weights[index]!)).reduce((total, term) => tf.add(total, term)) // [batch]
        return { loss: tf.mean(perSequence) as tf.Scalar, perSequence }
      })
    } finally {
      if (lengths !== undefined) tf.dispose([lengths.chosen, lengths.rejected])
    }
    const perSequenceLoss = Float32Array.from(result.perSequence.dataSync())
    result.perSequence.dispose()
    const lossValue = result.loss.dataSync()[0]!
    if (!Number.isFinite(lossValue)) {
      result.loss.dispose()
      throw new InvalidArgumentError({
        argument: 'inputs',
        value: lossValue,
        message: `gave a non-finite '${caller}' loss (the log-ratios overflow the chosen f-divergence)`,
      })
    }
    const chosenRewards = Float64Array.from(chosen.data, (value, index) => beta * (value - referenceChosen.data[index]!))
    const rejectedRewards = Float64Array.from(rejected.data, (value, index) => beta * (value - referenceRejected.data[index]!))
    return {
      loss: result.loss,
      metrics: {
        loss: lossValue,
        rewardsChosen: mean(chosenRewards),
        rewardsRejected: mean(rejectedRewards),
        rewardsAccuracy: mean(Array.from(chosenRewards, (reward, index) => (reward > rejectedRewards[index]! ? 1 : 0))),
        rewardsMargin: mean(Array.from(chosenRewards, (reward, index) => reward - rejectedRewards[index]!)),
        logprobsChosen: mean(chosen.data),
        logprobsRejected: mean(rejected.data),
      },
      chosenRewards: Float32Array.from(chosenRewards),
      rejectedRewards: Float32Array.from(rejectedRewards),
      perSequenceLoss,
    }
  }
}
