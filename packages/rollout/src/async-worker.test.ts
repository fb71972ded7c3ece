import { fileURLToPath } from 'node:url'
import { sampleSchema } from '@ludic/core'
import { generate, sequenceLogprobs } from '@ludic/model'
import { initTensors } from '@ludic/tensors'
import * as tf from '@tensorflow/tfjs-core'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createAsyncCollector, type AsyncCollector } from './async-collector.js'
import { engineWorkerModel, type EngineWorkerData } from './test/engine-worker-module.js'

// The worker thread runs the built entry (dist/async-worker.js) and loads this TypeScript module through tsx.
const workerModule = fileURLToPath(new URL('./test/engine-worker-module.ts', import.meta.url))
const open: AsyncCollector[] = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((collector) => collector.close()))
})
beforeAll(() => initTensors({ backend: 'wasm', verbose: false }))

const greedy = async (seed: number, ids: readonly number[], count: number): Promise<number[]> => {
  const model = engineWorkerModel(seed)
  try {
    const [continued] = await generate(model, { inputIds: [[...ids]], maxNewTokens: count, temperature: 0, stopTokenIds: [], decodePath: 'layers' })
    return [...continued!.tokenIds]
  } finally {
    model.dispose()
  }
}

const logprobsUnder = (seed: number, promptIds: Int32Array, responseIds: Int32Array): number[] => {
  const model = engineWorkerModel(seed)
  try {
    return tf.tidy(() => Array.from(sequenceLogprobs(model, { promptIds: [promptIds], responseIds: [responseIds] }).logprobs.dataSync()))
  } finally {
    model.dispose()
  }
}

describe('the rollout worker with a policy on the generation engine (partial rollouts)', () => {
  it('applies weights pushed mid-batch to the running sequences: earlier tokens kept, later ones the new weights’, each token its version', async () => {
    const progress = new Int32Array(new SharedArrayBuffer(8))
    const data: EngineWorkerData = { progress, holdAfterTokens: 6 }
    const collector = createAsyncCollector({
      worker: workerModule,
      workerData: data,
      episodesPerBatch: 2,
      maxTurns: 1,
      seed: 3,
      generation: { maxTokens: 24, temperature: 0 },
    })
    open.push(collector)
    await collector.start()
    const played = collector.next(0)
    // The worker holds once its engine has generated 6 tokens (3 of each sequence); the new weights reach it mid-batch.
    for (let waited = 0; Atomics.load(progress, 0) === 0 && waited < 2000; waited++) await new Promise((resolve) => setTimeout(resolve, 10))
    expect(Atomics.load(progress, 0)).toBeGreaterThanOrEqual(6)
    collector.pushWeights(1, 22) // version 1: the tiny model of seed 22
    Atomics.store(progress, 1, 1)
    Atomics.notify(progress, 1)
    const batch = await played
    expect(batch.samples).toHaveLength(2)
    // The batch's version is its oldest token's.
    expect(batch.policyVersion).toBe(0)
    for (const sample of batch.samples) {
      sampleSchema.parse(sample)
      const versions = [...sample.tokenPolicyVersions!]
      const switchAt = versions.indexOf(1)
      // Tokens of both versions, the first 3 at least of version 0, then version 1 to the end.
      expect(switchAt).toBeGreaterThanOrEqual(3)
      expect(versions.slice(0, switchAt).every((version) => version === 0)).toBe(true)
      expect(versions.slice(switchAt).every((version) => version === 1)).toBe(true)
      expect(sample.policyVersion).toBe(0)
      const prompt = [...sample.promptTokenIds]
      const tokens = [...sample.responseTokenIds]
      // Before the switch: the first weights' greedy tokens; after it: the new weights' greedy continuation of the
      // prompt and the tokens so far (the sequence was not restarted).
      expect(tokens.slice(0, switchAt)).toEqual(await greedy(21, prompt, switchAt))
      expect(tokens.slice(switchAt)).toEqual(await greedy(22, [...prompt, ...tokens.slice(0, switchAt)], tokens.length - switchAt))
      expect(tokens.slice(switchAt)).not.toEqual((await greedy(21, prompt, tokens.length)).slice(switchAt))
      // Each token's rollout log-prob is under the weights that sampled it (what the importance ratio divides by).
      const [underFirst, underSecond] = [
        logprobsUnder(21, sample.promptTokenIds, sample.responseTokenIds),
        logprobsUnder(22, sample.promptTokenIds, sample.responseTokenIds),
      ]
      sample.rolloutLogprobs.forEach((value, step) => {
        expect(Math.abs(value - (step < switchAt ? underFirst[step]! : underSecond[step]!)), `token ${step}`).toBeLessThan(1e-4)
      })
    }
  })
})
