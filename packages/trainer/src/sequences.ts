import { yieldToEventLoop } from '@ludic/core'
import * as tf from '@tensorflow/tfjs-core'
import { sequenceLogprobs, type CausalLanguageModel } from '@ludic/model'

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
  const result: Float32Array[] = []
  for (let start = 0; start < sequences.length; start += chunkSize) {
    const chunk = sequences.slice(start, start + chunkSize)
    const columns = responseColumns(chunk)
    const logprobs = tf.tidy(
      () =>
        sequenceLogprobs(
          model,
          { promptIds: chunk.map((s) => s.promptIds), responseIds: chunk.map((s) => s.responseIds) },
          { temperature: options.temperature ?? 1 },
        ).logprobs,
    )
    const values = (await logprobs.data()) as Float32Array
    logprobs.dispose()
    chunk.forEach((sequence, row) => result.push(values.slice(row * columns, row * columns + sequence.responseIds.length)))
    if (start + chunkSize < sequences.length) await yieldToEventLoop()
  }
  return result
}
