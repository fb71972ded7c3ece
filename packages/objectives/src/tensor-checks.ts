import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError, ShapeError } from '@ludic/core'

/**
 * Argument checks shared by the losses (internal). Every check names the argument and the loss, so a
 * bad input fails at the call with a readable message instead of a NaN three steps later.
 */

/** Throws unless `value` is a live tensor. */
export function requireTensor(value: unknown, argument: string, caller: string): tf.Tensor {
  if (!(value instanceof tf.Tensor)) {
    throw new InvalidArgumentError({ argument, value, message: `passed to '${caller}' must be a tf.Tensor` })
  }
  if (value.isDisposed) throw new InvalidArgumentError({ argument, value: value.shape, message: `passed to '${caller}' is disposed` })
  return value
}

/** A float32 tensor of the given rank (and shape, where `shape` is given; -1 = any size). */
export function requireFloatTensor(value: unknown, argument: string, caller: string, shape: readonly number[]): tf.Tensor {
  const tensor = requireTensor(value, argument, caller)
  if (tensor.dtype !== 'float32') {
    throw new InvalidArgumentError({ argument, value: tensor.dtype, message: `passed to '${caller}' must have dtype float32` })
  }
  requireShape(tensor, shape, argument, caller)
  return tensor
}

export function requireShape(tensor: tf.Tensor, shape: readonly number[], argument: string, caller: string): void {
  if (tensor.rank !== shape.length || shape.some((size, axis) => size !== -1 && size !== tensor.shape[axis])) {
    throw new ShapeError({ argument, expected: shape, actual: tensor.shape, message: `'${caller}' needs this shape` })
  }
}

/** A mask tensor (float32, int32 or bool) of the given shape; its values are checked elsewhere (no read). */
export function requireMaskTensor(value: unknown, argument: string, caller: string, shape: readonly number[]): tf.Tensor {
  const tensor = requireTensor(value, argument, caller)
  if (tensor.dtype !== 'float32' && tensor.dtype !== 'int32' && tensor.dtype !== 'bool') {
    throw new InvalidArgumentError({ argument, value: tensor.dtype, message: `passed to '${caller}' must have dtype float32, int32 or bool` })
  }
  requireShape(tensor, shape, argument, caller)
  return tensor
}

/**
 * A 0/1 mask (float32, int32 or bool) of the given shape, read now. Returns its values as float32 so the
 * caller can count valid tokens without another read.
 */
export function readMask(value: unknown, argument: string, caller: string, shape: readonly number[]): { tensor: tf.Tensor; data: Float32Array } {
  const tensor = requireMaskTensor(value, argument, caller, shape)
  const data = Float32Array.from(tensor.dataSync() as ArrayLike<number>)
  for (let index = 0; index < data.length; index++) {
    const weight = data[index]!
    if (weight !== 0 && weight !== 1) {
      throw new InvalidArgumentError({
        argument,
        value: weight,
        message: `passed to '${caller}' must hold only 0 and 1 (${describeIndex(index, tensor.shape)})`,
      })
    }
  }
  return { tensor, data }
}

/**
 * Reads a float tensor and throws if a value is NaN or ±Infinity where `mask` is 1 (everywhere when
 * `mask` is omitted). Values at masked positions never reach a loss, so they may be anything.
 */
export function readFinite(tensor: tf.Tensor, argument: string, caller: string, mask?: Float32Array): Float32Array {
  const data = tensor.dataSync() as Float32Array
  for (let index = 0; index < data.length; index++) {
    if (mask !== undefined && mask[index] === 0) continue
    if (!Number.isFinite(data[index]!)) {
      const where = mask === undefined ? '' : ', a valid token'
      throw new InvalidArgumentError({
        argument,
        value: data[index],
        message: `passed to '${caller}' is not finite at ${describeIndex(index, tensor.shape)}${where}`,
      })
    }
  }
  return data
}

/** `[row, column]` for a flat index into a tensor of `shape`. */
export function describeIndex(flatIndex: number, shape: readonly number[]): string {
  const position: number[] = []
  let rest = flatIndex
  for (let axis = shape.length - 1; axis >= 0; axis--) {
    const size = shape[axis]!
    position.unshift(size === 0 ? 0 : rest % size)
    rest = size === 0 ? 0 : Math.floor(rest / size)
  }
  return `[${position.join(', ')}]`
}

