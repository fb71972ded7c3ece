import * as tf from '@tensorflow/tfjs-core'
import { z } from 'zod'
import { InvalidArgumentError, parseArgument } from '@ludic/core'
import { countMask } from './aggregate-loss.js'
import { ppoClipLoss, ppoClipOptionsSchema } from './ppo-clip-loss.js'
import { checkPolicyInputs, type PolicyLoss } from './policy-loss.js'
import { readFinite, readMask, requireFloatTensor } from './tensor-checks.js'

/**
 * Truncated PPO (T-PPO, Fan et al. 2025, https://arxiv.org/abs/2506.15050): the policy learns from responses
 * cut at a generation-length budget, before they are finished, instead of waiting for the longest rollout.
 *
 * Two pieces:
 * - `buildTruncatedPpoInputs` cuts a rollout batch at the budget and estimates the advantages of the kept
 *   part with Extended GAE (EGAE): GAE over the kept tokens, bootstrapped with the critic's value at the
 *   cut, V(s_budget), for responses that go on (their reward is not known yet); finished responses end with
 *   V = 0 as usual. It also returns the critic's mask: finished responses only (the paper trains the value
 *   model on complete responses).
 * - `createPolicyLoss('truncated-ppo', { generationBudget, ...ppoClipOptions })` is the PPO clipped loss on
 *   the tokens before the budget (tokens at positions ≥ budget are masked out of the loss and its counts).
 */
export const truncatedPpoOptionsSchema = ppoClipOptionsSchema.extend({
  /** Generation-length budget: tokens at positions ≥ this are not trained on. Required. */
  generationBudget: z.number().int().positive(),
})
export type TruncatedPpoOptions = z.input<typeof truncatedPpoOptionsSchema>

/** PPO clip on the tokens before `generationBudget` (see the module comment). */
export function createTruncatedPpoLoss(options: TruncatedPpoOptions): PolicyLoss {
  const parsed = parseArgument(truncatedPpoOptionsSchema, options, 'options')
  return (inputs) => ppoClipLoss({ ...checkPolicyInputs(inputs, 'truncated-ppo'), tokenBudget: parsed.generationBudget }, parsed)
}

export const truncatedPpoInputsOptionsSchema = z.strictObject({
  /** Generation-length budget: positions ≥ this are cut. Required. */
  generationBudget: z.number().int().positive(),
  /** Discount γ. Default 1 (verl). */
  gamma: z.number().min(0).max(1).default(1),
  /** GAE λ. Default 1 (verl). */
  lambda: z.number().min(0).max(1).default(1),
  /** Whiten the advantages over the kept tokens (verl's GAE does: masked mean, unbiased variance, +1e-8). Default true. */
  whiten: z.boolean().default(true),
})
export type TruncatedPpoInputsOptions = z.input<typeof truncatedPpoInputsOptionsSchema>

export interface TruncatedRollout {
  /** `[batch, tokens]` float32: per-token rewards (the outcome reward sits at the last token of a finished response). */
  tokenRewards: tf.Tensor
  /** `[batch, tokens]` float32: critic values V(s_t) of the state before each token (verl's convention). */
  values: tf.Tensor
  /** `[batch, tokens]` 0/1: response tokens. */
  mask: tf.Tensor
  /**
   * `[batch]` float32, optional: V(s_budget), the critic's value after the last kept token, for responses cut
   * by the budget. Default: `values` at the first valid position ≥ budget (when the batch holds it).
   */
  bootstrapValues?: tf.Tensor
  /**
   * Optional, per row: `false` marks a response the generator stopped at the budget without an end of
   * sequence (it is then bootstrapped even if no token lies beyond the budget). Default: a row is cut iff it
   * has a valid token at a position ≥ budget.
   */
  finished?: readonly boolean[]
}

export interface TruncatedPpoInputs {
  /** `[batch, tokens]` float32: the response mask cut at the budget (the policy loss mask). */
  mask: tf.Tensor2D
  /** `[batch, tokens]` float32: EGAE advantages on the kept tokens (0 elsewhere), whitened if asked. */
  advantages: tf.Tensor2D
  /** `[batch, tokens]` float32: raw advantages + values on the kept tokens (0 elsewhere): the critic's targets. */
  returns: tf.Tensor2D
  /** `[batch, tokens]` float32: the kept tokens of finished responses only (the critic's mask). */
  valueMask: tf.Tensor2D
  /** Per row: cut by the budget (bootstrapped). */
  truncated: boolean[]
}

/**
 * Cuts a rollout batch at the generation budget and computes EGAE advantages on the kept part:
 *
 *   δ_t = r_t + γ·V_{t+1} − V_t,  Â_t = Σ_l (γλ)^l δ_{t+l}   over kept tokens t < budget
 *
 * with V after the last kept token = V(s_budget) for a cut response and 0 for a finished one. Masked
 * tokens inside a response are skipped as in verl's GAE (they carry the next value and Â through).
 * Rewards at positions ≥ budget are dropped: they are not known when the response is cut. The returned
 * tensors are the caller's to dispose.
 */
