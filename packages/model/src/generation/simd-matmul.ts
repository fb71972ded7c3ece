import { wasmBytecode } from '@ludic/tensors'
import { platform } from '../platform.js'
import { type AttentionKernel, attendParts, attendRows, attendSlots } from './attention-rows.js'
import { closedChunk, controlBytes, controlSlots, maximumChunks, type MatmulHelpers } from './matmul-control.js'

const { encodeModule, instruction: op, valueType, whileLoop } = wasmBytecode
type Code = wasmBytecode.Code
type ValueType = wasmBytecode.ValueType

/**
 * A matrix–vector-batch product for the host decoder, as a small WebAssembly module with 128-bit SIMD
 * (`f32x4`), written with `@ludic/tensors`' WebAssembly writer (`wasmBytecode`; the module is ~1.9 KB, two
 * functions; no toolchain). For `b < batch`, `r < rows`:
 *
 *     y[b·yStride + r] = Σ_{i < columns} w[r·wStride + i] · x[b·xStride + i]
 *
 * Four rows of `w` at a time, each SIMD load of them serving two batch rows (and the rows staying in the L1
 * cache for the next two), four columns per lane, with relaxed SIMD's fused `f32x4.relaxed_madd` where the
 * runtime has it (`relaxedSimdAvailable`). Weights stored by `allocateWeights` in 4 × 4 tiles (`packWeights`) are
 * read as one sequential stream per four rows (`weightProduct`); row-major ones (attention's keys and values) as
 * four. Tiles and the fused multiply-add each shorten a step's weight products, which wait on memory otherwise
 * (the package README's "The kernel's layout and fused multiply-add" has the figures); the kernel runs many times
 * faster than a JavaScript loop, with no per-call cost beyond the call itself. Rows beyond a multiple of 4 and column counts
 * that are not a multiple of 4 run in JavaScript. Where WebAssembly SIMD is missing, everything runs in
 * JavaScript (`simdAvailable()` says which).
 */

/** Float32 buffers in one memory and the product over them. */
export interface MatmulArena {
  /**
   * A zeroed `Float32Array` of `length` in the arena (16-byte aligned). Valid until a `rewind` before it. `zeroed: false`
   * leaves what a rewound earlier buffer held there (a large buffer its user clears in parts as it takes them).
   */
  allocate(length: number, zeroed?: boolean): Float32Array
  /** A zeroed `Int32Array` of `length` in the arena, as `allocate`. */
  allocateInts(length: number): Int32Array
  /** Bytes allocated so far (a mark for `rewind`). */
  readonly used: number
  /** Bytes the arena holds (0 before `reserve`). */
  readonly capacity: number
  /** Frees everything allocated after `mark` (a value `used` had): the room is allocated again, zeroed. */
  rewind(mark: number): void
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
  /**
   * Copies a weight matrix (`source`, `[rows, columns]` row-major) into the arena in the layout `weightProduct`
   * reads: `packWeights`' tiles where the kernel runs and `columns` is a multiple of 4, else row-major.
   */
  allocateWeights(source: Float32Array, rows: number, columns: number): Float32Array
  /** `y[b·yStride + r] = Σ_i W[r, i] · x[b·xStride + i]` over weights `w` from `allocateWeights` (same sums as `matmul`, bit for bit). */
  weightProduct(w: Float32Array, x: Float32Array, y: Float32Array, rows: number, columns: number, batch: number, xStride: number, yStride: number): void
  /** Row `row` of weights from `allocateWeights` (`columns` wide), written to `out` from `offset`. */
  copyWeightRow(w: Float32Array, row: number, columns: number, out: Float32Array, offset: number): void
  /**
   * Attention work of the host decoder (`attention-rows.ts`; `block` its parameter block, from `allocateInts`): a decode
   * step's first `count` rows (`'rows'`, `attendRows`) or a prefill's first `count` parts (`'parts'`, `attendParts`).
   * With helper threads, at least `sharedRowMinimum` rows (2 parts) and a head size that is a multiple of 4, they are
   * split between the threads (the same results, bit for bit).
   */
  attend(kind: 'rows' | 'parts', block: Int32Array, count: number): void
  /** Whether the SIMD kernel runs (else JavaScript). */
  readonly simd: boolean
  /** Whether it multiplies and adds in one fused instruction (relaxed SIMD, `relaxedSimdAvailable`). */
  readonly fused: boolean
  /** Threads the products run on: 1, or 1 + the worker threads lent to this arena. */
  readonly threads: number
  /** Chunks of shared work (products and attention) that worker threads ran so far (0 on one thread). */
  readonly helperChunks: number
  /** Of them, chunks of attention (`attend`). */
  readonly helperAttentionChunks: number
  /** Hands the arena's worker threads back to the pool; the arena keeps working, on the calling thread. */
  dispose(): void
}

