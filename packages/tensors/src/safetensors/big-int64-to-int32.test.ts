import { InvalidArgumentError } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { bigInt64ArrayToInt32Array } from './big-int64-to-int32.js'

describe('bigInt64ArrayToInt32Array', () => {
  it('narrows values that fit, the limits included', () => {
    const values = BigInt64Array.of(0n, -1n, 2147483647n, -2147483648n, 151643n)
    expect(Array.from(bigInt64ArrayToInt32Array(values))).toEqual([0, -1, 2147483647, -2147483648, 151643])
  })

  it('names the first element that does not fit', () => {
    const call = () => bigInt64ArrayToInt32Array(BigInt64Array.of(1n, 2n, 2147483648n, -(2n ** 40n)), 'input_ids')
    expect(call).toThrow(InvalidArgumentError)
    expect(call).toThrow(/input_ids\[2\].*2147483648n.*does not fit in an Int32Array/)
  })

  it('refuses other arrays', () => {
    expect(() => bigInt64ArrayToInt32Array(Int32Array.of(1) as unknown as BigInt64Array)).toThrow(/must be a BigInt64Array/)
  })
})
