import * as tf from '@tensorflow/tfjs-core'
import type { BackendWasm } from '@tensorflow/tfjs-backend-wasm'
import { InvalidArgumentError, ShapeError } from '@ludic/core'
import { memoryOffsetOf, wasmMemoryOf } from './wasm-backend-internals.js'
import { blockedGemm, blockedTranspose, simdKernelsFor, type SimdKernels } from './wasm-simd-kernels.js'

/**
 * `BatchMatMul` for the WebAssembly backend.
 *
 * The stock kernel has one fast path, XNNPACK's fully-connected operator, taken only when neither
 * operand is transposed and both batch sizes are 1; everything else (every matmul gradient, every
 * attention product) goes through a naive triple loop at 1–2 GFLOP/s, and a batch broadcast over two
 * axes ([2,1,…]·[1,3,…]) gets a buffer for 3 products where the output needs 6. This kernel runs
 * float32 products through the SIMD `gemm` of `wasm-simd-kernels.ts`, in place on the backend's memory:
 *
 * - a transposed B is first transposed into a temporary tensor (4×4 SIMD blocks, O(depth·columns));
 * - a transposed A likewise when the product has 32 columns or more, else it is read through strides;
 * - batches broadcast like `tf.matMul` (NumPy rules on the leading axes); when B is shared by every
 *   batch, the batch folds into the rows of one product.
 *
 * Single products (after transposing) still go to the stock XNNPACK path in two cases: with the
 * multithreaded build, from 2^22 multiply-adds (XNNPACK uses the thread pool; this `gemm` runs on the
 * calling thread only), and when untransposed and wide (≥ 1024 columns, depth ≥ 256), where XNNPACK's
 * packed B, cached per weight tensor, measures faster.
 *
 * Non-float32 inputs go to the stock kernel, which rejects them as before.
 */
export function wasmBatchMatMulConfig(stock: tf.KernelConfig | undefined): tf.KernelConfig {
  return {
    kernelName: tf.BatchMatMul,
    backendName: 'wasm',
    kernelFunc: ((args: { inputs: tf.NamedTensorInfoMap; backend: unknown; attrs?: tf.NamedAttrMap }) => {
      const { a, b } = args.inputs as { a: tf.TensorInfo; b: tf.TensorInfo }
      if (a.dtype !== 'float32' || b.dtype !== 'float32') {
        if (stock !== undefined) return stock.kernelFunc(args as Parameters<tf.KernelFunc>[0])
        throw new InvalidArgumentError({
          argument: a.dtype !== 'float32' ? 'a' : 'b',
          value: a.dtype !== 'float32' ? a.dtype : b.dtype,
          message: 'BatchMatMul on wasm supports float32 only',
        })
      }
      const { transposeA, transposeB } = (args.attrs ?? {}) as { transposeA?: boolean; transposeB?: boolean }
      return batchMatMul(stock, args.backend as BackendWasm, a, b, transposeA === true, transposeB === true)
    }) as tf.KernelFunc,
  }
}

/** The shapes of one `BatchMatMul`, resolved: every product is [rows, depth] · [depth, columns]. */
interface ProductShape {
  rows: number
  depth: number
  columns: number
  /** The broadcast leading (batch) axes of the output. */
  outerShape: number[]
  /** For each output batch, which batch of A and of B it reads. */
  aBatchOf: Int32Array
  bBatchOf: Int32Array
  /** How many batches A and B hold. */
  aBatches: number
  bBatches: number
}

