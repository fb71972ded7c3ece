import { describe, expect, it } from 'vitest'
import { dtypeAlignmentRank, dtypeBits, dtypeBytes, isSafetensorsDtype, isSupportedDtype, supportedDtypes } from './safetensors-dtype.js'

describe('safetensors dtypes', () => {
  it('ranks the supported dtypes as the reference writer orders them: I64, F32, I32, BF16, F16', () => {
    const order = [...supportedDtypes].sort((left, right) => dtypeAlignmentRank(right) - dtypeAlignmentRank(left))
    expect(order).toEqual(['I64', 'F32', 'I32', 'BF16', 'F16'])
  })

  it('knows element sizes, sub-byte ones included', () => {
    expect(supportedDtypes.map(dtypeBytes)).toEqual([4, 2, 2, 4, 8])
    expect(dtypeBits('F4')).toBe(4)
    expect(dtypeBits('F6_E2M3')).toBe(6)
    expect(dtypeBits('F8_E4M3')).toBe(8)
  })

  it('tells known and supported dtypes apart', () => {
    expect(isSafetensorsDtype('F64')).toBe(true)
    expect(isSupportedDtype('F64')).toBe(false)
    expect(isSafetensorsDtype('f32')).toBe(false)
    expect(isSafetensorsDtype('toString')).toBe(false)
    expect(isSupportedDtype('BF16')).toBe(true)
  })
})
