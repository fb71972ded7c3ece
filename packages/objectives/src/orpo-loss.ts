import * as tf from '@tensorflow/tfjs-core'
import { z } from 'zod'
import { logSigmoid } from './log-sigmoid.js'
import { InvalidArgumentError, parseArgument } from '@ludic/core'
import { mean, readLengths, readSequenceValues } from './sequence-inputs.js'

export const orpoLossOptionsSchema = z.strictObject({
  /** λ, the weight of the odds-ratio term (TRL `beta`). Default 0.1. */
  beta: z.number().positive().default(0.1),
})
export type OrpoLossOptions = z.input<typeof orpoLossOptionsSchema>

export interface OrpoLossInputs {
  /** `[batch]` float32: log π(y_c), summed over the completion's tokens. Differentiated. */
  chosenLogprobs: tf.Tensor
  rejectedLogprobs: tf.Tensor
  /** `[batch]` int32 or float32: completion token counts (> 0). */
  chosenLengths: tf.Tensor
  rejectedLengths: tf.Tensor
}

/**
 * ORPO (Hong et al. 2024, https://arxiv.org/abs/2403.07691), reference-free, as TRL's `ORPOTrainer`: SFT on
 * the chosen completions plus an odds-ratio term. With the mean token log-probs p̄ = log π(y)/|y| and
 * log odds(y) = p̄ − log(1 − e^{p̄}):
 *
 *   L = NLL_chosen − λ·mean(log σ(log odds(y_c) − log odds(y_r)))
 *
 * where NLL_chosen = −Σ log π(y_c) / Σ |y_c| (token-mean cross-entropy over the chosen tokens).
 * A mean log-prob of 0 (probability 1) has no odds: it is an error.
 */
export function createOrpoLoss(options: OrpoLossOptions = {}): (inputs: OrpoLossInputs) => {
  loss: tf.Scalar
  metrics: {
    loss: number
    nllLoss: number
    logOddsRatio: number
    logOddsChosen: number
    rewardsChosen: number
    rewardsRejected: number
    rewardsAccuracy: number
    rewardsMargin: number
  }
} {
  const { beta } = parseArgument(orpoLossOptionsSchema, options, 'options')
  const caller = 'orpo'
  return (inputs) => {
    const chosen = readSequenceValues(inputs.chosenLogprobs, 'inputs.chosenLogprobs', caller, -1)
    const batch = chosen.tensor.shape[0]!
    const rejected = readSequenceValues(inputs.rejectedLogprobs, 'inputs.rejectedLogprobs', caller, batch)
    const chosenLengths = readLengths(inputs.chosenLengths, 'inputs.chosenLengths', caller, batch, { positive: true })
    const rejectedLengths = readLengths(inputs.rejectedLengths, 'inputs.rejectedLengths', caller, batch, { positive: true })
    const chosenMean = Array.from(chosen.data, (value, index) => value / chosenLengths[index]!)
    const rejectedMean = Array.from(rejected.data, (value, index) => value / rejectedLengths[index]!)
    for (const [argument, values] of [
      ['inputs.chosenLogprobs', chosenMean],
      ['inputs.rejectedLogprobs', rejectedMean],
    ] as const) {
      const index = values.findIndex((value) => !(value < 0))
      if (index >= 0) {
        const message = `passed to '${caller}' must have a negative mean token log-prob (at [${index}]): log(1 − p) is −∞ at p = 1`
        throw new InvalidArgumentError({ argument, value: values[index], message })
      }
    }
    let logOddsValues: Float32Array = new Float32Array(0)
    let ratioValues: Float32Array = new Float32Array(0)
    let nllValue = 0
    const loss = tf.tidy(() => {
      const chosenAverage = tf.div(chosen.tensor, tf.tensor1d(chosenLengths)) // [batch]
      const rejectedAverage = tf.div(rejected.tensor, tf.tensor1d(rejectedLengths))
      const log1mExp = (x: tf.Tensor): tf.Tensor => tf.log(tf.neg(tf.expm1(x))) // log(1 − e^x), x < 0
      const logOdds = tf.sub(tf.sub(chosenAverage, rejectedAverage), tf.sub(log1mExp(chosenAverage), log1mExp(rejectedAverage)))
      const ratio = logSigmoid(logOdds)
      const nll = tf.div(
        tf.neg(tf.sum(chosen.tensor)),
        chosenLengths.reduce((total, length) => total + length, 0),
      )
      logOddsValues = Float32Array.from(logOdds.dataSync())
      ratioValues = Float32Array.from(ratio.dataSync())
      nllValue = nll.dataSync()[0]!
      return tf.sub(nll, tf.mul(beta, tf.mean(ratio))) as tf.Scalar
    })
    const chosenRewards = chosenMean.map((value) => beta * value)
    const rejectedRewards = rejectedMean.map((value) => beta * value)
    return {
      loss,
      metrics: {
        loss: loss.dataSync()[0]!,
        nllLoss: nllValue,
        logOddsRatio: mean(ratioValues),
        logOddsChosen: mean(logOddsValues),
        rewardsChosen: mean(chosenRewards),
        rewardsRejected: mean(rejectedRewards),
        rewardsAccuracy: mean(chosenRewards.map((reward, index) => (reward > rejectedRewards[index]! ? 1 : 0))),
        rewardsMargin: mean(chosenRewards.map((reward, index) => reward - rejectedRewards[index]!)),
      },
    }
  }
}
