import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError, ShapeError } from '@ludic/core'

/** Throws unless `value` is a tensor; errors name the argument and the calling function. */
export function assertTensor(value: unknown, argument: string, caller: string): asserts value is tf.Tensor {
  if (!(value instanceof tf.Tensor)) {
    throw new InvalidArgumentError({ argument, value, message: `passed to '${caller}' must be a tf.Tensor` })
  }
  if (value.isDisposed) throw new InvalidArgumentError({ argument, value: value.shape, message: `passed to '${caller}' is disposed` })
}

export function assertFloat(tensor: tf.Tensor, argument: string, caller: string): void {
  if (tensor.dtype !== 'float32') {
    throw new InvalidArgumentError({ argument, value: tensor.dtype, message: `passed to '${caller}' must have dtype float32` })
  }
}

export function assertSameShape(a: tf.Tensor, b: tf.Tensor, argumentB: string, caller: string): void {
  if (a.rank !== b.rank || a.shape.some((size, index) => size !== b.shape[index])) {
    throw new ShapeError({ argument: argumentB, expected: a.shape, actual: b.shape, message: `'${caller}' needs it to match the values` })
  }
}

/** Normalises a possibly negative axis, naming the argument when out of range. */
export function resolveAxis(axis: number, rank: number, caller: string): number {
  if (!Number.isInteger(axis) || axis < -rank || axis >= rank) {
    throw new InvalidArgumentError({ argument: 'axis', value: axis, message: `passed to '${caller}' must be an integer in [${-rank}, ${rank - 1}]` })
  }
  return axis < 0 ? axis + rank : axis
}
