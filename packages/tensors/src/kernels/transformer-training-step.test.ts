import { describe, expect, it } from 'vitest'
import * as tf from '@tensorflow/tfjs-core'
import { activateBackend, type BackendName } from '../backend/init-tensors.js'
import { expectClose } from './backend-comparison.js'
import { backendUnderTest } from './backend-under-test.js'
import { AdamUpdate, createParameters, tinyTransformerSize, trainingStep, transformerLoss } from './two-layer-transformer.js'

const size = tinyTransformerSize
const tokenValues = Int32Array.from({ length: size.batch * size.time }, (_, index) => (index * 7 + 3) % size.vocabulary)
const targetValues = Int32Array.from({ length: size.batch * size.time }, (_, index) => (index * 5 + 1) % size.vocabulary)

interface StepRecord {
  losses: number[]
  gradients: Record<string, Float32Array>
  parameters: Record<string, Float32Array>
}

/** Two training steps on `backend`: the losses, the first step's gradients, the parameters after. */
async function twoSteps(backend: BackendName): Promise<StepRecord> {
  await activateBackend(backend)
  const parameters = createParameters(size)
  const optimizer = new AdamUpdate()
  const tokens = tf.tensor2d(tokenValues, [size.batch, size.time], 'int32')
  const targets = tf.tensor2d(targetValues, [size.batch, size.time], 'int32')
  const first = trainingStep(parameters, size, optimizer, tokens, targets, true)
  const second = trainingStep(parameters, size, optimizer, tokens, targets)
  const record: StepRecord = {
    losses: [first.loss, second.loss],
    gradients: Object.fromEntries(Object.entries(first.gradients!).map(([name, gradient]) => [name, gradient.dataSync() as Float32Array])),
    parameters: Object.fromEntries(Object.entries(parameters).map(([name, parameter]) => [name, parameter.dataSync() as Float32Array])),
  }
  tf.dispose([...Object.values(first.gradients!), ...Object.values(parameters), tokens, targets])
  optimizer.dispose()
  return record
}

describe(`a two-layer transformer training step on ${backendUnderTest()}`, () => {
  it('gives the loss, gradients and Adam update of the CPU backend', async () => {
    const actual = await twoSteps(backendUnderTest())
    const expected = await twoSteps('cpu')
    // Near log(vocabulary) at initialisation, and the second step lowers it.
    expect(expected.losses[0]).toBeGreaterThan(0.5 * Math.log(size.vocabulary))
    expect(expected.losses[1]).toBeLessThan(expected.losses[0]!)
    expectClose(actual.losses, expected.losses, 'losses')
    expect(Object.keys(actual.gradients).sort()).toEqual(Object.keys(expected.gradients).sort())
    for (const name of Object.keys(expected.gradients)) {
      expectClose(actual.gradients[name]!, expected.gradients[name]!, `gradient of ${name}`)
      expectClose(actual.parameters[name]!, expected.parameters[name]!, `${name} after two Adam steps`)
    }
  })

  it('leaves tf.memory().numTensors unchanged across a step', async () => {
    await activateBackend(backendUnderTest())
    const parameters = createParameters(size)
    const optimizer = new AdamUpdate()
    const tokens = tf.tensor2d(tokenValues, [size.batch, size.time], 'int32')
    const targets = tf.tensor2d(targetValues, [size.batch, size.time], 'int32')
    trainingStep(parameters, size, optimizer, tokens, targets) // warm-up: creates the Adam moments
    const before = tf.memory().numTensors
    trainingStep(parameters, size, optimizer, tokens, targets)
    expect(tf.memory().numTensors).toBe(before)
    const lossOnly = tf.tidy(() => transformerLoss(parameters, size, tokens, targets).dataSync()[0]!)
    expect(Number.isFinite(lossOnly)).toBe(true)
    expect(tf.memory().numTensors).toBe(before)
    tf.dispose([...Object.values(parameters), tokens, targets])
    optimizer.dispose()
  })
})