/**
 * The module: `matmul(w, x, y, rows, columns, batch, wStride, xStride, yStride)` (pointers and strides in
 * bytes) over the imported memory `env.memory` (at least one page) — a shared one when `shared`, so that worker
 * threads run the same function on the same buffers — and `matmulPacked`, the same product over weights in
 * `packWeights`' layout (`wStride` = the columns' bytes), whose four rows are one sequential stream. `fused`:
 * each multiply-add is one `f32x4.relaxed_madd` (a fused multiply-add where the CPU has one, one rounding
 * instead of two). Written with `@ludic/tensors`' WebAssembly writer.
 */
export function matmulModuleBytes(shared: boolean, fused: boolean): Uint8Array {
  const { localGet: get, localSet: set, localTee: tee, i32Const: i32 } = op
  // Parameters 0–8; i32 locals 9–19; v128 locals 20–30.
  const [W, X, Y, ROWS, COLUMNS, BATCH, WSTRIDE, XSTRIDE, YSTRIDE] = [0, 1, 2, 3, 4, 5, 6, 7, 8]
  const [ROW, B, I, ROWBYTES, W0, W1, W2, W3, XP, XQ, YP] = [9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]
  const [A0, A1, A2, A3, A4, A5, A6, A7, XV, XW, WV] = [20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30]
  /** Whether `counter + step > limit` (fewer than `step` left): a loop's exit condition. */
  const past = (counter: number, step: number, limit: number): Code => [get(counter), i32(step), op.i32Add, get(limit), op.i32GreaterThanUnsigned]
  /** `base + index · stride` on the stack. */
  const address = (base: number, index: number, stride: number): Code => [get(base), get(index), get(stride), op.i32Mul, op.i32Add]
  /** `accumulator += x · WV`: one fused `f32x4.relaxed_madd` (x, WV, accumulator) where `fused`, else `f32x4.mul` then `f32x4.add`. */
  const multiplyAdd = (accumulator: number, x: number): Code =>
    fused
      ? [get(x), get(WV), get(accumulator), op.f32x4RelaxedMadd, set(accumulator)]
      : [get(accumulator), get(x), get(WV), op.f32x4Mul, op.f32x4Add, set(accumulator)]
  /** Stores the horizontal sums of four accumulators at `YP`, `YP + 4`, `+ 8`, `+ 12`. */
  const storeSums = (accumulators: number[]): Code =>
    accumulators.map((accumulator, index) => [
      get(YP),
      [0, 1, 2, 3].map((lane) => [get(accumulator), op.f32x4ExtractLane(lane), lane > 0 ? op.f32Add : []]),
      op.f32Store(4 * index),
    ])
  /** One function's body: rows of `w` read as four streams, or (`packed`) as one stream of 4 × 4 tiles. */
  const bodyFor = (packed: boolean): Code => {
    /** The loop over batch rows, `pair` rows at once (1 or 2): the four weight rows are loaded once for both. */
    const batchLoop = (pair: 1 | 2): Code =>
      whileLoop(past(B, pair, BATCH), [
        address(X, B, XSTRIDE),
        tee(XP),
        get(XSTRIDE),
        op.i32Add,
        set(XQ),
        op.v128Const0,
        [A0, A1, A2, A3, A4, A5, A6].map((accumulator) => tee(accumulator)),
        set(A7),
        i32(0),
        set(I),
        packed ? [get(W0), set(W1)] : [], // W1: the packed block's next four columns
        // columns, four per lane
        whileLoop(
          [get(I), get(ROWBYTES), op.i32GreaterOrEqualUnsigned],
          [
            [get(XP), get(I), op.i32Add, op.v128Load(), set(XV)],
            pair === 2 ? [get(XQ), get(I), op.i32Add, op.v128Load(), set(XW)] : [],
            [W0, W1, W2, W3].map((row, index) => [
              packed ? [get(W1), op.v128Load(16 * index)] : [get(row), get(I), op.i32Add, op.v128Load()],
              set(WV),
              multiplyAdd(A0 + index, XV),
              pair === 2 ? multiplyAdd(A4 + index, XW) : [],
            ]),
            [get(I), i32(16), op.i32Add, set(I)],
            packed ? [get(W1), i32(64), op.i32Add, set(W1)] : [],
          ],
        ),
        [address(Y, B, YSTRIDE), get(ROW), i32(2), op.i32Shl, op.i32Add, set(YP)],
        storeSums([A0, A1, A2, A3]),
        pair === 2 ? [get(YP), get(YSTRIDE), op.i32Add, set(YP), storeSums([A4, A5, A6, A7])] : [],
        [get(B), i32(pair), op.i32Add, set(B)],
      ])
    return [
      [get(COLUMNS), i32(2), op.i32Shl, set(ROWBYTES)],
      // rows of w, four at a time
      whileLoop(past(ROW, 4, ROWS), [
        [address(W, ROW, WSTRIDE), tee(W0), get(WSTRIDE), op.i32Add, tee(W1), get(WSTRIDE), op.i32Add, tee(W2), get(WSTRIDE), op.i32Add, set(W3)],
        [i32(0), set(B)],
        batchLoop(2),
        batchLoop(1), // the last batch row when their number is odd
        [get(ROW), i32(4), op.i32Add, set(ROW)],
      ]),
    ]
  }
  const kernel = (exportName: string, packed: boolean): wasmBytecode.FunctionDefinition => ({
    exportName,
    parameters: new Array<ValueType>(9).fill(valueType.i32),
    locals: [...new Array<ValueType>(11).fill(valueType.i32), ...new Array<ValueType>(11).fill(valueType.v128)],
    body: bodyFor(packed),
  })
  return encodeModule({ memory: { shared, minimumPages: 1 }, functions: [kernel('matmul', false), kernel('matmulPacked', true)] })
}

