/**
 * A rollout worker module for the partial-rollout test (run in a worker thread through tsx): a tiny model's local
 * policy on a `GenerationEngine`, no stop tokens; `setWeights(seed)` loads the weights of the tiny model made with
 * that seed. Once its engine has generated `holdAfterTokens` tokens it writes the count to `progress[0]` and blocks
 * (at most 20 s) until the test sets `progress[1]`, so that weights the test pushes meanwhile arrive mid-sequence.
 */
import { createByteTokenizer } from '@ludic/core/test'
import { createLocalPolicy, createModel } from '@ludic/model'
import { initTensors } from '@ludic/tensors'
import type * as tf from '@tensorflow/tfjs-core'
import type { RolloutWorkerSetup } from '../async-protocol.js'
import { createRandomWalk } from './episodes.js'

export interface EngineWorkerData {
  /** Int32Array over a SharedArrayBuffer: [0] tokens generated when the worker held, [1] set by the test to release it. */
  progress: Int32Array
  holdAfterTokens: number
}

export const engineWorkerModel = (seed: number) =>
  createModel('tiny', { vocabSize: 259, seed, overrides: { hiddenSize: 32, intermediateSize: 64, initializerRange: 0.3, maxPositionEmbeddings: 512 } })

export async function createRolloutWorker(data: EngineWorkerData): Promise<RolloutWorkerSetup> {
  await initTensors({ backend: 'wasm', verbose: false })
  const model = engineWorkerModel(21)
  const policy = createLocalPolicy({ model, tokenizer: createByteTokenizer(), engine: { maxSequenceLength: 256 }, stopTokenIds: [] })
  const watch = setInterval(() => {
    const generated = policy.engineStats()!.generatedTokens
    if (generated < data.holdAfterTokens) return
    clearInterval(watch)
    Atomics.store(data.progress, 0, generated)
    Atomics.notify(data.progress, 0)
    Atomics.wait(data.progress, 1, 0, 20_000)
  }, 0)
  return {
    environments: [() => createRandomWalk()],
    policy,
    prompt: '{observation}',
    setWeights(seed) {
      const source = engineWorkerModel(seed as number)
      for (const [name, tensor] of model.parameters()) (tensor as tf.Variable).assign(source.parameter(name))
      source.dispose()
    },
    dispose() {
      clearInterval(watch)
      model.dispose()
    },
  }
}
