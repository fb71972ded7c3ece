import * as tf from '@tensorflow/tfjs-core'
import { parseArgument } from '@ludic/core'
import { entropyFromLogits, tokenLogprobs } from '@ludic/tensors'
import { z } from 'zod'
import { checkValueHeadOf, type ValueHead } from './heads/scalar-heads.js'
import type { CausalLanguageModel } from './model/causal-language-model.js'
import { readSequences, responseHiddenStates, type PaddedSequences, type RaggedSequences } from './sequence-batch.js'

export type { PaddedSequences, RaggedSequences } from './sequence-batch.js'

export const sequenceLogprobsOptionsSchema = z
  .object({
    /** Also return the entropy of each response position's next-token distribution. Default: false. */
    withEntropy: z.boolean().default(false),
    /**
     * The sampling temperature T: the logits are divided by it before the log-softmax and the entropy, so the
     * log-probs and entropies are those of softmax(logits / T), the distribution the tokens were sampled from
     * (`generate` records the same log-probs), and so is the gradient (verl's `logits.div_(temperature)`, TRL's
     * `logits / temperature`). Positive and finite. Default: 1.
     */
    temperature: z.number().positive().refine(Number.isFinite, 'must be finite').default(1),
    /** Training mode (LoRA dropout). Default: false. */
    training: z.boolean().default(false),
    /**
     * Response positions whose logits over the vocabulary are alive at once (forward and backward): the
     * log-softmax is computed in chunks of this many rows, so the `[positions, vocab]` float32 block is never
     * whole. Default: as many as make 2²² logits (16 MiB; 27 positions at a 151,936-token vocabulary).
     */
    logitsChunkSize: z.number().int().positive().optional(),
    /**
     * Recompute each layer during the backward pass instead of keeping its activations (see the model's
     * `ForwardOptions.recomputeLayers`): less memory for one more forward pass. Default: false.
     */
    recomputeLayers: z.boolean().default(false),
    /**
     * A value head of this model (`createValueHead(model)`): also return `values`, V(s_t) of each response
     * token from the same forward pass's hidden states (the critic on the policy's trunk). Default: none.
     */
    valueHead: z
      .custom<ValueHead>((value) => typeof value === 'object' && value !== null && 'weight' in value, 'must be a value head (createValueHead(model))')
      .optional(),
  })
  .strict()
export type SequenceLogprobsOptions = z.input<typeof sequenceLogprobsOptionsSchema>

export interface SequenceLogprobs {
  /** `[batch, responseLength]` log p_T(response token | prompt, earlier response tokens), p_T = softmax(logits / T); 0 at padding. Differentiable. */
  logprobs: tf.Tensor2D
  /** `[batch, responseLength]` entropies of the same distributions p_T (with `withEntropy`); 0 at padding. Differentiable. */
  entropies?: tf.Tensor2D
  /**
   * `[batch, responseLength]` values V(s_t) (with `valueHead`): the head read at the state before each response
   * token, the position whose logits give that token's log-prob; 0 at padding. Differentiable (head and trunk).
   */
  values?: tf.Tensor2D
  /** `[batch, responseLength]` float32: 1 for response tokens, 0 for padding. */
  responseMask: tf.Tensor2D
}

/**
 * Per-token log-probabilities of response tokens given prompt + response, for policy-gradient losses:
 * `logprobs[b, t] = log softmax(logits / T at the position before response token t)[response token t]`, T the
 * sampling `temperature` (default 1).
 * Sequences are laid out as verl does (prompts left-padded, responses right-padded, positions counted
 * from each prompt's first token), and only the response positions go through the output projection.
 * With `valueHead`, the same forward pass also gives each response token's value (a critic sharing the
 * policy's trunk). The result is differentiable with respect to the model's parameters; the caller disposes it.
 */
