import * as tf from '@tensorflow/tfjs-core'
import { z } from 'zod'
import { InvalidArgumentError, parseArgument } from '@ludic/core'
import { keepLossMetrics, type LossMetricTensors } from './loss-metrics.js'
import { offTape } from '@ludic/tensors'
import { binaryMaskCheck, finiteChecks, requireFloatTensor, requireMaskTensor, zeroMasked, type ValueChecks } from './tensor-checks.js'

/** Where log Z(x) comes from: a learned value per trajectory (`inputs.logZ`), or the batch's own estimate. */
export const logPartitionModes = ['learned', 'batch-mean'] as const
export type LogPartitionMode = (typeof logPartitionModes)[number]

export const trajectoryBalanceOptionsSchema = z.strictObject({
  /**
   * β: the policy learns P(y|x) ∝ R(x, y)^β (log R is multiplied by β). FoR calls it the reward temperature
   * and anneals it from 1 to 2 over the first half of training (BlocksWorld). Default 1.
   */
  rewardExponent: z.number().positive().finite().default(1),
  /**
   * `learned`: log Z(x) is `inputs.logZ` (trajectory balance, Malkin et al. 2022; a `createLogPartition` table).
   * `batch-mean`: log Z(x) is estimated as the mean of β·log R + log P_B − Σ log P_F over the batch's
   * trajectories of the same prompt (`inputs.promptKeys`), the log-partition variance loss (Zhang et al. 2023;
   * VarGrad) that FoR's BlocksWorld code trains with (`tb_loss(..., logpartition=True)`). Default `learned`.
   */
  logPartition: z.enum(logPartitionModes).default('learned'),
})
export type TrajectoryBalanceOptions = z.input<typeof trajectoryBalanceOptionsSchema>

export interface TrajectoryBalanceInputs {
  /**
   * float32, differentiated: Σ_t log P_F(s_{t+1}|s_t) of each trajectory, `[batch]`, or per step `[batch, steps]`
   * (token or reasoning-step log-probs of the policy, summed here over `mask`).
   */
  forwardLogprobs: tf.Tensor
  /** `[batch, steps]` 0/1 with a per-step `forwardLogprobs`: 1 = a step of the trajectory. Default: every step. */
  mask?: tf.Tensor | undefined
  /** `[batch]` float32: log R(x, y) of each terminal state. Give this or `rewards`. */
  logRewards?: tf.Tensor | undefined
  /** `[batch]` float32: R(x, y) > 0 (its log is taken). Give this or `logRewards`. */
  rewards?: tf.Tensor | undefined
  /** `[batch]` (or a scalar, one log Z for all) float32: log Z(x), differentiated; with `logPartition: 'learned'` only. */
  logZ?: tf.Tensor | undefined
  /** `[batch]` float32: Σ_t log P_B(s_t|s_{t+1}). Default 0: text generated left to right has one parent per state. */
  backwardLogprobs?: tf.Tensor | undefined
  /** With `batch-mean`: the prompt of each trajectory; those with the same key share one estimate. Default: one prompt. */
  promptKeys?: readonly string[] | undefined
}

/** Diagnostics as plain numbers, what `readLossMetrics(result.metrics)` returns. */
export interface TrajectoryBalanceMetrics {
  /** The value of `loss`. */
  loss: number
  /** Mean residual δ = log Z + Σ log P_F − β·log R − Σ log P_B (> 0: the policy puts too much mass on the batch). */
  residualMean: number
  /** Mean log Z(x) used (learned, or the batch estimate). Near log Σ_y R(x, y)^β at the optimum. */
  logZMean: number
  /** Mean log R (before the exponent β). */
  logRewardMean: number
  /** Mean Σ_t log P_F of the trajectories. */
  forwardLogprobMean: number
}
export type TrajectoryBalanceMetricTensors = LossMetricTensors<TrajectoryBalanceMetrics>

export interface TrajectoryBalanceResult {
  /** Scalar loss, differentiable with respect to `forwardLogprobs`, `logZ` and `backwardLogprobs`. */
  loss: tf.Scalar
  /** Read once after the step with `readLossMetrics` (it also reports bad input values). */
  metrics: TrajectoryBalanceMetricTensors
  /** `[batch]` δ of each trajectory (the caller's, like `loss`), e.g. to prioritise a replay buffer. */
  residuals: tf.Tensor1D
}

/**
 * Trajectory balance (Malkin et al. 2022, https://arxiv.org/abs/2201.13259, the TB constraint (13) squared in
 * log space), the loss of Flow of Reasoning (FoR; Yu et al. 2024, https://arxiv.org/abs/2406.05673), which
 * trains the LLM as the forward policy of a GFlowNet over reasoning steps. For a trajectory τ = (s_0 … s_n)
 * from prompt x:
 *
 *   δ(τ) = log Z(x) + Σ_t log P_F(s_{t+1}|s_t) − β·log R(x, s_n) − Σ_t log P_B(s_t|s_{t+1});   L = mean_τ δ(τ)²
 *
 * At δ = 0 for every τ the policy samples terminal states with P(s_n|x) ∝ R(x, s_n)^β and Z(x) = Σ R^β.
 * Any behaviour policy may supply τ (replay, tempered or ε sampling, local search): δ uses the current
 * policy's log-probs. `batch-mean` replaces log Z(x) by its per-prompt batch estimate (see the options).
 * FoR trains with TB only (no subtrajectory balance). No device read: the value checks and metrics are
 * read later with `readLossMetrics`.
 */
