import * as tf from '@tensorflow/tfjs-core'
import { parseArgument } from '@ludic/core'
import { z } from 'zod'
import { checkValueHeadOf, type ValueHead } from './heads/scalar-heads.js'
import type { CausalLanguageModel } from './model/causal-language-model.js'
import { readSequences, responseHiddenStates, type PaddedSequences, type RaggedSequences } from './sequence-batch.js'

export const sequenceValuesOptionsSchema = z
  .object({
    /** Training mode (LoRA dropout). Default: false. */
    training: z.boolean().default(false),
    /**
     * Recompute each layer during the backward pass instead of keeping its activations (see the model's
     * `ForwardOptions.recomputeLayers`): less memory for one more forward pass. Default: false.
     */
    recomputeLayers: z.boolean().default(false),
  })
  .strict()
export type SequenceValuesOptions = z.input<typeof sequenceValuesOptionsSchema>

export interface SequenceValues {
  /**
   * `[batch, responseLength]` values V(s_t): the head read at the state before each response token (the position
   * whose logits give that token's log-prob); 0 at padding. Differentiable (head and trunk).
   */
  values: tf.Tensor2D
  /** `[batch, responseLength]` float32: 1 for response tokens, 0 for padding. */
  responseMask: tf.Tensor2D
}

/**
 * Per-token values of response tokens from a critic — a model with a value head, e.g. `createCriticModel(policy)`:
 * `values[b, t] = score · h`, `h` the final hidden state before response token t, as verl's critic reads
 * `values[:, -responseLength - 1:-1]`. Sequences in `sequenceLogprobs`' layout (ragged, or padded as verl), so the
 * values line up with the log-probs token for token. No logits are computed (no output projection). The result is
 * differentiable with respect to the head and the trunk; the caller disposes it.
 */
export function sequenceValues(
  model: CausalLanguageModel,
  valueHead: ValueHead,
  sequences: RaggedSequences | PaddedSequences,
  options: SequenceValuesOptions = {},
): SequenceValues {
  const { training, recomputeLayers } = parseArgument(sequenceValuesOptionsSchema, options, 'options')
  checkValueHeadOf(model, valueHead, 'valueHead')
  const batch = readSequences(model, sequences)
  const { batchSize, responseLength } = batch
  return tf.tidy(() => {
    const predicting = responseHiddenStates(model, batch, { training, recomputeLayers }) // [batch, responseLength, hidden]
    const responseMask = tf.tensor2d(batch.responseMask, [batchSize, responseLength])
    const values = tf.mul(valueHead.fromHidden(predicting), responseMask) as tf.Tensor2D // [batch, responseLength]
    return { values, responseMask }
  })
}
