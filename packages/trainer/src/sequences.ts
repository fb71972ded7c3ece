import { distinctRows, yieldToEventLoop } from '@ludic/core'
import * as tf from '@tensorflow/tfjs-core'
import { sequenceLogprobs, type CausalLanguageModel, type ValueHead } from '@ludic/model'

/** A prompt and the response tokens that follow it. */
export interface TokenSequence {
  promptIds: Int32Array
  responseIds: Int32Array
}

/**
 * Right-pads per-sample token values to `[rows, columns]` row-major, the layout of `sequenceLogprobs`
 * (responses right-padded to the longest, at least 1).
 */
export function padRows(rows: readonly ArrayLike<number>[], columns: number): Float32Array {
  const padded = new Float32Array(rows.length * columns)
  rows.forEach((row, index) => padded.set(Array.from(row).slice(0, columns), index * columns))
  return padded
}

export function responseColumns(sequences: readonly TokenSequence[]): number {
  return Math.max(1, ...sequences.map((sequence) => sequence.responseIds.length))
}

/**
 * Per-token log-probabilities of each response under `model` at the sampling `temperature` (default 1: log
 * softmax(logits / T), what `generate` records; no gradient), computed `chunkSize`
 * sequences at a time with the same full forward pass the update differentiates.
 */
export async function responseLogprobs(
  model: CausalLanguageModel,
  sequences: readonly TokenSequence[],
  chunkSize: number,
  options: { temperature?: number } = {},
): Promise<Float32Array[]> {
  return (await scoreResponses(model, sequences, chunkSize, options)).logprobs
}

/**
 * `responseLogprobs`, and with `valueHead` (a critic's head on the same model) its value of every response token from
 * the same forward pass: one pass gives π_old and V for a shared critic.
 */
export async function scoreResponses(
  model: CausalLanguageModel,
  sequences: readonly TokenSequence[],
  chunkSize: number,
  options: { temperature?: number; valueHead?: ValueHead | undefined } = {},
): Promise<{ logprobs: Float32Array[]; values?: Float32Array[] }> {
  const { valueHead, temperature = 1 } = options
  const [logprobs, values] = await responseRows(sequences, chunkSize, valueHead === undefined ? 1 : 2, (chunk) => {
    const result = sequenceLogprobs(model, raggedOf(chunk), { temperature, ...(valueHead === undefined ? {} : { valueHead }) })
    return [result.logprobs, ...(result.values === undefined ? [] : [result.values])]
  })
  return values === undefined ? { logprobs: logprobs! } : { logprobs: logprobs!, values }
}

/** Sequences as the model's ragged input (`sequenceLogprobs`, `sequenceValues`). */
export function raggedOf(sequences: readonly TokenSequence[]): { promptIds: Int32Array[]; responseIds: Int32Array[] } {
  return { promptIds: sequences.map((s) => s.promptIds), responseIds: sequences.map((s) => s.responseIds) }
}

/**
 * Per-token rows of every response from a forward pass without gradient, `chunkSize` sequences at a time: `forward`
 * gives `outputs` `[rows, columns]` tensors for a chunk (run in `tf.tidy`), and each sequence's row of each is cut to
 * its response length from the forward's own layout (one padding, the forward's). A sequence repeated in the batch
 * (the same prompt and response tokens: a small game's states) is computed once (`distinctRows`) and each repeat gets
 * a copy of its rows, so the chunks hold distinct sequences only. Yields to the event loop between chunks. Returns one
 * list of rows per output.
 */
export async function responseRows(
  sequences: readonly TokenSequence[],
  chunkSize: number,
  outputs: number,
  forward: (chunk: readonly TokenSequence[]) => tf.Tensor[],
): Promise<Float32Array[][]> {
  const { first, indexOf } = distinctRows(sequences.length, (row) => [sequences[row]!.promptIds, sequences[row]!.responseIds])
  const distinct = first.map((row) => sequences[row]!)
  const rows: Float32Array[][] = Array.from({ length: outputs }, () => [])
  for (let start = 0; start < distinct.length; start += chunkSize) {
    const chunk = distinct.slice(start, start + chunkSize)
    const tensors = tf.tidy(() => forward(chunk))
    const columns = tensors[0]!.shape[1]!
    const data = (await Promise.all(tensors.map((tensor) => tensor.data()))) as Float32Array[]
    tf.dispose(tensors)
    chunk.forEach((sequence, row) => {
      data.forEach((values, output) => rows[output]!.push(values.slice(row * columns, row * columns + sequence.responseIds.length)))
    })
    if (start + chunkSize < distinct.length) await yieldToEventLoop()
  }
  // The first of each distinct sequence takes its rows, each repeat a copy.
  return rows.map((computed) => Array.from(indexOf, (index, row) => (first[index] === row ? computed[index]! : computed[index]!.slice())))
}
