import { yieldToEventLoop } from '@ludic/core'
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
  const logprobs: Float32Array[] = []
  const values: Float32Array[] = []
  for (let start = 0; start < sequences.length; start += chunkSize) {
    const chunk = sequences.slice(start, start + chunkSize)
    const scored = tf.tidy(() => {
      const result = sequenceLogprobs(
        model,
        { promptIds: chunk.map((s) => s.promptIds), responseIds: chunk.map((s) => s.responseIds) },
        { temperature: options.temperature ?? 1, ...(options.valueHead === undefined ? {} : { valueHead: options.valueHead }) },
      )
      return [result.logprobs, ...(result.values === undefined ? [] : [result.values])]
    })
    // Rows are cut from the forward's own layout (its width): one padding, the forward's.
    const columns = scored[0]!.shape[1]!
    const data = (await Promise.all(scored.map((tensor) => tensor.data()))) as Float32Array[]
    tf.dispose(scored)
    chunk.forEach((sequence, row) => {
      logprobs.push(data[0]!.slice(row * columns, row * columns + sequence.responseIds.length))
      if (data[1] !== undefined) values.push(data[1].slice(row * columns, row * columns + sequence.responseIds.length))
    })
    if (start + chunkSize < sequences.length) await yieldToEventLoop()
  }
  return options.valueHead === undefined ? { logprobs } : { logprobs, values }
}
