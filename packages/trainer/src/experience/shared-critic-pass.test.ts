import * as tf from '@tensorflow/tfjs-core'
import { createValueHead, sequenceValues } from '@ludic/model'
import { describe, expect, it } from 'vitest'
import { responseLogprobs, scoreResponses } from '../sequences.js'
import { createTestModel, useBackendAndDirectory } from '../test/support.js'

useBackendAndDirectory('ludic-shared-critic-')

describe('a shared critic scored with π_old', () => {
  it("one forward gives the same log-probs as the log-prob pass and the same values as the critic's own pass", async () => {
    const model = createTestModel(11)
    const valueHead = createValueHead(model, { seed: 4 })
    // Ragged rows, two chunks: the cut of each row from the padded forward is what is checked.
    const sequences = [
      [
        [1, 2, 3],
        [4, 5],
      ],
      [[6], [7, 8, 9, 10]],
      [[2, 2, 2, 2], [3]],
    ].map(([prompt, response]) => ({ promptIds: Int32Array.from(prompt!), responseIds: Int32Array.from(response!) }))
    const tensors = tf.memory().numTensors
    const scored = await scoreResponses(model, sequences, 2, { temperature: 0.7, valueHead })
    expect(tf.memory().numTensors).toBe(tensors)
    const logprobs = await responseLogprobs(model, sequences, 2, { temperature: 0.7 })
    expect(scored.values).toHaveLength(sequences.length)
    sequences.forEach((sequence, row) => {
      expect(scored.logprobs[row]).toHaveLength(sequence.responseIds.length)
      for (let t = 0; t < sequence.responseIds.length; t++) expect(scored.logprobs[row]![t]).toBeCloseTo(logprobs[row]![t]!, 5)
      const alone = tf.tidy(() => sequenceValues(model, valueHead, { promptIds: [sequence.promptIds], responseIds: [sequence.responseIds] }).values)
      const expected = alone.dataSync()
      alone.dispose()
      expect(scored.values![row]).toHaveLength(sequence.responseIds.length)
      for (let t = 0; t < sequence.responseIds.length; t++) expect(scored.values![row]![t]).toBeCloseTo(expected[t]!, 5)
    })
    expect((await scoreResponses(model, sequences, 2)).values).toBeUndefined()
    valueHead.dispose()
    model.dispose()
  })
})
