import { InvalidArgumentError, parseArgument, type AdvantageBatch, type AdvantageEstimatorV1, type AdvantageNeed, type AdvantageResult } from '@ludic/core'
import { z } from 'zod'

export const explorationAdvantageOptionsSchema = z.strictObject({
  /** γ of the weight (1 − π)^γ; 0 leaves the advantages unchanged. Default: 0.5 (RL-PLUS paper and code). */
  gamma: z.number().nonnegative().default(0.5),
})
export type ExplorationAdvantageOptions = z.input<typeof explorationAdvantageOptionsSchema>

/** Which tokens to reshape. Absent fields select everything. */
export interface ExplorationAdvantageSelection {
  /** Per sample, 1 for a token to reshape (a batch's `tokenMasks`); masked tokens keep their advantage. */
  tokenMasks?: readonly Uint8Array[] | undefined
  /** Per sample, whether to reshape it: RL-PLUS reshapes only the external samples (its D_e). */
  samples?: readonly boolean[] | undefined
}

/**
 * RL-PLUS's exploration-based advantage (Dong et al. 2025, https://arxiv.org/abs/2508.00222, §3.2, Eq. 5–6): any
 * estimator's advantage, reweighted per token towards the tokens the policy finds unlikely,
 *
 *   A^c_t = A_t · C_t,    C_t = (1 − π(y_t | y<t))^γ,    π = exp(logprobs_t), a constant (detached)
 *
 * so a correct but low-probability token keeps almost its whole advantage and one the policy is already sure
 * of gets little (focal-loss style). `logprobs` are the policy's log-probabilities of the batch's tokens, one
 * row per sample, at most 0. The paper detaches the *current* π_θ inside the loss; computed here, before the
 * update, the weight uses the policy that scored the batch (π_θold) — the same for the first update of a step.
 * `createRlPlusLoss` of @ludic/objectives applies the in-loss form; use one of the two, not both.
 */
export function explorationAdvantage(
  advantages: readonly Float32Array[],
  logprobs: readonly Float32Array[],
  options: ExplorationAdvantageOptions = {},
  selection: ExplorationAdvantageSelection = {},
): Float32Array[] {
  const { gamma } = parseArgument(explorationAdvantageOptionsSchema, options, 'options')
  checkRows(advantages, logprobs, selection)
  return advantages.map((row, sample) => {
    const reshaped = Float32Array.from(row)
    if (selection.samples !== undefined && !selection.samples[sample]) return reshaped
    const mask = selection.tokenMasks?.[sample]
    const rowLogprobs = logprobs[sample]!
    for (let token = 0; token < row.length; token++) {
      if (mask !== undefined && mask[token] !== 1) continue
      const logprob = rowLogprobs[token]!
      if (!(Number.isFinite(logprob) || logprob === Number.NEGATIVE_INFINITY) || logprob > 0) {
        throw new InvalidArgumentError({ argument: `logprobs[${sample}][${token}]`, value: logprob, message: 'must be a log-probability: at most 0, not NaN' })
      }
      reshaped[token] = row[token]! * (1 - Math.exp(logprob)) ** gamma
    }
    return reshaped
  })
}

/** An estimator whose advantages are reshaped by `explorationAdvantage`; `estimate` takes the policy's log-probs. */
export interface ExplorationAdvantageEstimator {
  /** `<inner name>+exploration`. */
  readonly name: string
  /** The inner estimator's `requires`. */
  readonly requires?: readonly AdvantageNeed[]
  /** The inner estimator's result with `advantages` reshaped (on the batch's valid tokens); `returns` unchanged. */
  estimate(batch: AdvantageBatch, policy: { logprobs: readonly Float32Array[]; samples?: readonly boolean[] | undefined }): AdvantageResult
}

/** Wraps any estimator (GRPO in the paper) with the exploration-based advantage. */
export function withExplorationAdvantage(estimator: AdvantageEstimatorV1, options: ExplorationAdvantageOptions = {}): ExplorationAdvantageEstimator {
  if (estimator === null || typeof estimator !== 'object' || typeof estimator.estimate !== 'function') {
    throw new InvalidArgumentError({ argument: 'estimator', value: estimator, message: 'must be an advantage estimator { name, estimate(batch) }' })
  }
  parseArgument(explorationAdvantageOptionsSchema, options, 'options')
  return {
    name: `${estimator.name}+exploration`,
    ...(estimator.requires === undefined ? {} : { requires: estimator.requires }),
    estimate(batch, policy) {
      const result = estimator.estimate(batch)
      const advantages = explorationAdvantage(result.advantages, policy?.logprobs, options, { tokenMasks: batch.tokenMasks, samples: policy?.samples })
      return { advantages, returns: result.returns }
    },
  }
}

function checkRows(advantages: readonly Float32Array[], logprobs: readonly Float32Array[], selection: ExplorationAdvantageSelection): void {
  if (!Array.isArray(advantages) || advantages.some((row) => !(row instanceof Float32Array))) {
    throw new InvalidArgumentError({ argument: 'advantages', value: advantages, message: 'must be an array of Float32Array rows, one per sample' })
  }
  if (!Array.isArray(logprobs) || logprobs.length !== advantages.length) {
    throw new InvalidArgumentError({ argument: 'logprobs', value: logprobs, message: `must be an array of ${advantages.length} rows, one per sample` })
  }
  advantages.forEach((row, sample) => {
    const logprobRow = logprobs[sample]
    if (!(logprobRow instanceof Float32Array) || logprobRow.length !== row.length) {
      throw new InvalidArgumentError({
        argument: `logprobs[${sample}]`,
        value: logprobRow,
        message: `must be a Float32Array of ${row.length} log-probabilities`,
      })
    }
    const mask = selection.tokenMasks?.[sample]
    if (selection.tokenMasks !== undefined && (!(mask instanceof Uint8Array) || mask.length !== row.length)) {
      throw new InvalidArgumentError({ argument: `tokenMasks[${sample}]`, value: mask, message: `must be a Uint8Array of ${row.length} entries` })
    }
  })
  if (selection.tokenMasks !== undefined && selection.tokenMasks.length !== advantages.length) {
    throw new InvalidArgumentError({
      argument: 'tokenMasks',
      value: selection.tokenMasks.length,
      message: `must have one row per sample (${advantages.length})`,
    })
  }
  if (selection.samples !== undefined && (!Array.isArray(selection.samples) || selection.samples.length !== advantages.length)) {
    throw new InvalidArgumentError({
      argument: 'samples',
      value: selection.samples,
      message: `must be an array of ${advantages.length} booleans, one per sample`,
    })
  }
}
