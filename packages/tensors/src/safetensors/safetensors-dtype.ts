/**
 * The element types of the safetensors format.
 *
 * `safetensorsDtypes` lists every dtype Hugging Face's reference implementation knows, in the order of
 * its `Dtype` enum, which is increasing alignment: the writer puts tensors in *decreasing* position of
 * this list (then by name), so files come out byte-identical to Python's `safetensors.numpy.save`.
 * Ludic reads and writes five of them (`supportedDtypes`); the others are recognised in headers (so their
 * byte ranges are checked) but reading their data is refused with a clear error.
 */
export const safetensorsDtypes = [
  'BOOL',
  'F4',
  'F6_E2M3',
  'F6_E3M2',
  'U8',
  'I8',
  'F8_E5M2',
  'F8_E4M3',
  'F8_E8M0',
  'F8_E4M3FNUZ',
  'F8_E5M2FNUZ',
  'I16',
  'U16',
  'F16',
  'BF16',
  'I32',
  'U32',
  'F32',
  'C64',
  'F64',
  'I64',
  'U64',
] as const
export type SafetensorsDtype = (typeof safetensorsDtypes)[number]

/** The dtypes Ludic converts to and from typed arrays. */
export const supportedDtypes = ['F32', 'F16', 'BF16', 'I32', 'I64'] as const
export type SupportedDtype = (typeof supportedDtypes)[number]

/** Dtypes whose elements are read into a `Float32Array`. */
export type FloatDtype = 'F32' | 'F16' | 'BF16'

const bitsPerElement: Readonly<Record<SafetensorsDtype, number>> = {
  BOOL: 8,
  F4: 4,
  F6_E2M3: 6,
  F6_E3M2: 6,
  U8: 8,
  I8: 8,
  F8_E5M2: 8,
  F8_E4M3: 8,
  F8_E8M0: 8,
  F8_E4M3FNUZ: 8,
  F8_E5M2FNUZ: 8,
  I16: 16,
  U16: 16,
  F16: 16,
  BF16: 16,
  I32: 32,
  U32: 32,
  F32: 32,
  C64: 64,
  F64: 64,
  I64: 64,
  U64: 64,
}

const dtypeRanks: ReadonlyMap<string, number> = new Map(safetensorsDtypes.map((dtype, rank) => [dtype, rank]))

export function isSafetensorsDtype(value: unknown): value is SafetensorsDtype {
  return typeof value === 'string' && dtypeRanks.has(value)
}

export function isSupportedDtype(value: unknown): value is SupportedDtype {
  return typeof value === 'string' && (supportedDtypes as readonly string[]).includes(value)
}

/** Bits one element takes in the file (4 for `F4`, 16 for `F16`, 64 for `I64`). */
export function dtypeBits(dtype: SafetensorsDtype): number {
  return bitsPerElement[dtype]
}

/** Bytes one element of a supported dtype takes in the file. */
export function dtypeBytes(dtype: SupportedDtype): 2 | 4 | 8 {
  return (bitsPerElement[dtype] / 8) as 2 | 4 | 8
}

/** Position in Hugging Face's `Dtype` enum (increasing alignment); the writer sorts by it, descending. */
export function dtypeAlignmentRank(dtype: SafetensorsDtype): number {
  return dtypeRanks.get(dtype) ?? -1
}
