import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError, ShapeError } from '@ludic/core'
import { assertFloat, assertTensor } from './checks.js'
import { shiftedExponentials } from './log-softmax.js'

/**
 * Log-probability of each chosen token: `logits[..., t, tokenIds[..., t]] - logsumexp(logits[..., t, :])`.
 *
 * `logits` is `[...batch, vocab]` float32, `tokenIds` is `[...batch]` int32 with ids in `[0, vocab)`.
 * Returns `[...batch]`. The gradient with respect to the logits, `dy · (oneHot(id) − softmax)`, is written
 * out: the forward pass keeps `exp(logits − max)` and its row sums (the softmax's numerator and denominator,
 * which logsumexp computes anyway), so the backward pass is one dense product `−dy · e / Σe` and `dy` added at
 * the chosen ids (`tensorScatterUpdate` of one value a row) — no `exp` again and no one-hot over the
 * vocabulary (`addAtIds`). Forward values are logsumexp's bit for bit.
 */
export function tokenLogprobs(logits: tf.Tensor, tokenIds: tf.Tensor): tf.Tensor {
  assertTensor(logits, 'logits', 'tokenLogprobs')
  assertTensor(tokenIds, 'tokenIds', 'tokenLogprobs')
  assertFloat(logits, 'logits', 'tokenLogprobs')
  if (tokenIds.dtype !== 'int32') {
    throw new InvalidArgumentError({ argument: 'tokenIds', value: tokenIds.dtype, message: "passed to 'tokenLogprobs' must have dtype int32" })
  }
  const batchShape = logits.shape.slice(0, -1)
  if (logits.rank < 1 || tokenIds.rank !== batchShape.length || tokenIds.shape.some((size, index) => size !== batchShape[index])) {
    throw new ShapeError({
      argument: 'tokenIds',
      expected: batchShape,
      actual: tokenIds.shape,
      message: 'tokenIds must have the shape of logits without the vocabulary axis',
    })
  }
  const vocabulary = logits.shape[logits.rank - 1]!
  assertIdsInRange(tokenIds, vocabulary)
  // tokenIds goes through customGrad as an input (with no gradient of its own) rather than a closure,
  // so the backward pass keeps it alive even when the caller disposes it after the forward pass.
  const compute = tf.customGrad((logitsInput, idsInput, save) => {
    const input = logitsInput as tf.Tensor
    const ids = idsInput as tf.Tensor
    const rows = tokenIds.size
    const chosen = tf.reshape(tf.gather(tf.reshape(input, [rows * vocabulary]), flatIds(tf.reshape(ids, [rows]) as tf.Tensor1D, vocabulary)), batchShape)
    // logsumexp's arithmetic, its terms kept: exp(x − shift) [...batch, vocab] and its sums [...batch, 1].
    const { shift, exponentials, total } = shiftedExponentials(input, input.rank - 1)
    ;(save as tf.GradSaveFunc)([exponentials, total, ids])
    return {
      value: tf.sub(chosen, tf.reshape(tf.add(tf.log(total), shift), batchShape)),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [savedExponentials, savedTotal, savedIds] = saved as [tf.Tensor, tf.Tensor, tf.Tensor]
        // −dy · softmax everywhere, then dy added at each row's chosen id.
        const dense = tf.reshape(tf.mul(savedExponentials, tf.div(tf.neg(tf.expandDims(dy, -1)), savedTotal)), [rows, vocabulary]) as tf.Tensor2D
        const gradient = addAtIds(dense, tf.reshape(savedIds, [rows]) as tf.Tensor1D, tf.reshape(dy, [rows]) as tf.Tensor1D)
        return [tf.reshape(gradient, savedExponentials.shape), tf.zerosLike(savedIds)]
      },
    }
  })
  return compute(logits, tokenIds)
}

/**
 * `matrix` (`[rows, vocab]`) with `values[r]` added at `(r, ids[r])` for every row: the sparse half of a softmax
 * gradient (`dy · oneHot(id)`). One `tensorScatterUpdate` of one value a row where the backend has the kernel
 * (a copy of the matrix, no one-hot over the vocabulary); else `matrix + oneHot(ids) · values`. Not differentiable
 * (for gradient functions). `ids` int32 `[rows]` in `[0, vocab)`, `values` float32 `[rows]`.
 */
export function addAtIds(matrix: tf.Tensor2D, ids: tf.Tensor1D, values: tf.Tensor1D): tf.Tensor2D {
  const [rows, vocabulary] = matrix.shape
  return tf.tidy(() => {
    if (tf.getKernel('TensorScatterUpdate', tf.getBackend()) === undefined) {
      return tf.add(matrix, tf.mul(tf.oneHot(ids, vocabulary, 1, 0, 'float32'), tf.reshape(values, [rows, 1])))
    }
    const flatIndex = flatIds(ids, vocabulary)
    const flat = tf.reshape(matrix, [rows * vocabulary])
    return tf.reshape(tf.tensorScatterUpdate(flat, tf.reshape(flatIndex, [rows, 1]), tf.add(tf.gather(flat, flatIndex), values)), [rows, vocabulary])
  })
}

/** Each row's id as an index into the flattened `[rows, vocab]` matrix: `r · vocab + ids[r]`. */
function flatIds(ids: tf.Tensor1D, vocabulary: number): tf.Tensor1D {
  return tf.add(tf.mul(tf.range(0, ids.size, 1, 'int32'), tf.scalar(vocabulary, 'int32')), ids)
}

function assertIdsInRange(tokenIds: tf.Tensor, vocabulary: number): void {
  const ids = tokenIds.dataSync()
  for (let index = 0; index < ids.length; index++) {
    const id = ids[index]!
    if (id < 0 || id >= vocabulary) {
      throw new InvalidArgumentError({
        argument: `tokenIds (flat index ${index})`,
        value: id,
        message: `passed to 'tokenLogprobs' must be a token id in [0, ${vocabulary})`,
      })
    }
  }
}