export function resolveProductShape(aShape: readonly number[], bShape: readonly number[], transposeA: boolean, transposeB: boolean): ProductShape {
  const aRank = aShape.length
  const bRank = bShape.length
  if (aRank < 2 || bRank < 2) {
    throw new ShapeError({
      argument: aRank < 2 ? 'a' : 'b',
      expected: [-1, -1],
      actual: [...(aRank < 2 ? aShape : bShape)],
      message: 'matMul needs rank 2 or more',
    })
  }
  const rows = transposeA ? aShape[aRank - 1]! : aShape[aRank - 2]!
  const depth = transposeA ? aShape[aRank - 2]! : aShape[aRank - 1]!
  const bDepth = transposeB ? bShape[bRank - 1]! : bShape[bRank - 2]!
  const columns = transposeB ? bShape[bRank - 2]! : bShape[bRank - 1]!
  if (depth !== bDepth) {
    throw new ShapeError({
      argument: 'b',
      expected: transposeB ? [...bShape.slice(0, -2), -1, depth] : [...bShape.slice(0, -2), depth, -1],
      actual: [...bShape],
      message: `inner dimensions of matMul must match (a is [${aShape.join(', ')}], transposeA=${transposeA}, transposeB=${transposeB})`,
    })
  }
  const aOuter = aShape.slice(0, -2)
  const bOuter = bShape.slice(0, -2)
  const outerShape = tf.broadcast_util.assertAndGetBroadcastShape(aOuter, bOuter)
  const batches = tf.util.sizeFromShape(outerShape)
  const aBatchOf = new Int32Array(batches)
  const bBatchOf = new Int32Array(batches)
  // Walk the output batch index in row-major order; each operand's index drops the axes it broadcasts.
  const aStrides = broadcastStrides(aOuter, outerShape.length)
  const bStrides = broadcastStrides(bOuter, outerShape.length)
  const position = new Array<number>(outerShape.length).fill(0)
  for (let batch = 0; batch < batches; batch++) {
    let aIndex = 0
    let bIndex = 0
    for (let axis = 0; axis < outerShape.length; axis++) {
      aIndex += position[axis]! * aStrides[axis]!
      bIndex += position[axis]! * bStrides[axis]!
    }
    aBatchOf[batch] = aIndex
    bBatchOf[batch] = bIndex
    for (let axis = outerShape.length - 1; axis >= 0; axis--) {
      position[axis]!++
      if (position[axis]! < outerShape[axis]!) break
      position[axis] = 0
    }
  }
  return {
    rows,
    depth,
    columns,
    outerShape,
    aBatchOf,
    bBatchOf,
    aBatches: tf.util.sizeFromShape(aOuter),
    bBatches: tf.util.sizeFromShape(bOuter),
  }
}

/** Row-major strides of `shape` aligned to the right of a rank-`rank` shape; 0 on broadcast axes. */
function broadcastStrides(shape: readonly number[], rank: number): number[] {
  const strides = new Array<number>(rank).fill(0)
  let stride = 1
  for (let axis = shape.length - 1; axis >= 0; axis--) {
    const size = shape[axis]!
    strides[rank - shape.length + axis] = size === 1 ? 0 : stride
    stride *= size
  }
  return strides
}

/** A transposed A is copied to row-major first when the product has this many columns or more. */
const transposeAColumnsThreshold = 32
/** With a multithreaded build, products of this many multiply-adds or more go to XNNPACK's thread pool. */
const threadPoolMinimumWork = 1 << 22
/**
 * Untransposed products at least this wide and deep stay on the stock XNNPACK path even with one
 * thread: it packs B once per tensor (cached), and measured faster than this `gemm` there (`npm run bench -- kernels`).
 */
const stockMinimumColumns = 1024
const stockMinimumDepth = 256

