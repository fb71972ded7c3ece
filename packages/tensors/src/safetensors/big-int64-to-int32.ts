import { InvalidArgumentError } from '@ludic/core'

const int32Minimum = -(2n ** 31n)
const int32Maximum = 2n ** 31n - 1n

/**
 * Narrows 64-bit integers (an `I64` tensor: token ids, positions) to an `Int32Array`. Throws
 * `InvalidArgumentError` naming the first element that does not fit in 32 bits.
 *
 * `argument` names the values in that error (default `'values'`; pass the tensor name).
 */
export function bigInt64ArrayToInt32Array(values: BigInt64Array, argument = 'values'): Int32Array {
  if (Object.prototype.toString.call(values) !== '[object BigInt64Array]') {
    throw new InvalidArgumentError({ argument, value: values, message: 'must be a BigInt64Array' })
  }
  const result = new Int32Array(values.length)
  for (let index = 0; index < values.length; index++) {
    const value = values[index]!
    if (value < int32Minimum || value > int32Maximum) {
      throw new InvalidArgumentError({
        argument: `${argument}[${index}]`,
        value,
        message: `does not fit in an Int32Array (range ${int32Minimum} to ${int32Maximum})`,
      })
    }
    result[index] = Number(value)
  }
  return result
}