export function sequenceLogprobs(
  model: CausalLanguageModel,
  sequences: RaggedSequences | PaddedSequences,
  options: SequenceLogprobsOptions & { valueHead: ValueHead },
): SequenceLogprobs & { values: tf.Tensor2D }
export function sequenceLogprobs(model: CausalLanguageModel, sequences: RaggedSequences | PaddedSequences, options?: SequenceLogprobsOptions): SequenceLogprobs
export function sequenceLogprobs(
  model: CausalLanguageModel,
  sequences: RaggedSequences | PaddedSequences,
  options: SequenceLogprobsOptions = {},
): SequenceLogprobs {
  const { withEntropy, temperature, training, logitsChunkSize, recomputeLayers, valueHead } = parseArgument(sequenceLogprobsOptionsSchema, options, 'options')
  if (valueHead !== undefined) checkValueHeadOf(model, valueHead, 'options.valueHead')
  const batch = readSequences(model, sequences)
  const { batchSize, responseLength } = batch
  return tf.tidy(() => {
    const predicting = responseHiddenStates(model, batch, { training, recomputeLayers }) // [batch, responseLength, hidden]
    const width = predicting.shape[2]
    const mask = tf.tensor2d(batch.responseMask, [batchSize, responseLength])
    const ids = tf.tensor2d(batch.responseIds, [batchSize, responseLength], 'int32')
    const head = model.plainHeadWeight()
    let scores: { logprobs: tf.Tensor; entropies?: tf.Tensor }
    if (head === undefined) {
      // A head with an adapter or a bias: its logits whole.
      const logits = temper(model.logitsFromHidden(predicting, training), temperature) // [batch, responseLength, vocab]
      scores = { logprobs: tokenLogprobs(logits, ids), ...(withEntropy ? { entropies: entropyFromLogits(logits) } : {}) }
    } else {
      const rows = batchSize * responseLength
      const chunk = logitsChunkSize ?? Math.max(1, Math.floor(2 ** 22 / model.config.vocabSize))
      const flat = tf.reshape(predicting, [rows, width]) as tf.Tensor2D
      const scored = chunkedHeadScores(flat, tf.reshape(ids, [rows]) as tf.Tensor1D, head, { withEntropy, chunk, temperature })
      scores = {
        logprobs: tf.reshape(scored.logprobs, [batchSize, responseLength]),
        ...(scored.entropies === undefined ? {} : { entropies: tf.reshape(scored.entropies, [batchSize, responseLength]) }),
      }
    }
    const logprobs = tf.mul(scores.logprobs, mask) as tf.Tensor2D
    const result: SequenceLogprobs = { logprobs, responseMask: mask }
    if (withEntropy) result.entropies = tf.mul(scores.entropies!, mask) as tf.Tensor2D
    if (valueHead !== undefined) result.values = tf.mul(valueHead.fromHidden(predicting), mask) as tf.Tensor2D // [batch, responseLength]
    return result as unknown as tf.TensorContainer
  }) as unknown as SequenceLogprobs
}

/** The logits of the sampling distribution: `logits / temperature` (the logits themselves at 1). */
function temper<T extends tf.Tensor>(logits: T, temperature: number): T {
  return temperature === 1 ? logits : (tf.div(logits, temperature) as T)
}

/**
 * `log softmax(h Wᵀ / T)[id]` and, with `withEntropy`, the entropy of `softmax(h Wᵀ / T)`, for each row of
 * `hidden` `[rows, width]` with `weight` `[vocab, width]` (T = `temperature`, default 1), `chunk` rows at a time:
 * log p = z − logsumexp(z), z = logits / T. Only `hidden` (and the ids) are saved for the gradient, which
 * recomputes each chunk's logits: d log p / d z = onehot(id) − p, d H / d z = −p (log p + H), d z / d logits =
 * 1 / T, then d h = g W and, when `weight` is trainable, d W = Σ gᵀ h. A frozen weight (a tied, frozen
 * embedding) gets no gradient.
 */