function batchMatMul(
  stock: tf.KernelConfig | undefined,
  backend: BackendWasm,
  a: tf.TensorInfo,
  b: tf.TensorInfo,
  transposeA: boolean,
  transposeB: boolean,
): tf.TensorInfo {
  const shape = resolveProductShape(a.shape, b.shape, transposeA, transposeB)
  const { rows, depth, columns, aBatchOf, bBatchOf } = shape
  const outputShape = [...shape.outerShape, rows, columns]
  const batches = aBatchOf.length
  if (batches * rows * columns === 0 || depth === 0) {
    const output = backend.makeOutput(outputShape, 'float32')
    backend.typedArrayFromHeap(output).fill(0)
    return output
  }
  const kernels = simdKernelsFor(wasmMemoryOf(backend))
  // B shared by every batch, and A's batches are the output's in order: one product of batches · rows rows.
  const foldsIntoOneProduct = shape.bBatches === 1 && shape.aBatches === batches
  const transposeAFirst = transposeA && columns >= transposeAColumnsThreshold
  const temporaries: tf.TensorInfo[] = []
  try {
    // Operands in the layout the product reads: B row-major [depth, columns]; A row-major unless strided.
    const bMatrix = transposeB ? transposedCopy(backend, kernels, b, shape.bBatches, columns, depth, temporaries) : b
    const aMatrix = transposeAFirst ? transposedCopy(backend, kernels, a, shape.aBatches, depth, rows, temporaries) : a
    const aStrided = transposeA && !transposeAFirst
    const threadPoolPays = batches * rows * depth * columns >= threadPoolMinimumWork && threadsOf(backend) > 1
    const stockPathPays = !transposeA && !transposeB && columns >= stockMinimumColumns && depth >= stockMinimumDepth
    if (stock !== undefined && !aStrided && (batches === 1 || foldsIntoOneProduct) && (threadPoolPays || stockPathPays)) {
      // XNNPACK's fully-connected operator (the stock kernel's fast path), on the thread pool if any.
      const product = stock.kernelFunc({
        inputs: { a: { ...aMatrix, shape: [batches * rows, depth] }, b: { ...bMatrix, shape: [depth, columns] } },
        backend: backend as unknown as tf.KernelBackend,
        attrs: { transposeA: false, transposeB: false },
      }) as tf.TensorInfo
      return { ...product, shape: outputShape }
    }
    const output = backend.makeOutput(outputShape, 'float32')
    const floatBytes = 4
    const aBase = memoryOffsetOf(backend, aMatrix)
    const bBase = memoryOffsetOf(backend, bMatrix)
    const cBase = memoryOffsetOf(backend, output)
    // A[row, k] lives at aBase + row · aRowStride + k · aDepthStride within its batch.
    const aRowStride = aStrided ? floatBytes : depth * floatBytes
    const aDepthStride = aStrided ? rows * floatBytes : floatBytes
    const bRowStride = columns * floatBytes
    if (!aStrided && foldsIntoOneProduct) {
      blockedGemm(kernels, aBase, aRowStride, aDepthStride, bBase, bRowStride, cBase, bRowStride, batches * rows, columns, depth)
      return output
    }
    for (let batch = 0; batch < batches; batch++) {
      blockedGemm(
        kernels,
        aBase + aBatchOf[batch]! * rows * depth * floatBytes,
        aRowStride,
        aDepthStride,
        bBase + bBatchOf[batch]! * depth * columns * floatBytes,
        bRowStride,
        cBase + batch * rows * columns * floatBytes,
        bRowStride,
        rows,
        columns,
        depth,
      )
    }
    return output
  } finally {
    for (const temporary of temporaries) backend.disposeData(temporary.dataId)
  }
}

/**
 * A new tensor (recorded in `temporaries`) holding `batches` row-major [rows, columns] matrices of
 * `source`, each transposed to [columns, rows].
 */
function transposedCopy(
  backend: BackendWasm,
  kernels: SimdKernels,
  source: tf.TensorInfo,
  batches: number,
  rows: number,
  columns: number,
  temporaries: tf.TensorInfo[],
): tf.TensorInfo {
  const target = backend.makeOutput([batches, columns, rows], 'float32')
  temporaries.push(target)
  const sourceBase = memoryOffsetOf(backend, source)
  const targetBase = memoryOffsetOf(backend, target)
  const matrixBytes = rows * columns * 4
  for (let batch = 0; batch < batches; batch++) {
    blockedTranspose(kernels, sourceBase + batch * matrixBytes, targetBase + batch * matrixBytes, rows, columns)
  }
  return target
}

const threadCounts = new WeakMap<BackendWasm, number>()

/** Threads of the backend's XNNPACK pool (1 with the single-threaded builds). */
function threadsOf(backend: BackendWasm): number {
  let threads = threadCounts.get(backend)
  if (threads === undefined) {
    const module = backend.wasm as unknown as { tfjs?: { getThreadsCount?: () => number } }
    threads = module.tfjs?.getThreadsCount?.() ?? 1
    threadCounts.set(backend, threads)
  }
  return threads
}
