import { webAssembly, type WasmCompiledModule, type WasmMemory } from './webassembly-api.js'
import { encodeModule, instruction as op, valueType, whileLoop, type Code, type FunctionDefinition, type ValueType } from './wasm-bytecode.js'

/**
 * Hand-written WebAssembly SIMD kernels that run on the WebAssembly backend's own memory (the module
 * imports it), so they read and write tensors in place:
 *
 * - `gemm`: C[rows, columns] (+)= A[rows, depth] · B[depth, columns], float32. A is read through two
 *   strides, so a transposed A costs nothing; B and C are row-major with a row stride. Register tiles
 *   of 4 rows × 8 columns (8 `f32x4` accumulators; A broadcast one element at a time, B loaded as
 *   vectors), like XNNPACK's `f32-gemm-4x8-wasmsimd-splat` micro-kernel but without packing B, so small
 *   and batched products pay no per-call weight packing.
 * - `transpose`: a [rows, columns] matrix into [columns, rows] (both with row strides), 4×4 blocks
 *   with shuffles.
 *
 * All addresses and strides are in bytes.
 */
export interface SimdKernels {
  gemm(
    a: number,
    aRowStride: number,
    aDepthStride: number,
    b: number,
    bRowStride: number,
    c: number,
    cRowStride: number,
    rows: number,
    columns: number,
    depth: number,
    accumulate: number,
  ): void
  /** Row strides in bytes: `sourceStride` between rows of the source, `targetStride` between rows of the target. */
  transpose(source: number, target: number, rows: number, columns: number, sourceStride: number, targetStride: number): void
}

const { i32, f32, v128 } = valueType
const get = op.localGet
const set = op.localSet

/** Rows and 4-float vectors of columns in the main register tile. */
const tileRows = 4
const tileVectors = 2

// Parameters of every tile function, in order.
const tileParameter = { a: 0, aRowStride: 1, aDepthStride: 2, b: 3, bRowStride: 4, c: 5, cRowStride: 6, depth: 7, accumulate: 8 }
const tileParameterCount = 9

/**
 * One register tile: `rows` rows × `vectors` vectors of 4 columns, or a single column with scalar
 * arithmetic when `vectors` is 0.
 */
function gemmTile(rows: number, vectors: number): FunctionDefinition {
  const scalar = vectors === 0
  const width = scalar ? 1 : vectors
  const laneType: ValueType = scalar ? f32 : v128
  const locals: ValueType[] = []
  const declare = (type: ValueType): number => {
    locals.push(type)
    return tileParameterCount + locals.length - 1
  }
  const remaining = declare(i32)
  const aRow = Array.from({ length: rows }, () => declare(i32))
  const cRow = Array.from({ length: rows }, () => declare(i32))
  const accumulator = Array.from({ length: rows }, () => Array.from({ length: width }, () => declare(laneType)))
  const bVector = Array.from({ length: width }, () => declare(laneType))
  const aBroadcast = declare(laneType)

  const load = (offset: number): Code => (scalar ? op.f32Load(offset) : op.v128Load(offset))
  const store = (offset: number): Code => (scalar ? op.f32Store(offset) : op.v128Store(offset))
  const multiply = scalar ? op.f32Mul : op.f32x4Mul
  const add = scalar ? op.f32Add : op.f32x4Add
  const zero = scalar ? op.f32Const0 : op.v128Const0
  const laneBytes = scalar ? 4 : 16
  const p = tileParameter

  const body: Code[] = []
  for (let row = 0; row < rows; row++) {
    body.push(get(p.a), op.i32Const(row), get(p.aRowStride), op.i32Mul, op.i32Add, set(aRow[row]!))
    body.push(get(p.c), op.i32Const(row), get(p.cRowStride), op.i32Mul, op.i32Add, set(cRow[row]!))
  }
  const loadAccumulators: Code[] = []
  const zeroAccumulators: Code[] = []
  for (let row = 0; row < rows; row++) {
    for (let lane = 0; lane < width; lane++) {
      loadAccumulators.push(get(cRow[row]!), load(lane * laneBytes), set(accumulator[row]![lane]!))
      zeroAccumulators.push(zero, set(accumulator[row]![lane]!))
    }
  }
  body.push(get(p.accumulate), op.ifElse(loadAccumulators, zeroAccumulators))
  body.push(get(p.depth), set(remaining))
  const step: Code[] = []
  for (let lane = 0; lane < width; lane++) step.push(get(p.b), load(lane * laneBytes), set(bVector[lane]!))
  for (let row = 0; row < rows; row++) {
    step.push(get(aRow[row]!), scalar ? op.f32Load() : op.v128Load32Splat(), set(aBroadcast))
    for (let lane = 0; lane < width; lane++) {
      const target = accumulator[row]![lane]!
      step.push(get(target), get(aBroadcast), get(bVector[lane]!), multiply, add, set(target))
    }
    step.push(get(aRow[row]!), get(p.aDepthStride), op.i32Add, set(aRow[row]!))
  }
  step.push(get(p.b), get(p.bRowStride), op.i32Add, set(p.b))
  step.push(get(remaining), op.i32Const(1), op.i32Sub, set(remaining))
  body.push(whileLoop([get(remaining), op.i32Eqz], step))
  for (let row = 0; row < rows; row++) {
    for (let lane = 0; lane < width; lane++) body.push(get(cRow[row]!), get(accumulator[row]![lane]!), store(lane * laneBytes))
  }
  return { parameters: new Array<ValueType>(tileParameterCount).fill(i32), locals, body }
}

