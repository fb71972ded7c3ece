import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError, parseArgument } from '@ludic/core'
import { constantOf, entropyFromLogits, tokenLogprobs } from '@ludic/tensors'
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
    /**
     * Also return `kl`, the exact KL divergence between the model's and `reference`'s next-token distributions at
     * each response position, summed over the whole vocabulary (both at the sampling `temperature`):
     * `direction` `'reverse'`, KL(π ‖ π_ref) = Σ_v π(v) (log π(v) − log π_ref(v)), or `'forward'`, KL(π_ref ‖ π) =
     * Σ_v π_ref(v) (log π_ref(v) − log π(v)). `reference` (a model of the same vocabulary and width) is a constant:
     * run without gradient; with plain heads on both its logits are computed chunk by chunk beside the model's (and again
     * in the backward pass), otherwise (a head with an adapter or a bias) both are computed whole. Default: none.
     */
    klTo: z
      .strictObject({
        reference: z.custom<CausalLanguageModel>(
          (value) => typeof value === 'object' && value !== null && 'hiddenStates' in value && 'config' in value,
          'must be a CausalLanguageModel',
        ),
        direction: z.enum(['reverse', 'forward']),
      })
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
   * `[batch, responseLength]` the exact KL divergence to `klTo.reference` at each response position, over the whole
   * vocabulary, in `klTo.direction` (with `klTo`); 0 at padding. Differentiable (the model's side).
   */
  kl?: tf.Tensor2D
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
  const { withEntropy, temperature, training, logitsChunkSize, recomputeLayers, valueHead, klTo } = parseArgument(
    sequenceLogprobsOptionsSchema,
    options,
    'options',
  )
  if (valueHead !== undefined) checkValueHeadOf(model, valueHead, 'options.valueHead')
  if (klTo !== undefined) checkReferenceOf(model, klTo.reference)
  const batch = readSequences(model, sequences)
  const { batchSize, responseLength } = batch
  return tf.tidy(() => {
    const predicting = responseHiddenStates(model, batch, { training, recomputeLayers }) // [batch, responseLength, hidden]
    const width = predicting.shape[2]
    const mask = tf.tensor2d(batch.responseMask, [batchSize, responseLength])
    const ids = tf.tensor2d(batch.responseIds, [batchSize, responseLength], 'int32')
    // The reference's hidden states: a constant for the gradient, computed untaped.
    const referenceHidden =
      klTo === undefined
        ? undefined
        : (constantOf(() => responseHiddenStates(klTo.reference, batch, { training: false, recomputeLayers: false }), mask) as tf.Tensor3D)
    const head = model.plainHeadWeight()
    const referenceHead = klTo?.reference.plainHeadWeight()
    let scores: { logprobs: tf.Tensor; entropies?: tf.Tensor; kl?: tf.Tensor }
    if (head === undefined || (klTo !== undefined && referenceHead === undefined)) {
      // A head with an adapter or a bias: its logits whole.
      const logits = temper(model.logitsFromHidden(predicting, training), temperature) // [batch, responseLength, vocab]
      scores = { logprobs: tokenLogprobs(logits, ids), ...(withEntropy ? { entropies: entropyFromLogits(logits) } : {}) }
      if (klTo !== undefined) {
        const referenceLogits = constantOf(() => temper(klTo.reference.logitsFromHidden(referenceHidden!), temperature), mask)
        scores.kl = klOfLogProbabilities(tf.logSoftmax(logits), tf.logSoftmax(referenceLogits), klTo.direction)
      }
    } else {
      const rows = batchSize * responseLength
      const chunk = logitsChunkSize ?? Math.max(1, Math.floor(2 ** 22 / model.config.vocabSize))
      const flat = tf.reshape(predicting, [rows, width]) as tf.Tensor2D
      const reference =
        klTo === undefined
          ? undefined
          : { hidden: tf.reshape(referenceHidden!, [rows, referenceHidden!.shape[2]]) as tf.Tensor2D, weight: referenceHead!, direction: klTo.direction }
      const scored = chunkedHeadScores(flat, tf.reshape(ids, [rows]) as tf.Tensor1D, head, { withEntropy, chunk, temperature, reference })
      const shaped = (values: tf.Tensor) => tf.reshape(values, [batchSize, responseLength])
      scores = {
        logprobs: shaped(scored.logprobs),
        ...(scored.entropies === undefined ? {} : { entropies: shaped(scored.entropies) }),
        ...(scored.kl === undefined ? {} : { kl: shaped(scored.kl) }),
      }
    }
    const logprobs = tf.mul(scores.logprobs, mask) as tf.Tensor2D
    const result: SequenceLogprobs = { logprobs, responseMask: mask }
    if (withEntropy) result.entropies = tf.mul(scores.entropies!, mask) as tf.Tensor2D
    if (scores.kl !== undefined) result.kl = tf.mul(scores.kl, mask) as tf.Tensor2D
    if (valueHead !== undefined) result.values = tf.mul(valueHead.fromHidden(predicting), mask) as tf.Tensor2D // [batch, responseLength]
    return result as unknown as tf.TensorContainer
  }) as unknown as SequenceLogprobs
}

