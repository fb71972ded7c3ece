import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as tf from '@tensorflow/tfjs-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRandom, type Random } from '@ludic/core'
import { initTensors, maskedMean, tokenLogprobs } from '@ludic/tensors'
import { createModel, type CausalLanguageModel } from '../index.js'
import { createAdamW, type AdamW } from './adamw.js'
import { clipGradientsByGlobalNorm } from './clip-gradients-by-global-norm.js'
import { computeGradients } from './compute-gradients.js'
import { warmupCosineSchedule } from './learning-rate-schedules.js'
import { latestCheckpoint } from './list-checkpoints.js'
import { loadTrainingCheckpoint } from './load-training-checkpoint.js'
import { saveTrainingCheckpoint } from './save-training-checkpoint.js'
import { snapshotOf } from '../test/mlp-training.js'

const vocabSize = 64
const batch = 2
const time = 12
const totalSteps = 6
const schedule = warmupCosineSchedule({ warmupSteps: 2, totalSteps, minRatio: 0.1 })

let root: string
beforeAll(async () => {
  await initTensors({ backend: 'wasm', verbose: false })
  root = await mkdtemp(join(tmpdir(), 'ludic-resume-transformer-'))
})
afterAll(async () => {
  await rm(root, { recursive: true, force: true, maxRetries: 5 })
})

function startRun(modelSeed: number, randomSeed: number): { model: CausalLanguageModel; optimizer: AdamW; random: Random } {
  const model = createModel('tiny', { vocabSize, seed: modelSeed })
  const optimizer = createAdamW(model.trainableParameters(), { learningRate: 3e-3, weightDecay: 0.1, excludeFromWeightDecay: ['**norm.weight'] })
  return { model, optimizer, random: createRandom(randomSeed) }
}

/** Steps `from` … `to − 1`: token ids and a dropout-like loss mask from `random`, clipping, schedule, AdamW. */
function train(model: CausalLanguageModel, optimizer: AdamW, random: Random, from: number, to: number): number[] {
  const parameters = model.trainableParameters()
  const losses: number[] = []
  for (let step = from; step < to; step++) {
    const rows = Array.from({ length: batch }, () => Int32Array.from({ length: time + 1 }, () => random.nextInt(vocabSize)))
    const keep = Float32Array.from({ length: batch * time }, () => (random.nextFloat() < 0.75 ? 1 : 0))
    const inputIds = rows.map((row) => row.subarray(0, time))
    const targets = tf.tensor2d(Int32Array.from(rows.flatMap((row) => [...row.subarray(1)])), [batch, time], 'int32')
    const mask = tf.tensor2d(keep, [batch, time])
    const { loss, gradients } = computeGradients(() => tf.neg(maskedMean(tokenLogprobs(model.forward(inputIds), targets), mask)) as tf.Scalar, parameters)
    const clipped = clipGradientsByGlobalNorm(gradients, 1)
    optimizer.step(clipped.gradients, { learningRate: 3e-3 * schedule(step) })
    losses.push(loss.dataSync()[0]!)
    tf.dispose([targets, mask, loss, ...gradients.values(), ...clipped.gradients.values()])
  }
  return losses
}

describe('the tiny transformer interrupted and resumed from its checkpoint', () => {
  it('continues bit for bit as if never stopped', async () => {
    const straight = startRun(1, 7)
    const straightLosses = train(straight.model, straight.optimizer, straight.random, 0, totalSteps)
    const expected = await snapshotOf(straight.model.parameters(), straight.optimizer)
    straight.optimizer.dispose()
    straight.model.dispose()

    const runDirectory = join(root, 'run')
    const first = startRun(1, 7)
    const firstLosses = train(first.model, first.optimizer, first.random, 0, 3)
    await saveTrainingCheckpoint(runDirectory, {
      parameters: first.model.parameters(),
      optimizer: first.optimizer,
      randomState: first.random.getState(),
      step: 3,
    })
    first.optimizer.dispose()
    first.model.dispose()

    const resumed = startRun(2, 8) // other weights and generator: the checkpoint overwrites them
    const loaded = await loadTrainingCheckpoint((await latestCheckpoint(runDirectory))!, {
      parameters: resumed.model.parameters(),
      optimizer: resumed.optimizer,
    })
    const resumedLosses = train(resumed.model, resumed.optimizer, loaded.random, loaded.step, totalSteps)

    expect([...firstLosses, ...resumedLosses]).toEqual(straightLosses)
    expect(straightLosses.at(-1)!).toBeLessThan(straightLosses[0]!)
    const actual = await snapshotOf(resumed.model.parameters(), resumed.optimizer)
    expect(actual.size).toBe(expected.size)
    for (const [name, bytes] of expected) expect(Buffer.compare(actual.get(name)!, bytes), `${name} bit for bit`).toBe(0)
    resumed.optimizer.dispose()
    resumed.model.dispose()
  })
})
