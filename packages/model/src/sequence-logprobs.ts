import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError, parseArgument, ShapeError } from '@ludic/core'
import { entropyFromLogits, tokenLogprobs } from '@ludic/tensors'
import { z } from 'zod'
import type { CausalLanguageModel } from './model/causal-language-model.js'
import { checkContextLength } from './model/context-length.js'
import { readIntegerMatrix, type IntegerMatrix } from './model/model-inputs.js'

const tokenIdsSchema = z.union([z.instanceof(Int32Array), z.array(z.number().int())])

/** Prompts and responses as ragged token-id lists, one pair per sequence. */
export interface RaggedSequences {
  promptIds: readonly (Int32Array | readonly number[])[]
  responseIds: readonly (Int32Array | readonly number[])[]
}

/**
 * A padded batch in verl's layout: `inputIds` `[batch, promptLength + responseLength]` is the left-padded
 * prompts followed by the right-padded responses; `attentionMask` marks real tokens; the last
 * `responseLength` columns are the responses.
 */
export interface PaddedSequences {
  inputIds: IntegerMatrix
  attentionMask: IntegerMatrix
  responseLength: number
}

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
  })
  .strict()
export type SequenceLogprobsOptions = z.input<typeof sequenceLogprobsOptionsSchema>

export interface SequenceLogprobs {
  /** `[batch, responseLength]` log p_T(response token | prompt, earlier response tokens), p_T = softmax(logits / T); 0 at padding. Differentiable. */
  logprobs: tf.Tensor2D
  /** `[batch, responseLength]` entropies of the same distributions p_T (with `withEntropy`); 0 at padding. Differentiable. */
  entropies?: tf.Tensor2D
  /** `[batch, responseLength]` float32: 1 for response tokens, 0 for padding. */
  responseMask: tf.Tensor2D
}

/**
 * Per-token log-probabilities of response tokens given prompt + response, for policy-gradient losses:
 * `logprobs[b, t] = log softmax(logits / T at the position before response token t)[response token t]`, T the
 * sampling `temperature` (default 1).
 * Sequences are laid out as verl does (prompts left-padded, responses right-padded, positions counted
 * from each prompt's first token), and only the response positions go through the output projection.
 * The result is differentiable with respect to the model's parameters; the caller disposes it.
 */
export function sequenceLogprobs(
  model: CausalLanguageModel,
  sequences: RaggedSequences | PaddedSequences,
  options: SequenceLogprobsOptions = {},
): SequenceLogprobs {
  const { withEntropy, temperature, training, logitsChunkSize, recomputeLayers } = parseArgument(sequenceLogprobsOptionsSchema, options, 'options')
  const batch = 'promptIds' in sequences ? padSequences(sequences, model.config.padTokenId ?? 0) : readPadded(sequences)
  const { inputIds, attentionMask, batchSize, promptLength, responseLength } = batch
  if (promptLength < 1) {
    throw new InvalidArgumentError({
      argument: 'sequences',
      value: promptLength,
      message: 'prompts need at least one token: the first response token is predicted from the last prompt token',
    })
  }
  attentionMask.forEach((mask, row) => {
    const tokens = mask.reduce((count, attended) => count + (attended === 0 ? 0 : 1), 0)
    checkContextLength(model, tokens, { argument: 'sequences', value: row, what: `sequence ${row}: its prompt + response (${tokens} tokens)` })
  })
  return tf.tidy(() => {
    const hidden = model.hiddenStates(inputIds, { attentionMask, training, recomputeLayers }) // [batch, promptLength + responseLength, hidden]
    const width = hidden.shape[2]
    // The hidden state before each response token predicts it: positions promptLength - 1 … end - 1.
    const predicting = tf.slice(hidden, [0, promptLength - 1, 0], [batchSize, responseLength, width]) as tf.Tensor3D // [batch, responseLength, hidden]
    const responseIds = new Int32Array(batchSize * responseLength)
    const responseMask = new Float32Array(batchSize * responseLength)
    for (let row = 0; row < batchSize; row++) {
      for (let step = 0; step < responseLength; step++) {
        const column = promptLength + step
        const attended = attentionMask[row]![column] !== 0
        responseIds[row * responseLength + step] = attended ? inputIds[row]![column]! : 0
        responseMask[row * responseLength + step] = attended ? 1 : 0
      }
    }
    const mask = tf.tensor2d(responseMask, [batchSize, responseLength])
    const ids = tf.tensor2d(responseIds, [batchSize, responseLength], 'int32')
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

interface HostBatch {
  inputIds: Int32Array[]
  attentionMask: Int32Array[]
  batchSize: number
  promptLength: number
  responseLength: number
}

function padSequences(sequences: RaggedSequences, padId: number): HostBatch {
  const prompts = parseArgument(z.array(tokenIdsSchema).min(1), sequences.promptIds, 'sequences.promptIds')
  const responses = parseArgument(z.array(tokenIdsSchema), sequences.responseIds, 'sequences.responseIds')
  if (responses.length !== prompts.length) {
    throw new ShapeError({
      argument: 'sequences.responseIds',
      expected: [prompts.length],
      actual: [responses.length],
      message: 'needs one response per prompt',
    })
  }
  const promptLength = Math.max(...prompts.map((ids) => ids.length))
  const responseLength = Math.max(1, ...responses.map((ids) => ids.length))
  const inputIds: Int32Array[] = []
  const attentionMask: Int32Array[] = []
  prompts.forEach((prompt, row) => {
    const response = responses[row]!
    const ids = new Int32Array(promptLength + responseLength).fill(padId)
    const mask = new Int32Array(promptLength + responseLength)
    ids.set(prompt, promptLength - prompt.length)
    mask.fill(1, promptLength - prompt.length, promptLength)
    ids.set(response, promptLength)
    mask.fill(1, promptLength, promptLength + response.length)
    inputIds.push(ids)
    attentionMask.push(mask)
  })
  return { inputIds, attentionMask, batchSize: prompts.length, promptLength, responseLength }
}

function readPadded(sequences: PaddedSequences): HostBatch {
  const ids = readIntegerMatrix(sequences.inputIds, 'sequences.inputIds')
  const mask = readIntegerMatrix(sequences.attentionMask, 'sequences.attentionMask', [0, 2])
  if (mask.rows !== ids.rows || mask.columns !== ids.columns) {
    throw new ShapeError({
      argument: 'sequences.attentionMask',
      expected: [ids.rows, ids.columns],
      actual: [mask.rows, mask.columns],
      message: 'must have the shape of inputIds',
    })
  }
  const responseLength = sequences.responseLength
  if (!Number.isInteger(responseLength) || responseLength < 1 || responseLength >= ids.columns) {
    throw new InvalidArgumentError({ argument: 'sequences.responseLength', value: responseLength, message: `must be an integer in [1, ${ids.columns})` })
  }
  const rowsOf = (matrix: typeof ids): Int32Array[] =>
    Array.from({ length: matrix.rows }, (_, row) => matrix.data.slice(row * matrix.columns, (row + 1) * matrix.columns))
  return { inputIds: rowsOf(ids), attentionMask: rowsOf(mask), batchSize: ids.rows, promptLength: ids.columns - responseLength, responseLength }
}