/** `klTo.reference` must read the model's token ids the same way: the same vocabulary and hidden width. */
function checkReferenceOf(model: CausalLanguageModel, reference: CausalLanguageModel): void {
  for (const field of ['vocabSize', 'hiddenSize'] as const) {
    if (reference.config[field] !== model.config[field]) {
      throw new InvalidArgumentError({
        argument: `options.klTo.reference.config.${field}`,
        value: reference.config[field],
        message: `must equal the model's (${model.config[field]}): the KL compares the two distributions token by token`,
      })
    }
  }
}

/**
 * The KL divergence between two distributions given as log-probabilities over the last axis (`policy` differentiable,
 * `reference` a constant): `'reverse'` Σ p (log p − log q), `'forward'` Σ q (log q − log p), p = exp(policy),
 * q = exp(reference) (log-softmaxes of finite logits: every term finite).
 */
function klOfLogProbabilities(policy: tf.Tensor, reference: tf.Tensor, direction: 'reverse' | 'forward'): tf.Tensor {
  const difference = tf.sub(policy, reference)
  return direction === 'reverse' ? tf.sum(tf.mul(tf.exp(policy), difference), -1) : tf.neg(tf.sum(tf.mul(tf.exp(reference), difference), -1))
}

/** The logits of the sampling distribution: `logits / temperature` (the logits themselves at 1). */
function temper<T extends tf.Tensor>(logits: T, temperature: number): T {
  return temperature === 1 ? logits : (tf.div(logits, temperature) as T)
}

/**
 * `log softmax(h Wᵀ / T)[id]` and, with `withEntropy`, the entropy of `softmax(h Wᵀ / T)`, for each row of
 * `hidden` `[rows, width]` with `weight` `[vocab, width]` (T = `temperature`, default 1), `chunk` rows at a time:
 * log p = z − logsumexp(z), z = logits / T. With `reference` (its hidden rows and head weight, constants), also
 * the exact KL to q = softmax(h_ref W_refᵀ / T) over the vocabulary: reverse Σ p (log p − log q), forward
 * Σ q (log q − log p). Only `hidden` (and the ids, and the reference's rows) are saved for the gradient, which
 * recomputes each chunk's logits: d log p / d z = onehot(id) − p, d H / d z = −p (log p + H), d KL / d z =
 * p (log p − log q − KL) (reverse) or p − q (forward), d z / d logits = 1 / T, then d h = g W and, when `weight`
 * is trainable, d W = Σ gᵀ h. A frozen weight (a tied, frozen embedding) gets no gradient.
 */
