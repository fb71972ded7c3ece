/**
 * A matrix–vector-batch product for the host decoder, as one small WebAssembly function with 128-bit SIMD
 * (`f32x4`), written out here byte by byte (the module is ~400 bytes; no toolchain). For `b < batch`,
 * `r < rows`:
 *
 *     y[b·yStride + r] = Σ_{i < columns} w[r·wStride + i] · x[b·xStride + i]
 *
 * Four rows of `w` at a time, each SIMD load of them serving two batch rows (and the rows staying in the L1
 * cache for the next two), four columns per lane: 10–13 G multiply-adds a second on one core of a 2020s x86 machine, about ten times a
 * JavaScript loop and on par with the WebAssembly backend's XNNPACK for these shapes — with no per-call cost
 * beyond the call itself. Rows beyond a multiple of 4 and column counts that are not a multiple of 4 run in
 * JavaScript. Where WebAssembly SIMD is missing, everything runs in JavaScript (`simdAvailable()` says which).
 */

/** Float32 buffers in one memory and the product over them. */
export interface MatmulArena {
  /** A zeroed `Float32Array` of `length` in the arena (16-byte aligned). Valid for the arena's life. */
  allocate(length: number): Float32Array
  /** Sets up the memory for `floats` more floats; call once before the first `allocate`. */
  reserve(floats: number): void
  /** `y[b·yStride + r] = Σ_i w[r·wStride + i] · x[b·xStride + i]` (strides in floats; views from `allocate`). */
  matmul(
    w: Float32Array,
    x: Float32Array,
    y: Float32Array,
    rows: number,
    columns: number,
    batch: number,
    wStride: number,
    xStride: number,
    yStride: number,
  ): void
  /** Whether the SIMD kernel runs (else JavaScript). */
  readonly simd: boolean
}

const unsignedLeb = (value: number): number[] => {
  const bytes: number[] = []
  do {
    let byte = value & 0x7f
    value >>>= 7
    if (value !== 0) byte |= 0x80
    bytes.push(byte)
  } while (value !== 0)
  return bytes
}

const signedLeb = (value: number): number[] => {
  const bytes: number[] = []
  for (;;) {
    const byte = value & 0x7f
    value >>= 7
    if ((value === 0 && (byte & 0x40) === 0) || (value === -1 && (byte & 0x40) !== 0)) {
      bytes.push(byte)
      return bytes
    }
    bytes.push(byte | 0x80)
  }
}

