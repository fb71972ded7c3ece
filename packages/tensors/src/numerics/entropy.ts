import * as tf from '@tensorflow/tfjs-core'
import { assertFloat, assertTensor } from './checks.js'
import { logsumexp } from './log-softmax.js'

/**
 * Entropy of the categorical distribution of each row of logits, along the last axis: the same value
 * as verl's `entropy_from_logits` (`logsumexp(logits) - sum(softmax(logits) * logits)`), computed as
 * `-sum(p * logp)` with `logp = logits - logsumexp(logits)`, which does not cancel two large numbers
 * in float32. `-Infinity` logits (masked tokens) contribute nothing; NaN or +Infinity give NaN.
 */
export function entropyFromLogits(logits: tf.Tensor): tf.Tensor {
  assertTensor(logits, 'logits', 'entropyFromLogits')
  assertFloat(logits, 'logits', 'entropyFromLogits')
  return compute(logits)
}

/** The masked positions (`-Infinity` logits), and p·log p with them set to 0. */
function terms(logits: tf.Tensor): { probabilities: tf.Tensor; logProbabilities: tf.Tensor; masked: tf.Tensor; weighted: tf.Tensor } {
  const logProbabilities = tf.sub(logits, logsumexp(logits, -1, true))
  const probabilities = tf.exp(logProbabilities)
  // Only -Infinity marks a masked token; NaN and +Infinity logits propagate as NaN, visibly.
  const masked = tf.logicalAnd(tf.isInf(logits), tf.less(logits, 0))
  const weighted = tf.where(masked, tf.zerosLike(logits), tf.mul(probabilities, logProbabilities))
  return { probabilities, logProbabilities, masked, weighted }
}

// dH/dx_j = -p_j (log p_j + H), written out so masked tokens get 0 rather than 0 · -Infinity.
const compute = tf.customGrad((logitsInput, save) => {
  const logits = logitsInput as tf.Tensor
  const entropy = tf.tidy(() => tf.neg(tf.sum(terms(logits).weighted, -1)))
  ;(save as tf.GradSaveFunc)([logits, entropy])
  return {
    value: entropy,
    gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
      const [savedLogits, savedEntropy] = saved as [tf.Tensor, tf.Tensor]
      const { probabilities, logProbabilities, masked } = terms(savedLogits)
      const gradient = tf.mul(tf.neg(probabilities), tf.add(logProbabilities, tf.expandDims(savedEntropy, -1)))
      return [tf.mul(tf.where(masked, tf.zerosLike(gradient), gradient), tf.expandDims(dy, -1))]
    },
  }
})
