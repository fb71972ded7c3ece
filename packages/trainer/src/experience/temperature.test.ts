import * as tf from '@tensorflow/tfjs-core'
import { sequenceLogprobs } from '@ludic/model'
import { describe, expect, it } from 'vitest'
import { createRlTrainer } from '../rl-trainer.js'
import type { RlTrainerConfig } from '../rl-config.js'
import { createRolloutSource, type RolloutBatch } from '../rollout-source.js'
import { createPickEnvironment, createTestModel, tokenizer, useBackendAndDirectory } from '../test/support.js'

useBackendAndDirectory('ludic-temperature-')

/** A step's trainer at sampling temperature `temperature`, recording the batch its source played. */
function trainerAt(temperature: number, extra: Partial<RlTrainerConfig> = {}) {
  const model = createTestModel(11)
  const played: RolloutBatch[] = []
  const trainer = createRlTrainer(
    {
      model,
      tokenizer,
      environments: [() => createPickEnvironment(['player0', 'player1'])],
      batch: { episodesPerStep: 8, maxTokens: 4, miniBatchSize: 64, ppoEpochs: 1, temperature },
      kl: { coefficient: 0.1 },
      seed: 2,
      ...extra,
    },
    {
      rolloutSource: (context) => {
        const inner = createRolloutSource(context)
        return {
          ...inner,
          next: async (step) => {
            const batch = await inner.next(step)
            played.push(batch)
            return batch
          },
        }
      },
    },
  )
  return { model, trainer, played }
}

describe('sampling temperature: every log-prob of the step is the sampled distribution’s, softmax(logits / T)', () => {
  it('at T = 0.5 the rollout’s log-probs equal the training forward’s log_softmax(logits / T) (1e-5), and the logged entropy is the tempered one', async () => {
    const { model, trainer, played } = trainerAt(0.5)
    const metrics = await trainer.step()
    expect(metrics['logprobDiff/max']).toBeLessThan(1e-5)
    // The update's entropy: of softmax(logits / 0.5), over the step's tokens, before the update (one mini-batch, one epoch).
    trainer.dispose()
    const fresh = createTestModel(11)
    const { samples } = played[0]!
    const { entropies, responseMask } = sequenceLogprobs(
      fresh,
      { promptIds: samples.map((sample) => sample.promptTokenIds), responseIds: samples.map((sample) => sample.responseTokenIds) },
      { withEntropy: true, temperature: 0.5 },
    )
    const expected = tf.sum(tf.mul(entropies!, responseMask)).dataSync()[0]! / tf.sum(responseMask).dataSync()[0]!
    tf.dispose([entropies!, responseMask])
    expect(metrics.entropy).toBeCloseTo(expected, 5)
    // KL to the reference (the starting weights) at the first update: both at T, so 0.
    expect(Math.abs(metrics.kl!)).toBeLessThan(1e-6)
    fresh.dispose()
    model.dispose()
  })

  it('with recomputeOldLogprobs false, one epoch and one mini-batch, the first update’s ratio is 1: approxKl ≤ 1e-6, nothing clipped', async () => {
    const { model, trainer } = trainerAt(0.5, { recomputeOldLogprobs: false })
    const metrics = await trainer.step()
    expect(Math.abs(metrics.approxKl!)).toBeLessThanOrEqual(1e-6)
    expect(metrics.clipFraction).toBe(0)
    trainer.dispose()
    model.dispose()
  })
})
