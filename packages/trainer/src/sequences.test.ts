import * as tf from '@tensorflow/tfjs-core'
import { sequenceLogprobs } from '@ludic/model'
import { describe, expect, it } from 'vitest'
import { raggedOf, responseLogprobs, responseRows, type TokenSequence } from './sequences.js'
import { createTestModel, useBackendAndDirectory } from './test/support.js'

useBackendAndDirectory('ludic-sequences-')

const sequence = (promptIds: number[], responseIds: number[]): TokenSequence => ({
  promptIds: Int32Array.from(promptIds),
  responseIds: Int32Array.from(responseIds),
})
// Rows 0, 2 and 5 are one sequence, rows 1 and 4 another; row 3 and row 6 are their own.
const batch = [
  sequence([3, 7, 1], [5, 2]),
  sequence([9], [10, 0, 3]),
  sequence([3, 7, 1], [5, 2]),
  sequence([3, 7, 2], [5, 2]),
  sequence([9], [10, 0, 3]),
  sequence([3, 7, 1], [5, 2]),
  sequence([3, 7, 1], [5]),
]

describe('responseRows', () => {
  it('runs the forward on the distinct sequences only, in chunks, and gives each sequence its own copy of its rows', async () => {
    const chunks: number[][][] = []
    // A forward that marks each row: 100 · (distinct sequence's first prompt token + its response length) + column.
    const rows = await responseRows(batch, 2, 2, (chunk) => {
      chunks.push(chunk.map((item) => [...item.promptIds, -1, ...item.responseIds]))
      const columns = Math.max(...chunk.map((item) => item.responseIds.length))
      const marks = chunk.flatMap((item) =>
        Array.from({ length: columns }, (_, column) => 100 * (item.promptIds.at(-1)! + 10 * item.responseIds.length) + column),
      )
      return [
        tf.tensor2d(marks, [chunk.length, columns]),
        tf.tensor2d(
          marks.map((mark) => -mark),
          [chunk.length, columns],
        ),
      ]
    })
    expect(chunks).toEqual([
      [
        [3, 7, 1, -1, 5, 2],
        [9, -1, 10, 0, 3],
      ],
      [
        [3, 7, 2, -1, 5, 2],
        [3, 7, 1, -1, 5],
      ],
    ])
    const expected = batch.map((item) => Array.from(item.responseIds, (_, column) => 100 * (item.promptIds.at(-1)! + 10 * item.responseIds.length) + column))
    expect(rows[0]!.map((row) => Array.from(row))).toEqual(expected)
    expect(rows[1]!.map((row) => Array.from(row))).toEqual(expected.map((row) => row.map((mark) => -mark)))
    rows[0]![0]![0] = 0 // a repeat's row is its own
    expect(rows[0]![2]![0]).toBe(expected[2]![0])
  })

  it('keeps apart sequences of the same tokens split otherwise between prompt and response', async () => {
    const split = [sequence([3, 7], [1, 5, 2]), sequence([3, 7, 1], [5, 2]), sequence([3, 7], [1, 5, 2])]
    const chunks: number[] = []
    const [rows] = await responseRows(split, 8, 1, (chunk) => {
      chunks.push(chunk.length)
      const columns = Math.max(...chunk.map((item) => item.responseIds.length))
      return [
        tf.tensor2d(
          chunk.flatMap((item) => Array.from({ length: columns }, () => item.promptIds.length)),
          [chunk.length, columns],
        ),
      ]
    })
    expect(chunks).toEqual([2])
    expect(rows!.map((row) => Array.from(row))).toEqual([
      [2, 2, 2],
      [3, 3],
      [2, 2, 2],
    ])
  })

  it("gives each sequence the log-probs it has alone (a model's forward over the distinct rows)", async () => {
    const model = createTestModel(3)
    const before = tf.memory().numTensors
    const logprobs = await responseLogprobs(model, batch, 3)
    expect(tf.memory().numTensors).toBe(before)
    for (const [index, item] of batch.entries()) {
      const alone = sequenceLogprobs(model, raggedOf([item]))
      const expected = alone.logprobs.dataSync()
      expect(logprobs[index]).toHaveLength(item.responseIds.length)
      logprobs[index]!.forEach((value, column) => expect(Math.abs(value - expected[column]!)).toBeLessThan(1e-5))
      tf.dispose([alone.logprobs, alone.responseMask])
    }
    model.dispose()
  })
})