export function buildTruncatedPpoInputs(rollout: TruncatedRollout, options: TruncatedPpoInputsOptions): TruncatedPpoInputs {
  const caller = 'buildTruncatedPpoInputs'
  const { generationBudget, gamma, lambda, whiten } = parseArgument(truncatedPpoInputsOptionsSchema, options, 'options')
  const values = requireFloatTensor(rollout.values, 'rollout.values', caller, [-1, -1])
  const [rows, tokens] = values.shape as [number, number]
  const rewardsTensor = requireFloatTensor(rollout.tokenRewards, 'rollout.tokenRewards', caller, [rows, tokens])
  const { data: mask } = readMask(rollout.mask, 'rollout.mask', caller, [rows, tokens])
  const valueData = readFinite(values, 'rollout.values', caller, mask)
  const rewards = readFinite(rewardsTensor, 'rollout.tokenRewards', caller, mask)
  const bootstrap =
    rollout.bootstrapValues === undefined
      ? undefined
      : readFinite(requireFloatTensor(rollout.bootstrapValues, 'rollout.bootstrapValues', caller, [rows]), 'rollout.bootstrapValues', caller)
  if (rollout.finished !== undefined && (!Array.isArray(rollout.finished) || rollout.finished.length !== rows)) {
    throw new InvalidArgumentError({
      argument: 'rollout.finished',
      value: rollout.finished,
      message: `passed to '${caller}' must be an array of ${rows} booleans`,
    })
  }

  const kept = Math.min(generationBudget, tokens)
  const keptMask = new Float32Array(rows * tokens)
  const valueMask = new Float32Array(rows * tokens)
  const advantages = new Float64Array(rows * tokens)
  const returns = new Float32Array(rows * tokens)
  const truncated: boolean[] = []
  for (let row = 0; row < rows; row++) {
    const offset = row * tokens
    let firstBeyond = -1
    for (let column = kept; column < tokens; column++) {
      if (mask[offset + column] !== 0) {
        firstBeyond = column
        break
      }
    }
    const isTruncated = firstBeyond >= 0 || rollout.finished?.[row] === false
    truncated.push(isTruncated)
    let nextValue = 0
    if (isTruncated) {
      if (bootstrap !== undefined) nextValue = bootstrap[row]!
      else if (firstBeyond >= 0) nextValue = valueData[offset + firstBeyond]!
      else {
        throw new InvalidArgumentError({
          argument: 'rollout.bootstrapValues',
          value: undefined,
          message: `is required by '${caller}': row ${row} is cut at the budget but the batch holds no value beyond it`,
        })
      }
    }
    let lastGaeLambda = 0
    for (let column = kept - 1; column >= 0; column--) {
      const index = offset + column
      if (mask[index] === 0) continue
      const delta = rewards[index]! + gamma * nextValue - valueData[index]!
      lastGaeLambda = delta + gamma * lambda * lastGaeLambda
      nextValue = valueData[index]!
      advantages[index] = lastGaeLambda
      returns[index] = lastGaeLambda + valueData[index]!
      keptMask[index] = 1
      if (!isTruncated) valueMask[index] = 1
    }
  }
  const output = whiten ? whitenMasked(advantages, keptMask, caller) : Float32Array.from(advantages)
  return {
    mask: tf.tensor2d(keptMask, [rows, tokens]),
    advantages: tf.tensor2d(output, [rows, tokens]),
    returns: tf.tensor2d(returns, [rows, tokens]),
    valueMask: tf.tensor2d(valueMask, [rows, tokens]),
    truncated,
  }
}

/** verl masked_whiten (mean Σx·m/(Σm + 1e-8), unbiased variance, rsqrt(var + 1e-8)), re-masked to 0. */
function whitenMasked(values: Float64Array, mask: Float32Array, caller: string): Float32Array {
  const { validTokens } = countMask(mask, 1, mask.length)
  if (validTokens < 2) {
    throw new InvalidArgumentError({
      argument: 'rollout.mask',
      value: validTokens,
      message: `passed to '${caller}' must keep at least 2 tokens to whiten the advantages (or pass whiten: false)`,
    })
  }
  let total = 0
  for (let index = 0; index < values.length; index++) total += values[index]! * mask[index]!
  const mean = total / (validTokens + 1e-8)
  let squares = 0
  for (let index = 0; index < values.length; index++) squares += (values[index]! - mean) ** 2 * mask[index]!
  const variance = (squares / (validTokens + 1e-8)) * (validTokens / (validTokens - 1))
  const scale = 1 / Math.sqrt(variance + 1e-8)
  return Float32Array.from(values, (value, index) => (mask[index] === 0 ? 0 : (value - mean) * scale))
}
