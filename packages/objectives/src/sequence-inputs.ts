import type * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError } from '@ludic/core'
import { describeIndex, readFinite, requireFloatTensor, requireShape, requireTensor } from './tensor-checks.js'

/**
 * Checks for the sequence-level (preference) losses, whose inputs are `[batch]` tensors (internal).
 */

/** A `[batch]` float32 tensor with finite values; `batch` = -1 accepts any size. Returns its values. */
export function readSequenceValues(value: unknown, argument: string, caller: string, batch: number): { tensor: tf.Tensor; data: Float32Array } {
  const tensor = requireFloatTensor(value, argument, caller, [batch])
  if (tensor.size === 0) throw new InvalidArgumentError({ argument, value: tensor.shape, message: `passed to '${caller}' must hold at least one sequence` })
  return { tensor, data: readFinite(tensor, argument, caller) }
}

/** A `[batch]` tensor (int32 or float32) of token counts: non-negative integers. Returns them as numbers. */
export function readLengths(value: unknown, argument: string, caller: string, batch: number, options: { positive?: boolean } = {}): Float32Array {
  const tensor = requireTensor(value, argument, caller)
  if (tensor.dtype !== 'int32' && tensor.dtype !== 'float32') {
    throw new InvalidArgumentError({ argument, value: tensor.dtype, message: `passed to '${caller}' must have dtype int32 or float32` })
  }
  requireShape(tensor, [batch], argument, caller)
  const data = Float32Array.from(tensor.dataSync() as ArrayLike<number>)
  data.forEach((length, index) => {
    if (!Number.isInteger(length) || length < 0 || (options.positive === true && length === 0)) {
      throw new InvalidArgumentError({
        argument,
        value: length,
        message: `passed to '${caller}' must hold ${options.positive === true ? 'positive' : 'non-negative'} integer token counts (at ${describeIndex(index, tensor.shape)})`,
      })
    }
  })
  return data
}

/** Mean of an array (0 for an empty one). */
export function mean(values: ArrayLike<number>): number {
  let total = 0
  for (let index = 0; index < values.length; index++) total += values[index]!
  return values.length === 0 ? 0 : total / values.length
}