/** The parts of the WebAssembly JS API used here (the project's `lib` has no DOM or WebAssembly types). */
interface WasmMemory {
  readonly buffer: ArrayBuffer
}
interface WasmInstance {
  readonly exports: { matmul: (...args: number[]) => void; matmulPacked: (...args: number[]) => void }
}
type WasmModule = object
interface WasmApi {
  validate(bytes: Uint8Array): boolean
  Module: new (bytes: Uint8Array) => WasmModule
  Instance: new (module: WasmModule, imports: object) => WasmInstance
  Memory: new (descriptor: { initial: number; maximum?: number; shared?: boolean }) => WasmMemory
}
const wasm = (globalThis as { WebAssembly?: WasmApi }).WebAssembly

const compiled = new Map<string, WasmModule | null>()

/** `f32x4.relaxed_madd` alone in a function: whether the runtime accepts relaxed SIMD. */
export const relaxedProbe = encodeModule({
  functions: [
    {
      parameters: [valueType.v128, valueType.v128, valueType.v128],
      results: [valueType.v128],
      locals: [],
      body: [op.localGet(0), op.localGet(1), op.localGet(2), op.f32x4RelaxedMadd],
    },
  ],
})
let relaxed: boolean | undefined

/**
 * Whether WebAssembly relaxed SIMD (a standard feature since 2023) is available: on by default in Node ≥ 22;
 * in Node 20 it sits behind V8's `--experimental-wasm-relaxed-simd`, which is turned on here (once, with
 * `v8.setFlagsFromString`) when the runtime does not accept it yet — the flag only lets modules use the
 * feature, and nothing else in the process changes. `LUDIC_RELAXED_SIMD=0` keeps it off (the kernels then
 * multiply and add in two roundings, as before).
 */
export function relaxedSimdAvailable(): boolean {
  if (relaxed !== undefined) return relaxed
  relaxed = false
  if (wasm === undefined || platform().environmentVariable?.('LUDIC_RELAXED_SIMD') === '0') return relaxed
  try {
    if (!wasm.validate(relaxedProbe)) platform().enableRelaxedSimd?.()
    relaxed = wasm.validate(relaxedProbe)
  } catch {
    relaxed = false
  }
  return relaxed
}

