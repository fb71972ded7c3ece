import { InvalidArgumentError } from '@ludic/core'

/**
 * A tiny WebAssembly binary writer: just what Ludic's hand-written SIMD kernels need — this folder's
 * (`wasm-simd-kernels.ts`) and the host decoder's matmul kernel in `@ludic/model`, which imports it as
 * `wasmBytecode` from this package. A module imports at most one memory (`env.memory`, plain or shared for
 * threads) and defines functions over i32/f32/v128 locals with structured control flow, loads and stores, and a
 * handful of integer, float and SIMD instructions (relaxed SIMD's fused multiply-add among them). Reference:
 * the WebAssembly core specification, binary format (https://webassembly.github.io/spec/core/binary/), the
 * fixed-width SIMD proposal for the `0xfd`-prefixed opcodes and the relaxed SIMD proposal for
 * `f32x4.relaxed_madd`.
 */

/** Nested arrays of bytes; flattened once when the module is encoded. */
export type Code = number | readonly Code[]

export const valueType = { i32: 0x7f, f32: 0x7d, v128: 0x7b } as const
export type ValueType = (typeof valueType)[keyof typeof valueType]

export function unsignedLeb128(value: number): number[] {
  const bytes: number[] = []
  let rest = value >>> 0
  do {
    let byte = rest & 0x7f
    rest >>>= 7
    if (rest !== 0) byte |= 0x80
    bytes.push(byte)
  } while (rest !== 0)
  return bytes
}

export function signedLeb128(value: number): number[] {
  const bytes: number[] = []
  let rest = value | 0
  for (;;) {
    const byte = rest & 0x7f
    rest >>= 7
    const signBitClear = (byte & 0x40) === 0
    if ((rest === 0 && signBitClear) || (rest === -1 && !signBitClear)) {
      bytes.push(byte)
      return bytes
    }
    bytes.push(byte | 0x80)
  }
}

export function flatten(code: Code): number[] {
  const bytes: number[] = []
  const visit = (part: Code): void => {
    if (typeof part === 'number') bytes.push(part)
    else for (const inner of part) visit(inner)
  }
  visit(code)
  return bytes
}

const simd = (opcode: number): number[] => [0xfd, ...unsignedLeb128(opcode)]
/** A memory argument: alignment hint (log2 of 4 bytes: every access here is float-aligned) and offset. */
const memoryArgument = (offset: number): number[] => [2, ...unsignedLeb128(offset)]
const emptyBlockType = 0x40

/** Instructions, named after the specification's text format. */
export const instruction = {
  localGet: (index: number): Code => [0x20, unsignedLeb128(index)],
  localSet: (index: number): Code => [0x21, unsignedLeb128(index)],
  localTee: (index: number): Code => [0x22, unsignedLeb128(index)],
  call: (functionIndex: number): Code => [0x10, unsignedLeb128(functionIndex)],
  i32Const: (value: number): Code => [0x41, signedLeb128(value)],
  i32Add: 0x6a,
  i32Sub: 0x6b,
  i32Mul: 0x6c,
  i32Shl: 0x74,
  i32And: 0x71,
  i32Eqz: 0x45,
  i32LessThanUnsigned: 0x49,
  i32GreaterThanUnsigned: 0x4b,
  i32GreaterOrEqualUnsigned: 0x4f,
  f32Load: (offset = 0): Code => [0x2a, memoryArgument(offset)],
  f32Store: (offset = 0): Code => [0x38, memoryArgument(offset)],
  f32Const0: [0x43, 0, 0, 0, 0] as Code,
  f32Add: 0x92,
  f32Mul: 0x94,
  v128Load: (offset = 0): Code => [simd(0x00), memoryArgument(offset)],
  v128Load32Splat: (offset = 0): Code => [simd(0x09), memoryArgument(offset)],
  v128Store: (offset = 0): Code => [simd(0x0b), memoryArgument(offset)],
  v128Const0: [simd(0x0c), new Array<number>(16).fill(0)] as Code,
  /** `i8x16.shuffle` given as four float lanes (0–3 from the first operand, 4–7 from the second). */
  f32x4Shuffle: (lanes: readonly [number, number, number, number]): Code => [
    simd(0x0d),
    lanes.flatMap((lane) => [4 * lane, 4 * lane + 1, 4 * lane + 2, 4 * lane + 3]),
  ],
  /** `f32x4.extract_lane`: lane `lane` (0–3) of the vector on the stack, as an f32. */
  f32x4ExtractLane: (lane: number): Code => {
    if (!(Number.isInteger(lane) && lane >= 0 && lane <= 3)) throw new InvalidArgumentError({ argument: 'lane', value: lane, message: 'must be 0, 1, 2 or 3' })
    return [simd(0x1f), lane]
  },
  f32x4Add: simd(0xe4) as Code,
  f32x4Mul: simd(0xe6) as Code,
  /** `f32x4.relaxed_madd` (relaxed SIMD): `a · b + c` for operands pushed as a, b, c — fused (one rounding) where the CPU has it. */
  f32x4RelaxedMadd: simd(0x105) as Code,
  block: (...body: Code[]): Code => [0x02, emptyBlockType, body, 0x0b],
  loop: (...body: Code[]): Code => [0x03, emptyBlockType, body, 0x0b],
  ifElse: (thenBody: Code, elseBody: Code): Code => [0x04, emptyBlockType, thenBody, 0x05, elseBody, 0x0b],
  branch: (depth: number): Code => [0x0c, unsignedLeb128(depth)],
  branchIf: (depth: number): Code => [0x0d, unsignedLeb128(depth)],
} as const

