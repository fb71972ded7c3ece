import * as tf from '@tensorflow/tfjs-core'
import { assertFloat, assertTensor } from './checks.js'
import { logsumexp } from './log-softmax.js'

/**
 * Entropy of the categorical distribution of each row of logits, along the last axis: the same value
 * as verl's `entropy_from_logits` (`logsumexp(logits) - sum(softmax(logits) * logits)`), computed as
 * `-sum(p * logp)` with `logp = logits - logsumexp(logits)`, which does not cancel two large numbers
 * in float32. `-Infinity` logits (masked tokens) contribute nothing rather than NaN.
 */
export function entropyFromLogits(logits: tf.Tensor): tf.Tensor {
  assertTensor(logits, 'logits', 'entropyFromLogits')
  assertFloat(logits, 'logits', 'entropyFromLogits')
  return tf.tidy(() => {
    const logProbabilities = tf.sub(logits, logsumexp(logits, -1, true))
    const probabilities = tf.exp(logProbabilities)
    const finite = tf.isFinite(logits)
    const weighted = tf.where(finite, tf.mul(probabilities, logProbabilities), tf.zerosLike(logits))
    return tf.neg(tf.sum(weighted, -1))
  })
}