export function chunkedHeadScores(
  hidden: tf.Tensor2D,
  ids: tf.Tensor1D,
  weight: tf.Variable,
  options: {
    withEntropy: boolean
    chunk: number
    temperature?: number
    reference?: { hidden: tf.Tensor2D; weight: tf.Tensor; direction: 'reverse' | 'forward' } | undefined
  },
): { logprobs: tf.Tensor1D; entropies?: tf.Tensor1D; kl?: tf.Tensor1D } {
  const { withEntropy, chunk, temperature = 1, reference } = options
  const rows = hidden.shape[0]
  const vocabulary = weight.shape[0]!
  // The output's rows: the chosen token's log-prob, then the entropy and the KL when asked for.
  const entropyRow = withEntropy ? 1 : -1
  const klRow = reference === undefined ? -1 : withEntropy ? 2 : 1
  const outputs = 1 + (withEntropy ? 1 : 0) + (reference === undefined ? 0 : 1)
  const starts = Array.from({ length: Math.ceil(rows / chunk) }, (_, index) => index * chunk)
  const sizeOf = (start: number) => Math.min(chunk, rows - start)
  /** The chunk's log-softmax of z = h Wᵀ / T (and the rows it came from). */
  const logSoftmaxOf = (h: tf.Tensor2D, head: tf.Tensor, start: number) => {
    const part = tf.slice(h, [start, 0], [sizeOf(start), h.shape[1]]) // [chunk, width]
    const logits = temper(tf.matMul(part, head as tf.Tensor2D, false, true), temperature) // [chunk, vocab]
    return { part, logProbabilities: tf.sub(logits, tf.logSumExp(logits, -1, true)) } // [chunk, vocab]
  }
  const pieces = (h: tf.Tensor2D, start: number) => logSoftmaxOf(h, weight, start)
  /** The chunk's per-row KL (`klOfLogProbabilities`), from the model's log-softmax and the reference's rows. */
  const klOf = (logProbabilities: tf.Tensor2D, referenceHidden: tf.Tensor2D, start: number) => {
    const referenceLog = logSoftmaxOf(referenceHidden, reference!.weight, start).logProbabilities
    return { kl: klOfLogProbabilities(logProbabilities, referenceLog, reference!.direction), referenceLog } // kl [chunk]
  }
  const trainable = weight.trainable
  const compute = tf.customGrad((...args) => {
    const [h, idsInput, referenceInput] = args as [tf.Tensor2D, tf.Tensor1D, tf.Tensor2D]
    const save = args[args.length - 1] as tf.GradSaveFunc
    const columns = starts.map((start) =>
      tf.tidy(() => {
        const size = sizeOf(start)
        const { logProbabilities } = pieces(h, start)
        const flatIndex = tf.add(tf.mul(tf.range(0, size, 1, 'int32'), tf.scalar(vocabulary, 'int32')), tf.slice(idsInput, [start], [size]))
        const chosen = tf.gather(tf.reshape(logProbabilities, [size * vocabulary]), flatIndex) // [chunk]
        const values: tf.Tensor[] = [chosen]
        if (withEntropy) values.push(tf.neg(tf.sum(tf.mul(tf.exp(logProbabilities), logProbabilities), -1))) // [chunk]
        if (reference !== undefined) values.push(klOf(logProbabilities as tf.Tensor2D, referenceInput, start).kl)
        return tf.stack(values) // [outputs, chunk]
      }),
    )
    save([h, idsInput, referenceInput])
    const value = tf.concat(columns, 1) // [outputs, rows]
    tf.dispose(columns)
    return {
      value,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [savedHidden, savedIds, savedReference] = saved as [tf.Tensor2D, tf.Tensor1D, tf.Tensor2D]
        let weightGradient: tf.Tensor | undefined
        const hiddenGradients = starts.map((start) => {
          const size = sizeOf(start)
          const { hiddenGradient, partWeightGradient } = tf.tidy(() => {
            const { part, logProbabilities } = pieces(savedHidden, start)
            const probabilities = tf.exp(logProbabilities)
            const upstream = tf.slice(dy, [0, start], [outputs, size]) // [outputs, chunk]
            const upstreamRow = (row: number) => tf.reshape(tf.slice(upstream, [row, 0], [1, size]), [size, 1])
            const oneHot = tf.oneHot(tf.slice(savedIds, [start], [size]), vocabulary, 1, 0, 'float32')
            let logitsGradient = tf.mul(tf.sub(oneHot, probabilities), upstreamRow(0))
            if (entropyRow >= 0) {
              const entropy = tf.neg(tf.sum(tf.mul(probabilities, logProbabilities), -1, true)) // [chunk, 1]
              const entropyGradient = tf.mul(tf.neg(probabilities), tf.add(logProbabilities, entropy))
              logitsGradient = tf.add(logitsGradient, tf.mul(entropyGradient, upstreamRow(entropyRow)))
            }
            if (klRow >= 0) {
              const { kl, referenceLog } = klOf(logProbabilities as tf.Tensor2D, savedReference, start)
              const klGradient =
                reference!.direction === 'reverse'
                  ? tf.mul(probabilities, tf.sub(tf.sub(logProbabilities, referenceLog), tf.reshape(kl, [size, 1])))
                  : tf.sub(probabilities, tf.exp(referenceLog))
              logitsGradient = tf.add(logitsGradient, tf.mul(klGradient, upstreamRow(klRow)))
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
        const constants = [tf.zerosLike(savedIds), tf.zerosLike(savedReference)]
        return weightGradient === undefined ? [hiddenGradient, ...constants] : [hiddenGradient, ...constants, weightGradient]
      },
    }
  })
  // Without a reference, a 1-element stand-in keeps one argument list (it is saved, never read).
  const referenceInput = reference?.hidden ?? tf.zeros([1, 1])
  const scored = (trainable ? compute(hidden, ids, referenceInput, weight) : compute(hidden, ids, referenceInput)) as tf.Tensor2D // [outputs, rows]
  const row = (index: number) => tf.reshape(tf.slice(scored, [index, 0], [1, rows]), [rows]) as tf.Tensor1D
  return {
    logprobs: row(0),
    ...(entropyRow >= 0 ? { entropies: row(entropyRow) } : {}),
    ...(klRow >= 0 ? { kl: row(klRow) } : {}),
  }
}