export function trajectoryBalanceLoss(inputs: TrajectoryBalanceInputs, options: TrajectoryBalanceOptions = {}): TrajectoryBalanceResult {
  return runTrajectoryBalance(inputs, parseArgument(trajectoryBalanceOptionsSchema, options, 'options'))
}

/** `trajectoryBalanceLoss` with its options fixed: `createTrajectoryBalanceLoss({ rewardExponent: 2 })(inputs)`. */
export function createTrajectoryBalanceLoss(options: TrajectoryBalanceOptions = {}): (inputs: TrajectoryBalanceInputs) => TrajectoryBalanceResult {
  const parsed = parseArgument(trajectoryBalanceOptionsSchema, options, 'options')
  return (inputs) => runTrajectoryBalance(inputs, parsed)
}

const caller = 'trajectoryBalanceLoss'

function runTrajectoryBalance(inputs: TrajectoryBalanceInputs, options: z.output<typeof trajectoryBalanceOptionsSchema>): TrajectoryBalanceResult {
  const checked = checkInputs(inputs, options)
  const { rewardExponent: beta } = options
  const batch = checked.forward.shape[0]!
  let metrics: TrajectoryBalanceMetricTensors | undefined
  const { loss, residuals } = tf.tidy(() => {
    const mask = checked.mask === undefined ? undefined : tf.cast(checked.mask, 'float32')
    const stepLogprobs = mask === undefined ? undefined : zeroMasked(checked.forward, mask)
    const forward = checked.forward.rank === 1 ? checked.forward : tf.sum(stepLogprobs ?? checked.forward, 1) // [batch]
    const logReward = checked.logRewards ?? tf.log(checked.rewards!) // [batch]
    const backward = checked.backward ?? tf.zeros([batch])
    const target = tf.add(tf.mul(logReward, beta), backward) // β·log R + Σ log P_B
    const logZ = checked.logZ === undefined ? batchLogZ(tf.sub(target, forward), checked.promptKeys) : tf.add(checked.logZ, tf.zeros([batch]))
    const residuals = tf.sub(tf.add(logZ, forward), target) as tf.Tensor1D // [batch]
    const loss = tf.mean(tf.square(residuals)) as tf.Scalar
    metrics = offTape(() => {
      const rows = [{ argument: checked.rewards === undefined ? 'inputs.logRewards' : 'inputs.rewards', tensor: checked.rewards ?? logReward }]
      if (checked.forward.rank === 1) rows.push({ argument: 'inputs.forwardLogprobs', tensor: checked.forward })
      if (checked.logZ !== undefined) rows.push({ argument: 'inputs.logZ', tensor: logZ })
      if (checked.backward !== undefined) rows.push({ argument: 'inputs.backwardLogprobs', tensor: checked.backward })
      const checks: (ValueChecks | undefined)[] = [
        checked.mask === undefined ? undefined : binaryMaskCheck(checked.mask, 'inputs.mask', caller),
        checked.forward.rank === 2 ? finiteChecks([{ argument: 'inputs.forwardLogprobs', tensor: stepLogprobs ?? checked.forward }], caller) : undefined,
        finiteChecks(rows, caller),
        checked.rewards === undefined ? undefined : positiveCheck(checked.rewards, 'inputs.rewards'),
      ]
      const values = {
        loss: tf.clone(loss),
        residualMean: tf.mean(residuals),
        logZMean: tf.mean(logZ),
        logRewardMean: tf.mean(logReward),
        forwardLogprobMean: tf.mean(forward),
      } as { [Name in keyof TrajectoryBalanceMetrics]: tf.Scalar }
      return keepLossMetrics<TrajectoryBalanceMetrics>(values, checks)
    }, checked.rewards ?? checked.logRewards!)
    return { loss, residuals }
  })
  return { loss, metrics: metrics!, residuals }
}

/**
 * `[batch]`: for each trajectory, the mean of `values` (β·log R + log P_B − Σ log P_F) over the trajectories of
 * its prompt. The gradient through the mean cancels in Σδ² (Σ_group δ = 0), as in FoR's code, which keeps it.
 */
