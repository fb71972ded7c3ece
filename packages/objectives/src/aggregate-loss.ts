import * as tf from '@tensorflow/tfjs-core'
import { z } from 'zod'
import { InvalidArgumentError, parseArgument } from '@ludic/core'
import { readFinite, readMask, requireFloatTensor, type ValueChecks } from './tensor-checks.js'

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
  requireNonEmptyMask(countMask(maskRead.data, matrix.shape[0]!, matrix.shape[1]!), parsedMode, parsed, caller)
  return tf.tidy(() => aggregateMasked(matrix, maskRead.tensor, parsedMode, parsed, caller).loss)
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

/** Names of the arguments the errors of an aggregation mention. */
export interface AggregationArgumentNames {
  mask: string
  counts: string
}

/** The local count a mode divides by when its global count is not given (verl's default). */
export interface LocalCount {
  /** float32 scalar, computed from the mask (no read). */
  count: tf.Scalar
  option: 'globalTokenCount' | 'globalBatchSize'
  what: string
}

/**
 * The aggregation itself, for callers that have already checked the mask. Call inside `tf.tidy`. `mask`
 * may be float32, int32 or bool. The counts come from the mask tensor (no read); `localCount` is the count
 * the mode divided by when no global count was given, for the caller to check: a zero count (no valid
 * token) means a division by zero (`requireNonEmptyMask` checks it from read counts, `emptyMaskCheck` on
 * the device).
 */
export function aggregateMasked(
  values: tf.Tensor,
  mask: tf.Tensor,
  mode: AggregationMode,
  options: ParsedAggregateLossOptions,
  caller: string,
  names: AggregationArgumentNames = { mask: 'mask', counts: 'options' },
): { loss: tf.Scalar; localCount: LocalCount | undefined } {
  const tokens = values.shape[1]!
  const floatMask = mask.dtype === 'float32' ? mask : tf.cast(mask, 'float32')
  // verl masked_sum: where(mask != 0, values, 0) * mask, so values at masked positions never contribute.
  const maskedValues = tf.mul(tf.where(tf.notEqual(floatMask, 0), values, tf.zerosLike(values)), floatMask) // [batch, tokens]
  const dataParallelSize = options.dataParallelSize
  const localSequences = (): LocalCount | undefined => {
    if (options.globalBatchSize !== undefined) return undefined
    requireGlobalCount(dataParallelSize, 'globalBatchSize', mode, caller, names)
    const count = tf.sum(tf.cast(tf.greater(tf.sum(floatMask, -1), 0), 'float32')) as tf.Scalar
    return { count, option: 'globalBatchSize', what: 'sequence with a valid token' }
  }
  switch (mode) {
    case 'token-mean': {
      let localCount: LocalCount | undefined
      if (options.globalTokenCount === undefined) {
        requireGlobalCount(dataParallelSize, 'globalTokenCount', mode, caller, names)
        localCount = { count: tf.sum(floatMask) as tf.Scalar, option: 'globalTokenCount', what: 'valid token' }
      }
      const tokenCount = options.globalTokenCount ?? localCount!.count
      return { loss: tf.mul(tf.div(tf.sum(maskedValues), tokenCount), dataParallelSize) as tf.Scalar, localCount }
    }
    case 'token-sum':
      return { loss: tf.mul(tf.sum(maskedValues), dataParallelSize) as tf.Scalar, localCount: undefined }
    case 'seq-mean-token-sum':
    case 'seq-mean-token-sum-norm': {
      const sequenceLosses = tf.sum(maskedValues, -1) // [batch]
      const localCount = localSequences()
      const sequenceCount = options.globalBatchSize ?? localCount!.count
      const loss = tf.mul(tf.div(tf.sum(sequenceLosses), sequenceCount), dataParallelSize)
      if (mode === 'seq-mean-token-sum') return { loss: loss as tf.Scalar, localCount }
      return { loss: tf.div(loss, options.lossScaleFactor ?? tokens) as tf.Scalar, localCount }
    }
    case 'seq-mean-token-mean': {
      const rowCounts = tf.add(tf.sum(floatMask, -1), 1e-8) // [batch]
      const sequenceLosses = tf.div(tf.sum(maskedValues, -1), rowCounts) // [batch]
      const localCount = localSequences()
      const sequenceCount = options.globalBatchSize ?? localCount!.count
      return { loss: tf.mul(tf.div(tf.sum(sequenceLosses), sequenceCount), dataParallelSize) as tf.Scalar, localCount }
    }
  }
}

/** verl raises when a data-parallel run has no global count: so do we, before any computation. */
function requireGlobalCount(
  dataParallelSize: number,
  option: LocalCount['option'],
  mode: AggregationMode,
  caller: string,
  names: AggregationArgumentNames,
): void {
  if (dataParallelSize > 1) {
    throw new InvalidArgumentError({
      argument: `${names.counts}.${option}`,
      value: undefined,
      message:
        `is required by '${caller}' (mode '${mode}') when dataParallelSize > 1 ` +
        `(verl: ${option === 'globalTokenCount' ? '(global) batch_num_tokens' : 'global_batch_size'} is required when dp_size > 1)`,
    })
  }
}

function emptyMaskMessage(what: string, option: string, mode: AggregationMode, caller: string, names: AggregationArgumentNames): string {
  return `passed to '${caller}' has no ${what}: mode '${mode}' would divide by zero (pass ${names.counts}.${option} to aggregate an empty micro-batch)`
}

/** Throws, from read counts, where `aggregateMasked` would divide by a local count of zero. */
export function requireNonEmptyMask(
  counts: MaskCounts,
  mode: AggregationMode,
  options: ParsedAggregateLossOptions,
  caller: string,
  names: AggregationArgumentNames = { mask: 'mask', counts: 'options' },
): void {
  if (options.dataParallelSize > 1) return // aggregateMasked refuses the missing global count itself
  const local =
    mode === 'token-mean'
      ? options.globalTokenCount === undefined && { count: counts.validTokens, option: 'globalTokenCount', what: 'valid token' }
      : mode !== 'token-sum' &&
        options.globalBatchSize === undefined && { count: counts.validSequences, option: 'globalBatchSize', what: 'sequence with a valid token' }
  if (local !== false && local.count === 0) {
    throw new InvalidArgumentError({ argument: names.mask, value: 0, message: emptyMaskMessage(local.what, local.option, mode, caller, names) })
  }
}

/** The same refusal as a check on the device, read with the metrics (inside `tf.tidy`). */
export function emptyMaskCheck(localCount: LocalCount, mode: AggregationMode, caller: string, names: AggregationArgumentNames): ValueChecks {
  return {
    entries: [{ argument: names.mask, message: () => emptyMaskMessage(localCount.what, localCount.option, mode, caller, names) }],
    failed: tf.reshape(tf.cast(tf.equal(localCount.count, 0), 'float32'), [1, 1]),
    values: tf.reshape(localCount.count, [1, 1]),
    shape: [],
  }
}
