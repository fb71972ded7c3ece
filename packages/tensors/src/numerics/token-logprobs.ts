import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError, ShapeError } from '@ludic/core'
import { assertFloat, assertTensor } from './checks.js'
import { logsumexp } from './log-softmax.js'

/**
 * Log-probability of each chosen token: `logits[..., t, tokenIds[..., t]] - logsumexp(logits[..., t, :])`.
 *
 * `logits` is `[...batch, vocab]` float32, `tokenIds` is `[...batch]` int32 with ids in `[0, vocab)`.
 * Returns `[...batch]`. The gradient with respect to the logits is `dy * (oneHot(id) - softmax)`, written
 * directly so no scatter (`UnsortedSegmentSum`) over the vocabulary is needed.
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
    const flatLogits = tf.reshape(input, [rows * vocabulary])
    const flatIndex = tf.add(tf.mul(tf.range(0, rows, 1, 'int32'), tf.scalar(vocabulary, 'int32')), tf.reshape(ids, [rows]))
    const chosen = tf.reshape(tf.gather(flatLogits, flatIndex), batchShape)
    const normaliser = logsumexp(input, -1, true) // [...batch, 1]: kept for the backward pass, not recomputed there
    ;(save as tf.GradSaveFunc)([input, ids, normaliser])
    return {
      value: tf.sub(chosen, tf.reshape(normaliser, batchShape)),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [savedLogits, savedIds, savedNormaliser] = saved as [tf.Tensor, tf.Tensor, tf.Tensor]
        const probabilities = tf.exp(tf.sub(savedLogits, savedNormaliser))
        const oneHot = tf.oneHot(savedIds, vocabulary, 1, 0, 'float32')
        return [tf.mul(tf.sub(oneHot, probabilities), tf.expandDims(dy, -1)), tf.zerosLike(savedIds)]
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