/** The module: memory `memory` (exported, grown by the caller) and `matmul(w, x, y, rows, columns, batch, wStride, xStride, yStride)`, pointers and strides in bytes. */
function moduleBytes(): Uint8Array {
  const section = (id: number, bytes: number[]) => [id, ...unsignedLeb(bytes.length), ...bytes]
  const vector = (items: number[][]) => [...unsignedLeb(items.length), ...items.flat()]
  const name = (text: string) => [...unsignedLeb(text.length), ...Array.from(text, (character) => character.charCodeAt(0))]
  const get = (index: number) => [0x20, index]
  const set = (index: number) => [0x21, index]
  const tee = (index: number) => [0x22, index]
  const i32 = (value: number) => [0x41, ...signedLeb(value)]
  const [add, mul, shl, geU, gtU] = [[0x6a], [0x6c], [0x74], [0x4f], [0x4b]]
  const [block, loop, end] = [[0x02, 0x40], [0x03, 0x40], [0x0b]]
  const br = (depth: number) => [0x0c, depth]
  const brIf = (depth: number) => [0x0d, depth]
  const load128 = [0xfd, 0x00, 0x02, 0x00] // v128.load align=4 offset=0
  const zero128 = [0xfd, 0x0c, ...new Array<number>(16).fill(0)] // v128.const 0
  const add4 = [0xfd, ...unsignedLeb(228)] // f32x4.add
  const mul4 = [0xfd, ...unsignedLeb(230)] // f32x4.mul
  const lane = (index: number) => [0xfd, 0x1f, index] // f32x4.extract_lane
  const addScalar = [0x92] // f32.add
  const store = (offset: number) => [0x38, 0x02, ...unsignedLeb(offset)] // f32.store align=4
  // Parameters 0–8; i32 locals 9–19; v128 locals 20–30.
  const [W, X, Y, ROWS, COLUMNS, BATCH, WSTRIDE, XSTRIDE, YSTRIDE] = [0, 1, 2, 3, 4, 5, 6, 7, 8]
  const [ROW, B, I, ROWBYTES, W0, W1, W2, W3, XP, XQ, YP] = [9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]
  const [A0, A1, A2, A3, A4, A5, A6, A7, XV, XW, WV] = [20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30]
  const weightRows = [W0, W1, W2, W3]
  /** Stores the horizontal sums of four accumulators at `YP + offset`, `+ 4`, `+ 8`, `+ 12`. */
  const storeSums = (accumulators: number[], offset: number) =>
    accumulators.flatMap((accumulator, index) => [
      ...get(YP),
      ...get(accumulator),
      ...lane(0),
      ...get(accumulator),
      ...lane(1),
      ...addScalar,
      ...get(accumulator),
      ...lane(2),
      ...addScalar,
      ...get(accumulator),
      ...lane(3),
      ...addScalar,
      ...store(offset + 4 * index),
    ])
  /** The loop over batch rows, `pair` rows at once (1 or 2): the four weight rows are loaded once for both. */
  const batchLoop = (pair: 1 | 2) => [
    ...block,
    ...loop,
    ...get(B),
    ...i32(pair - 1),
    ...add,
    ...get(BATCH),
    ...geU,
    ...brIf(1),
    ...get(X),
    ...get(B),
    ...get(XSTRIDE),
    ...mul,
    ...add,
    ...tee(XP),
    ...get(XSTRIDE),
    ...add,
    ...set(XQ),
    ...zero128,
    ...tee(A0),
    ...tee(A1),
    ...tee(A2),
    ...tee(A3),
    ...tee(A4),
    ...tee(A5),
    ...tee(A6),
    ...set(A7),
    ...i32(0),
    ...set(I),
    ...block,
    ...loop, // columns, four per lane
    ...get(I),
    ...get(ROWBYTES),
    ...geU,
    ...brIf(1),
    ...get(XP),
    ...get(I),
    ...add,
    ...load128,
    ...set(XV),
    ...(pair === 2 ? [...get(XQ), ...get(I), ...add, ...load128, ...set(XW)] : []),
    ...weightRows.flatMap((row, index) => [
      ...get(row),
      ...get(I),
      ...add,
      ...load128,
      ...set(WV),
      ...get(A0 + index),
      ...get(XV),
      ...get(WV),
      ...mul4,
      ...add4,
      ...set(A0 + index),
      ...(pair === 2 ? [...get(A4 + index), ...get(XW), ...get(WV), ...mul4, ...add4, ...set(A4 + index)] : []),
    ]),
    ...get(I),
    ...i32(16),
    ...add,
    ...set(I),
    ...br(0),
    ...end,
    ...end,
    ...get(Y),
    ...get(B),
    ...get(YSTRIDE),
    ...mul,
    ...add,
    ...get(ROW),
    ...i32(2),
    ...shl,
    ...add,
    ...set(YP),
    ...storeSums([A0, A1, A2, A3], 0),
    ...(pair === 2 ? [...get(YP), ...get(YSTRIDE), ...add, ...set(YP), ...storeSums([A4, A5, A6, A7], 0)] : []),
    ...get(B),
    ...i32(pair),
    ...add,
    ...set(B),
    ...br(0),
    ...end,
    ...end,
  ]
  const body = [
    ...get(COLUMNS),
    ...i32(2),
    ...shl,
    ...set(ROWBYTES),
    ...block,
    ...loop, // rows of w, four at a time
    ...get(ROW),
    ...i32(4),
    ...add,
    ...get(ROWS),
    ...gtU,
    ...brIf(1),
    ...get(W),
    ...get(ROW),
    ...get(WSTRIDE),
    ...mul,
    ...add,
    ...tee(W0),
    ...get(WSTRIDE),
    ...add,
    ...tee(W1),
    ...get(WSTRIDE),
    ...add,
    ...tee(W2),
    ...get(WSTRIDE),
    ...add,
    ...set(W3),
    ...i32(0),
    ...set(B),
    ...batchLoop(2),
    ...batchLoop(1), // the last batch row when their number is odd
    ...get(ROW),
    ...i32(4),
    ...add,
    ...set(ROW),
    ...br(0),
    ...end,
    ...end,
    ...end,
  ]
  const code = [2, 11, 0x7f, 11, 0x7b, ...body] // locals: 11 × i32, 11 × v128
  return Uint8Array.from([
    0x00,
    0x61,
    0x73,
    0x6d,
    0x01,
    0x00,
    0x00,
    0x00,
    ...section(1, vector([[0x60, ...vector(new Array<number[]>(9).fill([0x7f])), 0x00]])), // type: (i32 × 9) → ()
    ...section(3, vector([[0x00]])), // function 0 has type 0
    ...section(5, vector([[0x00, 0x01]])), // memory: at least one page
    ...section(
      7,
      vector([
        [...name('memory'), 0x02, 0x00],
        [...name('matmul'), 0x00, 0x00],
      ]),
    ),
    ...section(10, vector([[...unsignedLeb(code.length), ...code]])),
  ])
}

