import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError, ShapeError } from '@ludic/core'
import { assertFloat, assertTensor } from './checks.js'

/**
 * Log-probability of each chosen token: `logits[..., t, tokenIds[..., t]] - logsumexp(logits[..., t, :])`.
 *
 * `logits` is `[...batch, vocab]` float32, `tokenIds` is `[...batch]` int32 with ids in `[0, vocab)`.
 * Returns `[...batch]`. The gradient with respect to the logits, `dy · (oneHot(id) − softmax)`, is written
 * out: the forward pass keeps `exp(logits − max)` and its row sums (the softmax's numerator and denominator,
 * which logsumexp computes anyway), so the backward pass is one dense product `−dy · e / Σe` and `dy` added at
 * the chosen ids (`tensorScatterUpdate` of one value a row) — no `exp` again and no one-hot over the
 * vocabulary. Forward values are logsumexp's bit for bit. Backends without `TensorScatterUpdate` recompute
 * the softmax from the logits and subtract it from a one-hot.
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
  const scatter = tf.getKernel('TensorScatterUpdate', tf.getBackend()) !== undefined
  // tokenIds goes through customGrad as an input (with no gradient of its own) rather than a closure,
  // so the backward pass keeps it alive even when the caller disposes it after the forward pass.
  const compute = tf.customGrad((logitsInput, idsInput, save) => {
    const input = logitsInput as tf.Tensor
    const ids = idsInput as tf.Tensor
    const rows = tokenIds.size
    const flatIndex = tf.add(tf.mul(tf.range(0, rows, 1, 'int32'), tf.scalar(vocabulary, 'int32')), tf.reshape(ids, [rows]))
    const chosen = tf.reshape(tf.gather(tf.reshape(input, [rows * vocabulary]), flatIndex), batchShape)
    // logsumexp's arithmetic (log-softmax.ts), its terms kept: all -Infinity rows shift by 0, not by -Infinity.
    const maximum = tf.max(input, -1, true)
    const shift = tf.where(tf.isFinite(maximum), maximum, tf.zerosLike(maximum))
    const exponentials = tf.exp(tf.sub(input, shift)) // [...batch, vocab]
    const total = tf.sum(exponentials, -1, true) // [...batch, 1]
    const normaliser = tf.add(tf.log(total), shift)
    ;(save as tf.GradSaveFunc)(scatter ? [exponentials, total, flatIndex, ids] : [input, normaliser, flatIndex, ids])
    return {
      value: tf.sub(chosen, tf.reshape(normaliser, batchShape)),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [first, second, savedIndex, savedIds] = saved as [tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]
        if (!scatter) {
          const probabilities = tf.exp(tf.sub(first, second))
          const oneHot = tf.oneHot(savedIds, vocabulary, 1, 0, 'float32')
          return [tf.mul(tf.sub(oneHot, probabilities), tf.expandDims(dy, -1)), tf.zerosLike(savedIds)]
        }
        // −dy · softmax everywhere, then dy added at each row's chosen id.
        const dense = tf.reshape(tf.mul(first, tf.div(tf.neg(tf.expandDims(dy, -1)), second)), [rows * vocabulary])
        const atChosen = tf.add(tf.gather(dense, savedIndex), tf.reshape(dy, [rows]))
        const gradient = tf.tensorScatterUpdate(dense, tf.reshape(savedIndex, [rows, 1]), atChosen)
        return [tf.reshape(gradient, first.shape), tf.zerosLike(savedIds)]
      },
    }
  })
  return compute(logits, tokenIds)
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
