import * as tf from '@tensorflow/tfjs-core'
import { z } from 'zod'
import { InvalidArgumentError, parseArgument } from '@ludic/core'
import { readFinite, readMask, requireFloatTensor } from './tensor-checks.js'

/**
 * How a `[batch, tokens]` loss matrix becomes a scalar: verl `agg_loss`
 * (`verl/trainer/ppo/core_algos.py`), mode names unchanged.
 *
 * - `token-mean`: Σ loss·mask / Σ mask (every valid token weighs the same; DAPO).
 * - `token-sum`: Σ loss·mask.
 * - `seq-mean-token-sum`: mean over sequences of each sequence's token sum.
 * - `seq-mean-token-mean`: mean over sequences of each sequence's token mean (GRPO paper).
 * - `seq-mean-token-sum-norm`: Σ loss·mask / sequences / `lossScaleFactor` (Dr. GRPO: a constant length).
 *
 * The `seq-mean-*` modes count only sequences with at least one valid token.
 */
export const aggregationModes = ['token-mean', 'token-sum', 'seq-mean-token-sum', 'seq-mean-token-mean', 'seq-mean-token-sum-norm'] as const
export type AggregationMode = (typeof aggregationModes)[number]
export const aggregationModeSchema = z.enum(aggregationModes)

/**
 * Normalisers for data-parallel training (verl's `global_batch_info`). With `dataParallelSize` ranks each
 * rank's loss is multiplied by `dataParallelSize` and divided by the *global* count, so that averaging
 * the gradients over the ranks gives the gradient of the global-batch loss.
 */
export const aggregateLossOptionsSchema = z.strictObject({
  /** verl `dp_size`: number of data-parallel ranks. Default 1. */
  dataParallelSize: z.number().int().positive().default(1),
  /**
   * verl `batch_num_tokens`: valid tokens in the global batch, used by `token-mean`. Default: the valid
   * tokens of this batch (`Σ mask`). Required when `dataParallelSize > 1`.
   */
  globalTokenCount: z.number().positive().optional(),
  /**
   * verl `global_batch_size`: sequences in the global batch, used by the `seq-mean-*` modes. Default:
   * the sequences of this batch with at least one valid token. Required when `dataParallelSize > 1`.
   */
  globalBatchSize: z.number().positive().optional(),
  /** verl `loss_scale_factor`: the constant length `seq-mean-token-sum-norm` divides by. Default: the padded length. */
  lossScaleFactor: z.number().positive().optional(),
})
export type AggregateLossOptions = z.input<typeof aggregateLossOptionsSchema>
type ParsedAggregateLossOptions = z.output<typeof aggregateLossOptionsSchema>

/**
 * Aggregates `values` (`[batch, tokens]` float32) over the valid tokens of `mask` (0/1, same shape) into a
 * scalar, exactly as verl `agg_loss`. Values at masked positions never contribute, even NaN ones.
 *
 * Throws `InvalidArgumentError` where verl would divide by zero (no valid token and no global count) or
 * raise (`dataParallelSize > 1` without the global count the mode needs).
 */
export function aggregateLoss(values: tf.Tensor, mask: tf.Tensor, mode: AggregationMode, options: AggregateLossOptions = {}): tf.Scalar {
  const caller = 'aggregateLoss'
  const parsedMode = parseArgument(aggregationModeSchema, mode, 'mode')
  const parsed = parseArgument(aggregateLossOptionsSchema, options, 'options')
  const matrix = requireFloatTensor(values, 'values', caller, [-1, -1])
  const maskRead = readMask(mask, 'mask', caller, matrix.shape)
  readFinite(matrix, 'values', caller, maskRead.data)
  return tf.tidy(() => aggregateMasked(matrix, maskRead.tensor, maskRead.data, parsedMode, parsed, caller))
}

/** Counts of a `[batch, tokens]` 0/1 mask, read once. */
export interface MaskCounts {
  batch: number
  tokens: number
  /** Σ mask. */
  validTokens: number
  /** Rows with at least one valid token. */
  validSequences: number
  /** Σ mask per row. */
  rowCounts: Float64Array
}