/**
 * The exported `gemm`: walks C in register tiles (4 rows, then single rows for the remainder; 8,
 * then 4, then single columns), calling the tile functions given by index.
 */
function gemmDriver(tiles: { rows: number; columns: { width: number; functionIndex: number }[] }[]): FunctionDefinition {
  const p = { a: 0, aRowStride: 1, aDepthStride: 2, b: 3, bRowStride: 4, c: 5, cRowStride: 6, rows: 7, columns: 8, depth: 9, accumulate: 10 }
  const row = 11
  const column = 12
  const callTile = (functionIndex: number): Code => [
    get(p.a),
    get(row),
    get(p.aRowStride),
    op.i32Mul,
    op.i32Add,
    get(p.aRowStride),
    get(p.aDepthStride),
    get(p.b),
    get(column),
    op.i32Const(2),
    op.i32Shl,
    op.i32Add,
    get(p.bRowStride),
    get(p.c),
    get(row),
    get(p.cRowStride),
    op.i32Mul,
    op.i32Add,
    get(column),
    op.i32Const(2),
    op.i32Shl,
    op.i32Add,
    get(p.cRowStride),
    get(p.depth),
    get(p.accumulate),
    op.call(functionIndex),
  ]
  const body: Code[] = [op.i32Const(0), set(row)]
  for (const tile of tiles) {
    const columnLoops: Code[] = [op.i32Const(0), set(column)]
    for (const { width, functionIndex } of tile.columns) {
      columnLoops.push(
        whileLoop(
          [get(column), op.i32Const(width), op.i32Add, get(p.columns), op.i32GreaterThanUnsigned],
          [callTile(functionIndex), get(column), op.i32Const(width), op.i32Add, set(column)],
        ),
      )
    }
    body.push(
      whileLoop(
        [get(row), op.i32Const(tile.rows), op.i32Add, get(p.rows), op.i32GreaterThanUnsigned],
        [columnLoops, get(row), op.i32Const(tile.rows), op.i32Add, set(row)],
      ),
    )
  }
  return { exportName: 'gemm', parameters: new Array<ValueType>(11).fill(i32), locals: [i32, i32], body }
}