/** `where(mask != 0, values, 0)`: values at masked positions replaced by 0, so NaN there cannot reach a gradient. */
export function zeroMasked(values: tf.Tensor, mask: tf.Tensor): tf.Tensor {
  return tf.where(tf.notEqual(mask, 0), values, tf.zerosLike(values))
}

/** Throws unless `value` is a finite number (for plain-number arguments such as counts and metrics). */
export function requireFiniteNumber(value: unknown, argument: string, caller: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new InvalidArgumentError({ argument, value, message: `passed to '${caller}' must be a finite number` })
  }
  return value
}

/**
 * Throws if `logits` (`[batch, tokens, vocab]`) hold NaN or +Infinity at a valid token (−Infinity, a masked
 * vocabulary entry, is fine). Reads only a `[batch, tokens]` flag per token.
 */
export function requireValidLogits(logits: tf.Tensor, mask: Float32Array, argument: string, caller: string): void {
  const invalid = tf.tidy(() => tf.any(tf.logicalOr(tf.isNaN(logits), tf.equal(logits, Number.POSITIVE_INFINITY)), -1))
  const flags = invalid.dataSync()
  invalid.dispose()
  for (let index = 0; index < flags.length; index++) {
    if (flags[index] !== 0 && mask[index] !== 0) {
      const where = describeIndex(index, logits.shape.slice(0, -1))
      throw new InvalidArgumentError({ argument, value: Number.NaN, message: `passed to '${caller}' holds NaN or +Infinity at token ${where}, a valid token` })
    }
  }
}

/**
 * Checks of input values computed on the device, inside the loss's `tf.tidy`, instead of read there:
 * `readLossMetrics` reads them with the metrics and throws the error. One row per checked argument; made by
 * the functions below.
 */
export interface ValueChecks {
  /** Per row: the argument the error names (e.g. `inputs.mask`) and its message at the first failing position. */
  entries: { argument: string; message: (position: string) => string }[]
  /** float32 `[rows, size]`: 1 where the check fails. */
  failed: tf.Tensor
  /** float32 `[rows, size]`: the values checked (the error reports the first failing one). */
  values: tf.Tensor
  /** The shape of one checked tensor, to turn a flat index into a position (`[]` for a scalar). */
  shape: readonly number[]
}

/**
 * `mask` (float32 or int32) holds only 0 and 1, i.e. m·(m − 1) = 0; undefined for a bool mask, which always
 * does. Inside `tf.tidy`.
 */
export function binaryMaskCheck(mask: tf.Tensor, argument: string, caller: string): ValueChecks | undefined {
  if (mask.dtype === 'bool') return undefined
  const values = tf.reshape(mask.dtype === 'float32' ? mask : tf.cast(mask, 'float32'), [1, mask.size])
  return {
    entries: [{ argument, message: (position) => `passed to '${caller}' must hold only 0 and 1 (${position})` }],
    failed: tf.cast(tf.notEqual(tf.mul(values, tf.sub(values, 1)), 0), 'float32'),
    values,
    shape: mask.shape,
  }
}

/**
 * Each tensor is finite (no NaN, no ±Infinity). Pass the tensors with their masked positions set to 0
 * (`zeroMasked`): only valid tokens are checked. Inside `tf.tidy`.
 */
export function finiteChecks(tensors: { argument: string; tensor: tf.Tensor }[], caller: string): ValueChecks {
  const shape = tensors[0]!.tensor.shape
  const size = tensors[0]!.tensor.size
  const values = tf.reshape(tf.stack(tensors.map(({ tensor }) => tensor)), [tensors.length, size]) // [rows, size]
  return {
    entries: tensors.map(({ argument }) => ({ argument, message: (position: string) => `passed to '${caller}' is not finite at ${position}, a valid token` })),
    failed: tf.cast(tf.logicalNot(tf.isFinite(values)), 'float32'),
    values,
    shape,
  }
}

/** `values` is ≥ 0; pass it with its masked positions set to 0 (`zeroMasked`). Inside `tf.tidy`. */
export function nonNegativeCheck(values: tf.Tensor, argument: string, caller: string): ValueChecks {
  const flat = tf.reshape(values, [1, values.size])
  return {
    entries: [{ argument, message: (position) => `passed to '${caller}' must be non-negative (at ${position})` }],
    failed: tf.cast(tf.less(flat, 0), 'float32'),
    values: flat,
    shape: values.shape,
  }
}
