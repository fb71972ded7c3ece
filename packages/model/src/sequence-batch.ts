import * as tf from '@tensorflow/tfjs-core'
import { distinctRows, InvalidArgumentError, parseArgument, ShapeError } from '@ludic/core'
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

/** A batch on the host, in verl's layout, with its response tokens read out. */
export interface ResponseBatch {
  inputIds: Int32Array[]
  attentionMask: Int32Array[]
  batchSize: number
  promptLength: number
  responseLength: number
  /** `[batch · responseLength]` row-major: each response token, 0 at padding. */
  responseIds: Int32Array
  /** `[batch · responseLength]` row-major: 1 for response tokens, 0 for padding. */
  responseMask: Float32Array
}

/**
 * Reads `sequences` (ragged, padded here with the model's pad token, or already padded) into verl's layout and
 * checks it: at least one prompt token (the first response token is predicted from the last prompt token), and
 * each row's prompt + response within the model's context.
 */
export function readSequences(model: CausalLanguageModel, sequences: RaggedSequences | PaddedSequences): ResponseBatch {
  if (typeof sequences !== 'object' || sequences === null) {
    throw new InvalidArgumentError({
      argument: 'sequences',
      value: sequences,
      message: 'must be { promptIds, responseIds } or { inputIds, attentionMask, responseLength }',
    })
  }
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
  return { ...batch, responseIds, responseMask }
}

/**
 * The final hidden states that predict the response tokens, `[batch, responseLength, hidden]`: the state
 * before each response token (positions `promptLength - 1 … end - 1`), where its logits are read and, for a
 * critic, V(s_t) — verl's `values[:, -responseLength - 1:-1]`. Differentiable; one forward pass of the model.
 *
 * Identical rows (the same tokens and mask: a small game's states, a supervised set's repeated examples) go
 * through the model once (`distinctRows`): the forward runs on the distinct rows and `tf.gather` copies their states
 * to every row, so the gradient of a repeated row is the sum of its copies' (the gather's gradient). The states are
 * those of the whole batch to float rounding (a product over fewer rows may sum in another order). Not when the
 * forward draws randomness — `training` with an unmerged adapter that draws dropout — where each row draws its own.
 */
export function responseHiddenStates(model: CausalLanguageModel, batch: ResponseBatch, options: { training: boolean; recomputeLayers: boolean }): tf.Tensor3D {
  const { inputIds, attentionMask, batchSize, promptLength, responseLength } = batch
  const drawsDropout = options.training && model.stochasticLayers().length > 0
  const distinct = drawsDropout ? undefined : distinctRows(batchSize, (row) => [inputIds[row]!, attentionMask[row]!])
  return tf.tidy(() => {
    const rows = distinct?.first ?? inputIds.map((_, row) => row)
    const hidden = model.hiddenStates(
      rows.map((row) => inputIds[row]!),
      { attentionMask: rows.map((row) => attentionMask[row]!), ...options },
    ) // [rows, promptLength + responseLength, hidden]
    const predicting = tf.slice(hidden, [0, promptLength - 1, 0], [rows.length, responseLength, hidden.shape[2]]) as tf.Tensor3D // [rows, responseLength, hidden]
    return rows.length === batchSize ? predicting : (tf.gather(predicting, tf.tensor1d(distinct!.indexOf, 'int32')) as tf.Tensor3D) // [batch, responseLength, hidden]
  })
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