/** The exported `transpose`: 4×4 blocks through `f32x4` shuffles, scalar copies at the edges. */
function transposeFunction(): FunctionDefinition {
  const p = { source: 0, target: 1, rows: 2, columns: 3 }
  const [sourceStride, targetStride] = [4, 5]
  const locals: ValueType[] = [i32, i32, i32, i32, v128, v128, v128, v128, v128, v128, v128, v128]
  const [row, column, from, to] = [6, 7, 8, 9]
  const x = [10, 11, 12, 13] as const
  const t = [14, 15, 16, 17] as const
  const rowsPlus = (count: number): Code => [get(row), op.i32Const(count), op.i32Add, get(p.rows), op.i32GreaterThanUnsigned]
  const columnsPlus = (count: number): Code => [get(column), op.i32Const(count), op.i32Add, get(p.columns), op.i32GreaterThanUnsigned]
  // from = source + (row · columns + column) · 4; to = target + (column · rows + row) · 4
  const addresses: Code = [
    get(p.source),
    get(row),
    get(sourceStride),
    op.i32Mul,
    op.i32Add,
    get(column),
    op.i32Const(2),
    op.i32Shl,
    op.i32Add,
    set(from),
    get(p.target),
    get(column),
    get(targetStride),
    op.i32Mul,
    op.i32Add,
    get(row),
    op.i32Const(2),
    op.i32Shl,
    op.i32Add,
    set(to),
  ]
  const block4x4: Code[] = [addresses]
  for (let index = 0; index < 4; index++) {
    block4x4.push(get(from), op.i32Const(index), get(sourceStride), op.i32Mul, op.i32Add, op.v128Load(), set(x[index]!))
  }
  block4x4.push(get(x[0]), get(x[1]), op.f32x4Shuffle([0, 4, 1, 5]), set(t[0]))
  block4x4.push(get(x[0]), get(x[1]), op.f32x4Shuffle([2, 6, 3, 7]), set(t[1]))
  block4x4.push(get(x[2]), get(x[3]), op.f32x4Shuffle([0, 4, 1, 5]), set(t[2]))
  block4x4.push(get(x[2]), get(x[3]), op.f32x4Shuffle([2, 6, 3, 7]), set(t[3]))
  const outputs: [number, number, readonly [number, number, number, number]][] = [
    [t[0], t[2], [0, 1, 4, 5]],
    [t[0], t[2], [2, 3, 6, 7]],
    [t[1], t[3], [0, 1, 4, 5]],
    [t[1], t[3], [2, 3, 6, 7]],
  ]
  outputs.forEach(([first, second, lanes], index) => {
    block4x4.push(get(to), op.i32Const(index), get(targetStride), op.i32Mul, op.i32Add, get(first), get(second), op.f32x4Shuffle(lanes), op.v128Store())
  })
  block4x4.push(get(column), op.i32Const(4), op.i32Add, set(column))
  // One element for each of `count` rows starting at `row`, at `column`.
  const scalarColumn = (count: number): Code => {
    const copies: Code[] = [addresses]
    for (let index = 0; index < count; index++) {
      copies.push(get(to), op.i32Const(4 * index), op.i32Add)
      copies.push(get(from), op.i32Const(index), get(sourceStride), op.i32Mul, op.i32Add, op.f32Load(), op.f32Store())
    }
    copies.push(get(column), op.i32Const(1), op.i32Add, set(column))
    return copies
  }
  const body: Code = [
    op.i32Const(0),
    set(row),
    whileLoop(rowsPlus(4), [
      op.i32Const(0),
      set(column),
      whileLoop(columnsPlus(4), block4x4),
      whileLoop(columnsPlus(1), scalarColumn(4)),
      get(row),
      op.i32Const(4),
      op.i32Add,
      set(row),
    ]),
    whileLoop(rowsPlus(1), [op.i32Const(0), set(column), whileLoop(columnsPlus(1), scalarColumn(1)), get(row), op.i32Const(1), op.i32Add, set(row)]),
  ]
  return { exportName: 'transpose', parameters: [i32, i32, i32, i32, i32, i32], locals, body }
}

