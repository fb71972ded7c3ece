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
    /** Training mode (LoRA dropout). Default: false. */
    training: z.boolean().default(false),
  })
  .strict()
export type SequenceLogprobsOptions = z.input<typeof sequenceLogprobsOptionsSchema>

export interface SequenceLogprobs {
  /** `[batch, responseLength]` log p(response token | prompt, earlier response tokens); 0 at padding. Differentiable. */
  logprobs: tf.Tensor2D
  /** `[batch, responseLength]` entropies of the same distributions (with `withEntropy`); 0 at padding. Differentiable. */
  entropies?: tf.Tensor2D
  /** `[batch, responseLength]` float32: 1 for response tokens, 0 for padding. */
  responseMask: tf.Tensor2D
}

/**
 * Per-token log-probabilities of response tokens given prompt + response, for policy-gradient losses:
 * `logprobs[b, t] = log softmax(logits at the position before response token t)[response token t]`.
 * Sequences are laid out as verl does (prompts left-padded, responses right-padded, positions counted
 * from each prompt's first token), and only the response positions go through the output projection.
 * The result is differentiable with respect to the model's parameters; the caller disposes it.
 */
export function sequenceLogprobs(
  model: CausalLanguageModel,
  sequences: RaggedSequences | PaddedSequences,
  options: SequenceLogprobsOptions = {},
): SequenceLogprobs {
  const { withEntropy, training } = parseArgument(sequenceLogprobsOptionsSchema, options, 'options')
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
    const hidden = model.hiddenStates(inputIds, { attentionMask, training }) // [batch, promptLength + responseLength, hidden]
    const width = hidden.shape[2]
    // The hidden state before each response token predicts it: positions promptLength - 1 … end - 1.
    const predicting = tf.slice(hidden, [0, promptLength - 1, 0], [batchSize, responseLength, width]) as tf.Tensor3D // [batch, responseLength, hidden]
    const logits = model.logitsFromHidden(predicting, training) // [batch, responseLength, vocab]
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
    const logprobs = tf.mul(tokenLogprobs(logits, tf.tensor2d(responseIds, [batchSize, responseLength], 'int32')), mask) as tf.Tensor2D
    const result: SequenceLogprobs = { logprobs, responseMask: mask }
    if (withEntropy) result.entropies = tf.mul(entropyFromLogits(logits), mask) as tf.Tensor2D
    return result as unknown as tf.TensorContainer
  }) as unknown as SequenceLogprobs
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