export function countMask(maskData: Float32Array, batch: number, tokens: number): MaskCounts {
  const rowCounts = new Float64Array(batch)
  let validTokens = 0
  let validSequences = 0
  for (let row = 0; row < batch; row++) {
    let count = 0
    for (let column = 0; column < tokens; column++) count += maskData[row * tokens + column]!
    rowCounts[row] = count
    validTokens += count
    if (count > 0) validSequences++
  }
  return { batch, tokens, validTokens, validSequences, rowCounts }
}

/**
 * The aggregation itself, for callers that have already checked and read the mask. Call inside `tf.tidy`.
 * `mask` may be float32, int32 or bool.
 */
export function aggregateMasked(
  values: tf.Tensor,
  mask: tf.Tensor,
  maskData: Float32Array,
  mode: AggregationMode,
  options: ParsedAggregateLossOptions,
  caller: string,
  names: { mask: string; counts: string } = { mask: 'mask', counts: 'options' },
): tf.Scalar {
  const [batch, tokens] = values.shape as [number, number]
  const counts = countMask(maskData, batch, tokens)
  const floatMask = mask.dtype === 'float32' ? mask : tf.cast(mask, 'float32')
  // verl masked_sum: where(mask != 0, values, 0) * mask, so values at masked positions never contribute.
  const maskedValues = tf.mul(tf.where(tf.notEqual(floatMask, 0), values, tf.zerosLike(values)), floatMask) // [batch, tokens]
  const dataParallelSize = options.dataParallelSize
  switch (mode) {
    case 'token-mean': {
      const tokenCount = options.globalTokenCount ?? localCount(counts.validTokens, dataParallelSize, 'globalTokenCount', 'valid token', mode, caller, names)
      return tf.mul(tf.div(tf.sum(maskedValues), tokenCount), dataParallelSize) as tf.Scalar
    }
    case 'token-sum':
      return tf.mul(tf.sum(maskedValues), dataParallelSize) as tf.Scalar
    case 'seq-mean-token-sum':
    case 'seq-mean-token-sum-norm': {
      const sequenceLosses = tf.sum(maskedValues, -1) // [batch]
      const sequenceCount = options.globalBatchSize ?? localCount(counts.validSequences, dataParallelSize, 'globalBatchSize', 'sequence with a valid token', mode, caller, names)
      const loss = tf.mul(tf.div(tf.sum(sequenceLosses), sequenceCount), dataParallelSize)
      if (mode === 'seq-mean-token-sum') return loss as tf.Scalar
      return tf.div(loss, options.lossScaleFactor ?? tokens) as tf.Scalar
    }
    case 'seq-mean-token-mean': {
      const rowCounts = tf.tensor1d(Float32Array.from(counts.rowCounts, (count) => count + 1e-8)) // [batch]
      const sequenceLosses = tf.div(tf.sum(maskedValues, -1), rowCounts) // [batch]
      const sequenceCount = options.globalBatchSize ?? localCount(counts.validSequences, dataParallelSize, 'globalBatchSize', 'sequence with a valid token', mode, caller, names)
      return tf.mul(tf.div(tf.sum(sequenceLosses), sequenceCount), dataParallelSize) as tf.Scalar
    }
  }
}

/** The local count as verl's default, refusing the cases where verl raises or divides by zero. */
function localCount(count: number, dataParallelSize: number, option: string, what: string, mode: AggregationMode, caller: string, names: { mask: string; counts: string }): number {
  if (dataParallelSize > 1) {
    throw new InvalidArgumentError({
      argument: `${names.counts}.${option}`,
      value: undefined,
      message:
        `is required by '${caller}' (mode '${mode}') when dataParallelSize > 1 ` +
        `(verl: ${option === 'globalTokenCount' ? '(global) batch_num_tokens' : 'global_batch_size'} is required when dp_size > 1)`,
    })
  }
  if (count === 0) {
    throw new InvalidArgumentError({
      argument: names.mask,
      value: 0,
      message: `passed to '${caller}' has no ${what}: mode '${mode}' would divide by zero (pass ${names.counts}.${option} to aggregate an empty micro-batch)`,
    })
  }
  return count
}