export function chunkedHeadScores(
  hidden: tf.Tensor2D,
  ids: tf.Tensor1D,
  weight: tf.Variable,
  options: { withEntropy: boolean; chunk: number; temperature?: number },
): { logprobs: tf.Tensor1D; entropies?: tf.Tensor1D } {
  const { withEntropy, chunk, temperature = 1 } = options
  const [rows, width] = hidden.shape
  const vocabulary = weight.shape[0]!
  const starts = Array.from({ length: Math.ceil(rows / chunk) }, (_, index) => index * chunk)
  const sizeOf = (start: number) => Math.min(chunk, rows - start)
  /** The chunk's logits, their log-softmax and what the forward pass needs. */
  const pieces = (h: tf.Tensor2D, start: number) => {
    const part = tf.slice(h, [start, 0], [sizeOf(start), width]) // [chunk, width]
    const logits = temper(tf.matMul(part, weight, false, true), temperature) // [chunk, vocab]
    const logProbabilities = tf.sub(logits, tf.logSumExp(logits, -1, true)) // [chunk, vocab]
    return { part, logProbabilities }
  }
  const trainable = weight.trainable
  const compute = tf.customGrad((...args) => {
    const [h, idsInput] = args as [tf.Tensor2D, tf.Tensor1D]
    const save = args[args.length - 1] as tf.GradSaveFunc
    const columns = starts.map((start) =>
      tf.tidy(() => {
        const size = sizeOf(start)
        const { logProbabilities } = pieces(h, start)
        const flatIndex = tf.add(tf.mul(tf.range(0, size, 1, 'int32'), tf.scalar(vocabulary, 'int32')), tf.slice(idsInput, [start], [size]))
        const chosen = tf.gather(tf.reshape(logProbabilities, [size * vocabulary]), flatIndex) // [chunk]
        if (!withEntropy) return tf.expandDims(chosen, 0)
        const entropy = tf.neg(tf.sum(tf.mul(tf.exp(logProbabilities), logProbabilities), -1)) // [chunk]
        return tf.stack([chosen, entropy]) // [2, chunk]
      }),
    )
    save([h, idsInput])
    const value = tf.concat(columns, 1) // [1 or 2, rows]
    tf.dispose(columns)
    return {
      value,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [savedHidden, savedIds] = saved as [tf.Tensor2D, tf.Tensor1D]
        let weightGradient: tf.Tensor | undefined
        const hiddenGradients = starts.map((start) => {
          const size = sizeOf(start)
          const { hiddenGradient, partWeightGradient } = tf.tidy(() => {
            const { part, logProbabilities } = pieces(savedHidden, start)
            const probabilities = tf.exp(logProbabilities)
            const upstream = tf.slice(dy, [0, start], [dy.shape[0]!, size]) // [1 or 2, chunk]
            const oneHot = tf.oneHot(tf.slice(savedIds, [start], [size]), vocabulary, 1, 0, 'float32')
            let logitsGradient = tf.mul(tf.sub(oneHot, probabilities), tf.reshape(tf.slice(upstream, [0, 0], [1, size]), [size, 1]))
            if (withEntropy) {
              const entropy = tf.neg(tf.sum(tf.mul(probabilities, logProbabilities), -1, true)) // [chunk, 1]
              const entropyGradient = tf.mul(tf.neg(probabilities), tf.add(logProbabilities, entropy))
              logitsGradient = tf.add(logitsGradient, tf.mul(entropyGradient, tf.reshape(tf.slice(upstream, [1, 0], [1, size]), [size, 1])))
            }
            logitsGradient = temper(logitsGradient, temperature) // through z = logits / T
            return {
              hiddenGradient: tf.matMul(logitsGradient, weight), // [chunk, width]
              partWeightGradient: trainable ? tf.matMul(logitsGradient, part, true, false) : undefined, // [vocab, width]
            }
          })
          if (partWeightGradient !== undefined) {
            const total: tf.Tensor = weightGradient === undefined ? partWeightGradient : tf.add(weightGradient, partWeightGradient)
            if (weightGradient !== undefined) tf.dispose([weightGradient, partWeightGradient])
            weightGradient = total
          }
          return hiddenGradient
        })
        const hiddenGradient = tf.concat(hiddenGradients, 0)
        tf.dispose(hiddenGradients)
        return weightGradient === undefined ? [hiddenGradient, tf.zerosLike(savedIds)] : [hiddenGradient, tf.zerosLike(savedIds), weightGradient]
      },
    }
  })
  const scored = (trainable ? compute(hidden, ids, weight) : compute(hidden, ids)) as tf.Tensor2D // [1 or 2, rows]
  const logprobs = tf.reshape(tf.slice(scored, [0, 0], [1, rows]), [rows]) as tf.Tensor1D
  if (!withEntropy) return { logprobs }
  return { logprobs, entropies: tf.reshape(tf.slice(scored, [1, 0], [1, rows]), [rows]) as tf.Tensor1D }
}
