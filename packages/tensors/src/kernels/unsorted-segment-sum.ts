import * as tf from '@tensorflow/tfjs-core'
import type { BackendWasm } from '@tensorflow/tfjs-backend-wasm'
import { InvalidArgumentError, ShapeError } from '@ludic/core'

/**
 * `UnsortedSegmentSum` for the WebAssembly backend, which has none (so the gradient of `tf.gather`,
 * an embedding lookup, fails there). TensorFlow semantics: `segmentIds` has the shape of a prefix of
 * `x`'s; output row `s` is the sum of the rows of `x` whose id is `s`; the output is
 * [numSegments, ...x.shape after that prefix]. A negative id drops its row (as in TensorFlow); an id
 * of `numSegments` or more is an `InvalidArgumentError` (the CPU backend silently drops it).
 *
 * Runs in JavaScript on typed-array views of the backend's memory: one pass over `x`.
 */
function unsortedSegmentSum(args: { inputs: tf.NamedTensorInfoMap; backend: unknown; attrs?: tf.NamedAttrMap }): tf.TensorInfo {
  const backend = args.backend as BackendWasm
  const { x, segmentIds } = args.inputs as { x: tf.TensorInfo; segmentIds: tf.TensorInfo }
  const { numSegments } = (args.attrs ?? {}) as { numSegments?: number }
  if (numSegments === undefined || !Number.isInteger(numSegments) || numSegments < 0) {
    throw new InvalidArgumentError({ argument: 'numSegments', value: numSegments, message: 'must be an integer ≥ 0' })
  }
  if (segmentIds.dtype !== 'int32') {
    throw new InvalidArgumentError({ argument: 'segmentIds', value: segmentIds.dtype, message: 'must be an int32 tensor' })
  }
  if (x.dtype !== 'float32' && x.dtype !== 'int32') {
    throw new InvalidArgumentError({ argument: 'x', value: x.dtype, message: 'must be a float32 or int32 tensor' })
  }
  const idsRank = segmentIds.shape.length
  const prefixMatches = idsRank <= x.shape.length && segmentIds.shape.every((size, axis) => size === x.shape[axis])
  if (!prefixMatches) {
    throw new ShapeError({
      argument: 'segmentIds',
      expected: x.shape.slice(0, Math.max(idsRank, 1)),
      actual: [...segmentIds.shape],
      message: `must be a prefix of the shape of x ([${x.shape.join(', ')}])`,
    })
  }
  const rowShape = x.shape.slice(idsRank)
  const rowLength = tf.util.sizeFromShape(rowShape)
  const output = backend.makeOutput([numSegments, ...rowShape], x.dtype)
  // Views are taken after the allocation above (it may grow the memory and detach older views).
  const sums = backend.typedArrayFromHeap(output)
  const ids = backend.typedArrayFromHeap(segmentIds)
  const values = backend.typedArrayFromHeap(x)
  sums.fill(0)
  for (let row = 0; row < ids.length; row++) {
    const segment = ids[row]!
    if (segment < 0) continue
    if (segment >= numSegments) {
      backend.disposeData(output.dataId)
      throw new InvalidArgumentError({
        argument: 'segmentIds',
        value: segment,
        message: `segment id at flat position ${row} is out of range [0, ${numSegments})`,
      })
    }
    const source = row * rowLength
    const target = segment * rowLength
    for (let index = 0; index < rowLength; index++) sums[target + index]! += values[source + index]!
  }
  return output
}

export const wasmUnsortedSegmentSumConfig: tf.KernelConfig = {
  kernelName: tf.UnsortedSegmentSum,
  backendName: 'wasm',
  kernelFunc: unsortedSegmentSum as unknown as tf.KernelFunc,
}
