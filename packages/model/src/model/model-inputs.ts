import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError, ShapeError } from '@ludic/core'

/** A `[rows, columns]` matrix of integers: an int32 `tf.Tensor2D`, or rows of equal length. */
export type IntegerMatrix = tf.Tensor | readonly (readonly number[] | Int32Array)[]

/** A matrix read to the host, row-major. */
export interface HostMatrix {
  data: Int32Array
  rows: number
  columns: number
}

/**
 * Reads an integer matrix to the host, checking its type, rank and values. `range` bounds the values
 * (`[min, maxExclusive)`); errors name `argument`, the position and the value.
 */
export function readIntegerMatrix(value: IntegerMatrix, argument: string, range?: [number, number]): HostMatrix {
  let matrix: HostMatrix
  if (value instanceof tf.Tensor) {
    if (value.rank !== 2) throw new ShapeError({ argument, expected: [-1, -1], actual: value.shape, message: 'must be a matrix [batch, time]' })
    if (value.dtype !== 'int32') {
      throw new InvalidArgumentError({ argument, value: value.dtype, message: 'must have dtype int32' })
    }
    matrix = { data: value.dataSync() as Int32Array, rows: value.shape[0]!, columns: value.shape[1]! }
  } else if (Array.isArray(value)) {
    const rows = value.length
    const columns = rows === 0 ? 0 : (value[0] as ArrayLike<number>).length
    const data = new Int32Array(rows * columns)
    value.forEach((row: unknown, index) => {
      if (!(Array.isArray(row) || row instanceof Int32Array)) {
        throw new InvalidArgumentError({ argument: `${argument}[${index}]`, value: row, message: 'must be an array of integers' })
      }
      if (row.length !== columns) {
        throw new ShapeError({ argument: `${argument}[${index}]`, expected: [columns], actual: [row.length], message: 'rows must have equal lengths' })
      }
      for (let column = 0; column < columns; column++) {
        const item = row[column] as unknown
        if (typeof item !== 'number' || !Number.isInteger(item)) {
          throw new InvalidArgumentError({ argument: `${argument}[${index}][${column}]`, value: item, message: 'must be an integer' })
        }
        data[index * columns + column] = item
      }
    })
    matrix = { data, rows, columns }
  } else {
    throw new InvalidArgumentError({ argument, value, message: 'must be an int32 tf.Tensor2D or an array of integer rows' })
  }
  if (range !== undefined) {
    const [min, max] = range
    for (let index = 0; index < matrix.data.length; index++) {
      const item = matrix.data[index]!
      if (item < min || item >= max) {
        const row = Math.floor(index / matrix.columns)
        throw new InvalidArgumentError({
          argument: `${argument}[${row}][${index - row * matrix.columns}]`,
          value: item,
          message: `must be in [${min}, ${max})`,
        })
      }
    }
  }
  return matrix
}

/**
 * Default positions: with an attention mask, the number of attended tokens before each one
 * (`cumsum(mask) - 1`, as transformers' `generate` computes them, so left padding does not shift
 * positions); padded slots get 1. Without a mask, `past … past + time - 1`.
 */
export function defaultPositions(batch: number, time: number, past: number, mask: HostMatrix | undefined): Int32Array {
  const positions = new Int32Array(batch * time)
  for (let row = 0; row < batch; row++) {
    if (mask === undefined) {
      for (let step = 0; step < time; step++) positions[row * time + step] = past + step
      continue
    }
    let count = 0
    for (let column = 0; column < mask.columns; column++) {
      const attended = mask.data[row * mask.columns + column] !== 0
      if (attended) count++
      const step = column - past
      if (step >= 0) positions[row * time + step] = attended ? count - 1 : 1
    }
  }
  return positions
}

/**
 * The additive attention bias, broadcastable to `[batch, heads, time, past + time]`: 0 where query `past + i`
 * may attend key `j` (`j ≤ past + i`, within the sliding window when there is one, and key not masked),
 * negative (-1e9 or -2e9) elsewhere. Built as a causal part `[1, 1, time, past + time]` plus, with a mask, a
 * padding part `[batch, 1, 1, past + time]`, so the host never fills `batch · time · (past + time)` values.
 */
export function attentionBias(batch: number, time: number, past: number, mask: HostMatrix | undefined, slidingWindow: number | null): tf.Tensor4D {
  const total = past + time
  const causal = new Float32Array(time * total)
  for (let step = 0; step < time; step++) {
    const query = past + step
    for (let key = 0; key < total; key++) {
      const allowed = key <= query && (slidingWindow === null || key > query - slidingWindow)
      if (!allowed) causal[step * total + key] = -1e9
    }
  }
  const causalBias = tf.tensor4d(causal, [1, 1, time, total])
  if (mask === undefined) return causalBias
  const padding = new Float32Array(batch * total)
  for (let index = 0; index < padding.length; index++) if (mask.data[index] === 0) padding[index] = -1e9
  return tf.tidy(() => tf.add(causalBias, tf.tensor4d(padding, [batch, 1, 1, total])))
}