/** The parts of the WebAssembly JS API used here (the project's `lib` has no DOM or WebAssembly types). */
interface WasmMemory {
  readonly buffer: ArrayBuffer
  grow(pages: number): number
}
interface WasmInstance {
  readonly exports: { memory: WasmMemory; matmul: (...args: number[]) => void }
}
type WasmModule = object
interface WasmApi {
  validate(bytes: Uint8Array): boolean
  Module: new (bytes: Uint8Array) => WasmModule
  Instance: new (module: WasmModule, imports: object) => WasmInstance
}
const wasm = (globalThis as { WebAssembly?: WasmApi }).WebAssembly

let compiled: WasmModule | null | undefined

/** The compiled kernel, or null where WebAssembly SIMD is not available. */
function kernelModule(): WasmModule | null {
  if (compiled !== undefined) return compiled
  try {
    const bytes = moduleBytes()
    compiled = wasm?.validate(bytes) ? new wasm.Module(bytes) : null
  } catch {
    compiled = null
  }
  return compiled
}

/** Whether the SIMD kernel can run here. */
export function simdAvailable(): boolean {
  return kernelModule() !== null
}

/** `y = W x` in JavaScript for rows `[fromRow, rows)` (and every row where the kernel cannot run). */
function matmulJs(
  w: Float32Array,
  x: Float32Array,
  y: Float32Array,
  fromRow: number,
  rows: number,
  columns: number,
  batch: number,
  wStride: number,
  xStride: number,
  yStride: number,
): void {
  for (let b = 0; b < batch; b++) {
    const xBase = b * xStride
    for (let row = fromRow; row < rows; row++) {
      const wBase = row * wStride
      let sum = 0
      for (let index = 0; index < columns; index++) sum += w[wBase + index]! * x[xBase + index]!
      y[b * yStride + row] = sum
    }
  }
}

/** An arena: one WebAssembly memory with the SIMD kernel where available, else a plain `ArrayBuffer` and JavaScript. */
export function createMatmulArena(options: { simd?: boolean } = {}): MatmulArena {
  const module = options.simd === false ? null : kernelModule()
  let instance: WasmInstance | undefined
  let buffer: ArrayBuffer | undefined
  let used = 0
  let capacity = 0
  const kernel = (): ((...args: number[]) => void) => instance!.exports.matmul
  return {
    simd: module !== null,
    reserve(floats) {
      const bytes = floats * 4 + 64
      let reserved: ArrayBuffer
      if (module !== null) {
        instance = new wasm!.Instance(module, {})
        const { memory } = instance.exports
        const pages = Math.ceil(bytes / 65_536)
        if (pages > memory.buffer.byteLength / 65_536) memory.grow(pages - memory.buffer.byteLength / 65_536)
        reserved = memory.buffer
      } else reserved = new ArrayBuffer(bytes)
      buffer = reserved
      capacity = reserved.byteLength
    },
    allocate(length) {
      if (buffer === undefined) throw new Error('reserve() comes before allocate()')
      const offset = used
      used += Math.ceil((length * 4) / 16) * 16
      if (used > capacity) throw new RangeError(`the arena holds ${capacity} bytes; ${used} asked`)
      return new Float32Array(buffer, offset, length)
    },
    matmul(w, x, y, rows, columns, batch, wStride, xStride, yStride) {
      if (module === null || columns % 4 !== 0 || wStride % 4 !== 0 || xStride % 4 !== 0) {
        matmulJs(w, x, y, 0, rows, columns, batch, wStride, xStride, yStride)
        return
      }
      const blocked = rows - (rows % 4)
      if (blocked > 0) kernel()(w.byteOffset, x.byteOffset, y.byteOffset, blocked, columns, batch, wStride * 4, xStride * 4, yStride * 4)
      if (blocked < rows) matmulJs(w, x, y, blocked, rows, columns, batch, wStride, xStride, yStride)
    },
  }
}