/** The module's bytes, for a shared (threaded build) or unshared memory. */
export function simdKernelsModuleBytes(sharedMemory: boolean): Uint8Array {
  const functions: FunctionDefinition[] = []
  const addTile = (rows: number, vectors: number): number => functions.push(gemmTile(rows, vectors)) - 1
  const columnsFor = (rows: number) => [
    { width: 4 * tileVectors, functionIndex: addTile(rows, tileVectors) },
    { width: 4, functionIndex: addTile(rows, 1) },
    { width: 1, functionIndex: addTile(rows, 0) },
  ]
  const tiles = [
    { rows: tileRows, columns: columnsFor(tileRows) },
    { rows: 1, columns: columnsFor(1) },
  ]
  functions.push(gemmDriver(tiles), transposeFunction())
  return encodeModule({ memory: { shared: sharedMemory }, functions })
}

const compiled = new Map<boolean, WasmCompiledModule>()
const instances = new WeakMap<WasmMemory, SimdKernels>()

/** The kernels bound to `memory` (compiled once per process, instantiated once per memory). */
export function simdKernelsFor(memory: WasmMemory): SimdKernels {
  const existing = instances.get(memory)
  if (existing !== undefined) return existing
  const sharedMemory = typeof SharedArrayBuffer !== 'undefined' && memory.buffer instanceof SharedArrayBuffer
  let module = compiled.get(sharedMemory)
  if (module === undefined) {
    module = new webAssembly.Module(simdKernelsModuleBytes(sharedMemory))
    compiled.set(sharedMemory, module)
  }
  const instance = new webAssembly.Instance(module, { env: { memory } })
  const kernels = instance.exports as unknown as SimdKernels
  instances.set(memory, kernels)
  return kernels
}

/** Columns of the source per block of `blockedTranspose`: the target rows written stay in L1. */
const transposeColumnBlock = 64

/** Transposes a row-major [rows, columns] matrix at `source` into [columns, rows] at `target`. */
export function blockedTranspose(kernels: SimdKernels, source: number, target: number, rows: number, columns: number): void {
  for (let start = 0; start < columns; start += transposeColumnBlock) {
    const width = Math.min(transposeColumnBlock, columns - start)
    kernels.transpose(source + 4 * start, target + 4 * start * rows, rows, width, 4 * columns, 4 * rows)
  }
}

/** Depth and B-block sizes for cache blocking: B blocks of at most 32 Ki floats (128 KiB, L2-resident). */
const depthBlock = 128
const bBlockFloats = 32768

/**
 * C = A · B with cache blocking over depth and columns (each block of B is multiplied against all
 * rows of A while it is in cache). Same arguments as `SimdKernels.gemm`, without `accumulate`.
 */
export function blockedGemm(
  kernels: SimdKernels,
  a: number,
  aRowStride: number,
  aDepthStride: number,
  b: number,
  bRowStride: number,
  c: number,
  cRowStride: number,
  rows: number,
  columns: number,
  depth: number,
): void {
  const depthStep = depth <= depthBlock + depthBlock / 2 ? depth : depthBlock
  const columnStep = Math.max(8, Math.floor(bBlockFloats / Math.max(depthStep, 1) / 8) * 8)
  for (let depthStart = 0; depthStart < depth; depthStart += depthStep) {
    const depthSize = Math.min(depthStep, depth - depthStart)
    for (let columnStart = 0; columnStart < columns; columnStart += columnStep) {
      kernels.gemm(
        a + depthStart * aDepthStride,
        aRowStride,
        aDepthStride,
        b + depthStart * bRowStride + columnStart * 4,
        bRowStride,
        c + columnStart * 4,
        cRowStride,
        rows,
        Math.min(columnStep, columns - columnStart),
        depthSize,
        depthStart > 0 ? 1 : 0,
      )
    }
  }
}