/**
 * The compiled kernel over a plain or a shared memory — the fused multiply-add one where relaxed SIMD is
 * available and `fused` is not false — or null where WebAssembly SIMD (or shared memory) is not available.
 */
function kernelModule(shared = false, fused = true): WasmModule | null {
  const fuse = fused && relaxedSimdAvailable()
  const key = `${shared}:${fuse}`
  const known = compiled.get(key)
  if (known !== undefined) return known
  let module: WasmModule | null = null
  try {
    const bytes = matmulModuleBytes(shared, fuse)
    if (wasm?.validate(bytes)) {
      module = new wasm.Module(bytes)
      if (shared) new wasm.Instance(module, { env: { memory: new wasm.Memory({ initial: 1, maximum: 1, shared: true }) } })
    }
  } catch {
    module = null
  }
  compiled.set(key, module)
  return module
}

/** Whether the SIMD kernel can run here. */
export function simdAvailable(): boolean {
  return kernelModule() !== null
}

/** Whether the kernel can run on a shared memory here, so that worker threads can share a product (`threads` of `createMatmulArena`). */
export function sharedMemoryAvailable(): boolean {
  return kernelModule(true) !== null
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

/** Rows of a `rows`-row weight matrix that `packWeights` tiles: all but the last `rows % 4`. */
const rows4 = (rows: number) => rows - (rows % 4)

/** Where row `row`'s first four columns lie in `packWeights`' tiles (the next four are 16 further on). */
const tileRowStart = (row: number, columns: number) => (row >> 2) * 4 * columns + (row & 3) * 4

/**
 * Writes `source` (`[rows, columns]`, row-major; `columns` a multiple of 4) into `target` in the kernel's packed
 * layout: the rows four at a time, each group of four as 4 × 4 tiles column block by column block — element
 * (r, i) of the first `rows - rows % 4` rows at `(r >> 2) · 4 · columns + (i >> 2) · 16 + (r & 3) · 4 + (i & 3)`
 * — and the last `rows % 4` rows row-major after them (where row-major puts them too). The kernel then reads a
 * row block's weights as one sequential stream instead of four streams a row apart.
 */
export function packWeights(source: Float32Array, target: Float32Array, rows: number, columns: number): void {
  const blocked = rows4(rows)
  for (let row = 0; row < blocked; row++) {
    const base = tileRowStart(row, columns)
    const from = row * columns
    for (let column = 0; column < columns; column += 4) {
      const to = base + column * 4
      target[to] = source[from + column]!
      target[to + 1] = source[from + column + 1]!
      target[to + 2] = source[from + column + 2]!
      target[to + 3] = source[from + column + 3]!
    }
  }
  target.set(source.subarray(blocked * columns, rows * columns), blocked * columns)
}

/**
 * Products smaller than this many multiply-adds run on the calling thread alone (posting one costs a few
 * microseconds; below this the helper would not pay for it).
 */
export const sharedProductMinimum = 131_072
/** Multiply-adds per chunk a product is cut into when shared (a few microseconds of the kernel: long enough to outweigh claiming it, short enough to balance the threads). */
const chunkWork = 49_152
/** Rows of a decode step's attention below which it runs on the calling thread alone (`attendRows`). */
export const sharedRowMinimum = 8
/** `Atomics.load` spins of the calling thread before it sleeps waiting for a helper's last chunk. */
const waitSpins = 4_000

/**
 * An arena: one WebAssembly memory with the SIMD kernel where available, else a plain `ArrayBuffer` and
 * JavaScript. `threads` > 1 (default 1): the memory is shared and up to `threads - 1` pooled worker threads
 * (`matmul-workers.ts`) run the kernel on it beside the calling thread, each product of at least
 * `sharedProductMinimum` multiply-adds split between them by output rows; where shared memory or workers are
 * unavailable (or the pool is lent elsewhere) the arena runs on this thread alone. Results are the same
 * either way, bit for bit. `fused` (default: where relaxed SIMD is available) picks the fused multiply-add
 * kernel. `dispose` hands the workers back (the arena still works, on this thread).
 */
export function createMatmulArena(options: { simd?: boolean; fused?: boolean; threads?: number } = {}): MatmulArena {
  const wantHelpers = options.simd === false ? 0 : Math.max(0, Math.floor(options.threads ?? 1) - 1)
  // Helper threads where the runtime lends them (Node's worker threads; a browser page: none, this thread alone).
  const lendHelpers = platform().lendMatmulHelpers
  const shared = wantHelpers > 0 && lendHelpers !== undefined && sharedMemoryAvailable()
  const fused = options.simd !== false && options.fused !== false && relaxedSimdAvailable()
  const module = options.simd === false ? null : kernelModule(shared, fused)
  let kernel: ((...args: number[]) => void) | undefined
  let packedKernel: ((...args: number[]) => void) | undefined
  let buffer: ArrayBuffer | undefined
  /** The whole memory as floats and as ints (`attendRows`' views). */
  let memoryFloats: Float32Array | undefined
  let memoryInts: Int32Array | undefined
  let slots: Int32Array | undefined
  let helpers: MatmulHelpers | undefined
  let generation = 0
  let helperChunks = 0
  let helperAttentionChunks = 0
  let used = 0
  /** The most bytes ever allocated: memory below it may hold old values. */
  let highWater = 0
  let capacity = 0

  /**
   * Posts a job of `count` chunks (`kind`: 0 a product, 1 attention rows, 2 attention parts; its arguments already in
   * the control block), claims chunks until none is left (`runChunk` runs one here), waits for the helpers' last ones,
   * then closes the job (its next chunk set past any count), so that a helper that wakes late cannot claim a chunk of
   * the next job while its arguments are being written. A chunk that throws, here or on a helper, is counted done all
   * the same; the job then throws once every chunk is accounted for.
   */
  const shareChunks = (kind: number, count: number, perChunk: number, runChunk: (chunk: number) => void) => {
    const control = slots!
    control[controlSlots.kind] = kind
    control[controlSlots.rowsPerChunk] = perChunk
    control[controlSlots.chunks] = count
    control[controlSlots.failed] = 0
    Atomics.store(control, controlSlots.done, 0)
    generation = (generation + 1) & 0x7fffff
    const posted = generation << 8
    Atomics.store(control, controlSlots.next, posted)
    Atomics.notify(control, controlSlots.next)
    let mine = 0
    let failure: unknown
    for (;;) {
      const current = Atomics.load(control, controlSlots.next)
      const chunk = current & 255
      if (chunk >= count) break
      if (Atomics.compareExchange(control, controlSlots.next, current, current + 1) !== current) continue
      try {
        runChunk(chunk)
      } catch (error) {
        failure ??= error
      }
      mine++
    }
    helperChunks += count - mine
    if (kind !== 0) helperAttentionChunks += count - mine
    if (mine < count && Atomics.add(control, controlSlots.done, mine) + mine < count) {
      for (;;) {
        let done = Atomics.load(control, controlSlots.done)
        for (let spin = 0; done < count && spin < waitSpins; spin++) done = Atomics.load(control, controlSlots.done)
        if (done >= count) break
        Atomics.wait(control, controlSlots.done, done, 50)
      }
    }
    Atomics.store(control, controlSlots.next, posted | closedChunk)
    if (failure !== undefined) throw failure
    if (Atomics.load(control, controlSlots.failed) !== 0) throw new Error(`a worker thread failed on a shared chunk: ${kind === 0 ? 'a product' : 'attention'}`)
  }

  /** The product over all blocked rows, cut into chunks that this thread and the helpers claim. */
  const sharedMatmul = (packed: boolean, ...[w, x, y, rows, columns, batch, wStride, xStride, yStride]: Parameters<AttentionKernel>) => {
    const run = packed ? packedKernel! : kernel!
    const control = slots!
    control[controlSlots.packed] = packed ? 1 : 0
    const blocks = rows / 4
    const chunks = Math.min(maximumChunks, blocks, Math.max(2, Math.round((rows * columns * batch) / chunkWork)))
    const perChunk = Math.ceil(blocks / chunks) * 4
    const count = Math.ceil(rows / perChunk)
    const a = controlSlots.arguments
    control[a] = w
    control[a + 1] = x
    control[a + 2] = y
    control[a + 3] = rows
    control[a + 4] = columns
    control[a + 5] = batch
    control[a + 6] = wStride
    control[a + 7] = xStride
    control[a + 8] = yStride
    shareChunks(0, count, perChunk, (chunk) => {
      const from = chunk * perChunk
      run(w + from * wStride, x, y + from * 4, Math.min(perChunk, rows - from), columns, batch, wStride, xStride, yStride)
    })
  }

  /**
   * `y = W x` over byte offsets of the memory (the kernel's arguments): the kernel for the blocked rows where it runs
   * (columns and the w and x strides multiples of 4 floats) — split with the helpers when `share` and it pays —, and
   * JavaScript for the other rows. `matmul` shares; attention's products (`byteMatmul`) run inside a shared job, so not.
   */
  const product = (share: boolean, ...[w, x, y, rows, columns, batch, wStride, xStride, yStride]: Parameters<AttentionKernel>) => {
    const blocked = module !== null && columns % 4 === 0 && wStride % 16 === 0 && xStride % 16 === 0 ? rows4(rows) : 0
    if (blocked > 0) {
      if (share) blockedProduct(false, w, x, y, blocked, columns, batch, wStride, xStride, yStride)
      else kernel!(w, x, y, blocked, columns, batch, wStride, xStride, yStride)
    }
    if (blocked < rows) {
      const floats = memoryFloats!
      matmulJs(floats.subarray(w / 4), floats.subarray(x / 4), floats.subarray(y / 4), blocked, rows, columns, batch, wStride / 4, xStride / 4, yStride / 4)
    }
  }
  const byteMatmul: AttentionKernel = (w, x, y, rows, columns, batch, wStride, xStride, yStride) =>
    product(false, w, x, y, rows, columns, batch, wStride, xStride, yStride)

  /** The product over `rows` blocked rows (a multiple of 4; arguments in bytes): shared with the helpers when it pays, else on this thread. */
  const blockedProduct = (packed: boolean, ...args: [number, number, number, number, number, number, number, number, number]) => {
    const [, , , rows, columns, batch] = args
    if (helpers !== undefined && helpers.count > 0 && rows >= 8 && rows * columns * batch >= sharedProductMinimum) sharedMatmul(packed, ...args)
    else (packed ? packedKernel! : kernel!)(...args)
  }

  return {
    simd: module !== null,
    fused: module !== null && fused,
    get threads() {
      return 1 + (helpers?.count ?? 0)
    },
    get helperChunks() {
      return helperChunks
    },
    get helperAttentionChunks() {
      return helperAttentionChunks
    },
    get used() {
      return used
    },
    get capacity() {
      return capacity
    },
    rewind(mark) {
      if (!(mark >= 0 && mark <= used)) throw new RangeError(`rewind(${mark}): the arena has ${used} bytes allocated`)
      used = mark
    },
    reserve(floats) {
      const bytes = floats * 4 + 64 + (shared ? controlBytes : 0)
      let reserved: ArrayBuffer
      if (module !== null) {
        const pages = Math.max(1, Math.ceil(bytes / 65_536))
        const memory = new wasm!.Memory(shared ? { initial: pages, maximum: pages, shared: true } : { initial: pages })
        const { exports } = new wasm!.Instance(module, { env: { memory } })
        kernel = exports.matmul
        packedKernel = exports.matmulPacked
        reserved = memory.buffer
        if (shared) {
          slots = new Int32Array(reserved, 0, controlBytes / 4)
          used = controlBytes
          helpers = lendHelpers!(wantHelpers, module, memory, 0, slots)
        }
      } else reserved = new ArrayBuffer(bytes)
      buffer = reserved
      memoryFloats = new Float32Array(reserved, 0, Math.floor(reserved.byteLength / 4))
      memoryInts = new Int32Array(reserved, 0, Math.floor(reserved.byteLength / 4))
      capacity = reserved.byteLength
    },
    allocate(length, zeroed = true) {
      if (buffer === undefined) throw new Error('reserve() comes before allocate()')
      const offset = used
      used += Math.ceil((length * 4) / 16) * 16
      if (used > capacity) {
        used = offset
        throw new RangeError(`the arena holds ${capacity} bytes; ${offset + Math.ceil((length * 4) / 16) * 16} asked`)
      }
      const array = new Float32Array(buffer, offset, length)
      if (zeroed && offset < highWater) array.fill(0)
      highWater = Math.max(highWater, used)
      return array
    },
    allocateInts(length) {
      const array = this.allocate(length)
      return new Int32Array(array.buffer, array.byteOffset, length)
    },
    matmul(w, x, y, rows, columns, batch, wStride, xStride, yStride) {
      product(true, w.byteOffset, x.byteOffset, y.byteOffset, rows, columns, batch, wStride * 4, xStride * 4, yStride * 4)
    },
    allocateWeights(source, rows, columns) {
      if (source.length !== rows * columns) throw new RangeError(`allocateWeights: ${source.length} values for ${rows} × ${columns}`)
      const weights = this.allocate(rows * columns)
      if (module === null || columns % 4 !== 0) weights.set(source)
      else packWeights(source, weights, rows, columns)
      return weights
    },
    weightProduct(w, x, y, rows, columns, batch, xStride, yStride) {
      if (module === null || columns % 4 !== 0) {
        this.matmul(w, x, y, rows, columns, batch, columns, xStride, yStride)
        return
      }
      if (xStride % 4 !== 0) {
        const row = new Float32Array(columns)
        for (let index = 0; index < rows; index++) {
          this.copyWeightRow(w, index, columns, row, 0)
          matmulJs(row, x, y.subarray(index), 0, 1, columns, batch, columns, xStride, yStride)
        }
        return
      }
      const blocked = rows4(rows)
      if (blocked > 0) blockedProduct(true, w.byteOffset, x.byteOffset, y.byteOffset, blocked, columns, batch, columns * 4, xStride * 4, yStride * 4)
      // The last rows are stored row-major after the tiles, at their row-major offsets.
      if (blocked < rows) matmulJs(w, x, y, blocked, rows, columns, batch, columns, xStride, yStride)
    },
    copyWeightRow(w, row, columns, out, offset) {
      if (module === null || columns % 4 !== 0 || row >= rows4(w.length / columns)) {
        out.set(w.subarray(row * columns, (row + 1) * columns), offset)
        return
      }
      const base = tileRowStart(row, columns)
      for (let group = 0; group < columns; group += 4) {
        const from = base + group * 4
        out[offset + group] = w[from]!
        out[offset + group + 1] = w[from + 1]!
        out[offset + group + 2] = w[from + 2]!
        out[offset + group + 3] = w[from + 3]!
      }
    },
    attend(kind, block, count) {
      if (block.buffer !== buffer) throw new RangeError('attend: the parameter block is not in this arena')
      const run = kind === 'rows' ? attendRows : attendParts
      const at = block.byteOffset / 4
      const headDim = block[attendSlots.headDim]!
      // The helpers call the kernel as it is; the calling thread's products fall back to JavaScript where a stride is not
      // a multiple of 4 floats: such work (a head size not a multiple of 4; for parts, whose queries are rows of
      // `projected`, a projected row that is not) stays on this thread.
      const aligned = headDim % 4 === 0 && (kind === 'rows' || block[attendSlots.projectedWidth]! % 4 === 0)
      if (helpers === undefined || helpers.count === 0 || module === null || !aligned || count < (kind === 'rows' ? sharedRowMinimum : 2)) {
        run(memoryFloats!, memoryInts!, at, byteMatmul, 0, count)
        return
      }
      // Rows a few to a chunk (each is short); parts one to a chunk (each is many tokens), within the chunk count's bound.
      const perChunk = Math.max(kind === 'rows' ? 2 : 1, Math.ceil(count / (kind === 'rows' ? 32 : maximumChunks)))
      const a = controlSlots.arguments
      slots![a] = at
      slots![a + 1] = count
      shareChunks(kind === 'rows' ? 1 : 2, Math.ceil(count / perChunk), perChunk, (chunk) =>
        run(memoryFloats!, memoryInts!, at, byteMatmul, chunk * perChunk, Math.min(count, (chunk + 1) * perChunk)),
      )
    },
    dispose() {
      helpers?.release()
      helpers = undefined
    },
  }
}