function batchLogZ(values: tf.Tensor, promptKeys: readonly string[] | undefined): tf.Tensor {
  if (promptKeys === undefined) return tf.mul(tf.mean(values), tf.onesLike(values))
  const groups = new Map<string, number>()
  for (const key of promptKeys) if (!groups.has(key)) groups.set(key, groups.size)
  // One prompt: the batch mean (tf.oneHot needs a depth of two at least).
  if (groups.size === 1) return tf.mul(tf.mean(values), tf.onesLike(values))
  const groupOf = Int32Array.from(promptKeys, (key) => groups.get(key)!)
  const counts = new Float32Array(groups.size)
  for (const group of groupOf) counts[group]! += 1
  const membership = tf.oneHot(tf.tensor1d(groupOf, 'int32'), groups.size) // [batch, groups]
  const groupMeans = tf.div(tf.matMul(tf.expandDims(values, 0), tf.cast(membership, 'float32')), tf.tensor2d(counts, [1, groups.size])) // [1, groups]
  return tf.sum(tf.mul(tf.cast(membership, 'float32'), groupMeans), 1) // [batch]
}

/** R > 0 (NaN fails too). Inside `tf.tidy`. */
function positiveCheck(values: tf.Tensor, argument: string): ValueChecks {
  const flat = tf.reshape(values, [1, values.size])
  return {
    entries: [{ argument, message: (position) => `passed to '${caller}' must be positive, its log is taken (at ${position})` }],
    failed: tf.cast(tf.logicalNot(tf.greater(flat, 0)), 'float32'),
    values: flat,
    shape: values.shape,
  }
}

interface CheckedInputs {
  forward: tf.Tensor
  mask: tf.Tensor | undefined
  logRewards: tf.Tensor | undefined
  rewards: tf.Tensor | undefined
  logZ: tf.Tensor | undefined
  backward: tf.Tensor | undefined
  promptKeys: readonly string[] | undefined
}

/** Shapes, dtypes and which inputs the mode needs (no device read). */
function checkInputs(inputs: TrajectoryBalanceInputs, options: z.output<typeof trajectoryBalanceOptionsSchema>): CheckedInputs {
  if (inputs === null || typeof inputs !== 'object') {
    throw new InvalidArgumentError({
      argument: 'inputs',
      value: inputs,
      message: `passed to '${caller}' must be an object { forwardLogprobs, logRewards, logZ }`,
    })
  }
  const forward = requireFloatTensor(inputs.forwardLogprobs, 'inputs.forwardLogprobs', caller, inputs.forwardLogprobs?.rank === 2 ? [-1, -1] : [-1])
  const batch = forward.shape[0]!
  if (batch === 0)
    throw new InvalidArgumentError({ argument: 'inputs.forwardLogprobs', value: forward.shape, message: `passed to '${caller}' holds no trajectory` })
  let mask: tf.Tensor | undefined
  if (inputs.mask !== undefined) {
    if (forward.rank !== 2) {
      throw new InvalidArgumentError({
        argument: 'inputs.mask',
        value: inputs.mask,
        message: `passed to '${caller}' needs per-step forwardLogprobs [batch, steps]`,
      })
    }
    mask = requireMaskTensor(inputs.mask, 'inputs.mask', caller, forward.shape)
  }
  if ((inputs.logRewards === undefined) === (inputs.rewards === undefined)) {
    throw new InvalidArgumentError({
      argument: 'inputs.logRewards',
      value: undefined,
      message: `passed to '${caller}': give exactly one of logRewards and rewards`,
    })
  }
  const logRewards = inputs.logRewards === undefined ? undefined : requireFloatTensor(inputs.logRewards, 'inputs.logRewards', caller, [batch])
  const rewards = inputs.rewards === undefined ? undefined : requireFloatTensor(inputs.rewards, 'inputs.rewards', caller, [batch])
  const backward = inputs.backwardLogprobs === undefined ? undefined : requireFloatTensor(inputs.backwardLogprobs, 'inputs.backwardLogprobs', caller, [batch])
  let logZ: tf.Tensor | undefined
  if (options.logPartition === 'learned') {
    if (inputs.logZ === undefined) {
      throw new InvalidArgumentError({ argument: 'inputs.logZ', value: undefined, message: `passed to '${caller}' is required with logPartition 'learned'` })
    }
    logZ = requireFloatTensor(inputs.logZ, 'inputs.logZ', caller, inputs.logZ.rank === 0 ? [] : [batch])
    if (inputs.promptKeys !== undefined) {
      throw new InvalidArgumentError({
        argument: 'inputs.promptKeys',
        value: inputs.promptKeys,
        message: `passed to '${caller}' is used by logPartition 'batch-mean' only`,
      })
    }
  } else if (inputs.logZ !== undefined) {
    throw new InvalidArgumentError({
      argument: 'inputs.logZ',
      value: inputs.logZ.shape,
      message: `passed to '${caller}' is not used with logPartition 'batch-mean' (it estimates log Z)`,
    })
  }
  const promptKeys = inputs.promptKeys
  if (promptKeys !== undefined && (!Array.isArray(promptKeys) || promptKeys.length !== batch || promptKeys.some((key) => typeof key !== 'string'))) {
    throw new InvalidArgumentError({
      argument: 'inputs.promptKeys',
      value: promptKeys,
      message: `passed to '${caller}' must be ${batch} strings, one per trajectory`,
    })
  }
  return { forward, mask, logRewards, rewards, logZ, backward, promptKeys }
}