/**
 * `while (!exitWhen) { body }`: `exitWhen` leaves an i32 on the stack that is non-zero when the loop
 * must stop. `body` must not branch out of itself.
 */
export function whileLoop(exitWhen: Code, body: Code): Code {
  return instruction.block(instruction.loop(exitWhen, instruction.branchIf(1), body, instruction.branch(0)))
}

export interface FunctionDefinition {
  /** Exported under this name when given. */
  exportName?: string
  parameters: readonly ValueType[]
  /** What the function returns, left on the stack by `body` (default: nothing). */
  results?: readonly ValueType[]
  /** Declared locals after the parameters, in index order. */
  locals: readonly ValueType[]
  body: Code
}

const section = (id: number, content: number[]): number[] => [id, ...unsignedLeb128(content.length), ...content]
const vector = (items: number[][]): number[] => [...unsignedLeb128(items.length), ...items.flat()]
const name = (text: string): number[] => {
  const bytes = [...new TextEncoder().encode(text)]
  return [...unsignedLeb128(bytes.length), ...bytes]
}

/** Groups consecutive equal local types, as the code section wants them. */
function encodeLocals(locals: readonly ValueType[]): number[] {
  const groups: number[][] = []
  let index = 0
  while (index < locals.length) {
    const type = locals[index]!
    let count = 0
    while (index < locals.length && locals[index] === type) {
      count++
      index++
    }
    groups.push([...unsignedLeb128(count), type])
  }
  return vector(groups)
}

/** The memory a module imports as `env.memory`. */
export interface ImportedMemory {
  /**
   * Whether it is a shared memory (worker threads instantiating the module on the same memory): declared
   * then with a maximum, which shared memories must have, of 65 536 pages (the whole 32-bit space), so that
   * any shared memory fits. It must match the memory given at instantiation.
   */
  shared: boolean
  /** Pages (64 KiB) the memory given must have at least (default 0). */
  minimumPages?: number
}

/**
 * Encodes a module importing `memory` (none when omitted) and defining `functions` (function `i` is called
 * with `call(i)`). Sections with nothing in them (no import, no export) are left out.
 */
export function encodeModule(options: { memory?: ImportedMemory; functions: readonly FunctionDefinition[] }): Uint8Array {
  // One function type per distinct signature, in order of first use.
  const types: number[][] = []
  const typeIndices = options.functions.map((definition) => {
    const type = [0x60, ...vector(definition.parameters.map((value) => [value])), ...vector((definition.results ?? []).map((value) => [value]))]
    const known = types.findIndex((other) => other.length === type.length && other.every((byte, index) => byte === type[index]))
    return known >= 0 ? known : types.push(type) - 1
  })
  const memory = options.memory
  // Limits: 0x00 = minimum only; 0x03 = shared with a maximum.
  const memoryLimits = (imported: ImportedMemory) => {
    const pages = imported.minimumPages ?? 0
    if (!(Number.isInteger(pages) && pages >= 0 && pages <= 65536)) {
      throw new InvalidArgumentError({
        argument: 'memory.minimumPages',
        value: pages,
        message: 'must be an integer from 0 to 65536 (64 KiB pages of a 32-bit memory)',
      })
    }
    const minimum = unsignedLeb128(pages)
    return imported.shared ? [0x03, ...minimum, ...unsignedLeb128(65536)] : [0x00, ...minimum]
  }
  const imports = memory === undefined ? [] : [[...name('env'), ...name('memory'), 0x02, ...memoryLimits(memory)]]
  const exports = options.functions.flatMap((definition, index) =>
    definition.exportName === undefined ? [] : [[...name(definition.exportName), 0x00, ...unsignedLeb128(index)]],
  )
  const bodies = options.functions.map((definition) => {
    const content = [...encodeLocals(definition.locals), ...flatten(definition.body), 0x0b]
    return [...unsignedLeb128(content.length), ...content]
  })
  const sectionOf = (id: number, items: number[][]): number[] => (items.length === 0 ? [] : section(id, vector(items)))
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    ...sectionOf(1, types),
    ...sectionOf(2, imports),
    ...sectionOf(
      3,
      typeIndices.map((index) => unsignedLeb128(index)),
    ),
    ...sectionOf(7, exports),
    ...sectionOf(10, bodies),
  ])
}
