/**
 * A rollout worker module for the async collector's tests (run in a worker thread through tsx). The policy's
 * "weights" are one integer w: it moves `[right]` when w is even, `[left]` when odd, and every token's
 * log-prob is −w/100, so a sample shows which weights played it. `data` switches on failures.
 */
import type { GenerationRequest } from '@ludic/core'
import { createScriptedPolicy } from '@ludic/core/test'
import type { RolloutWorkerSetup } from '../async-protocol.js'
import { createRandomWalk } from './episodes.js'

export interface TestWorkerData {
  weights: number
  /** Throw from createRolloutWorker. */
  failSetup?: boolean
  /** generate throws for every request of an episode whose seed is a multiple of this. */
  failEpisodesEvery?: number
  /** setWeights throws for this version. */
  failWeightsVersion?: number
  /** The worker thread exits (process.exit) during generate once it has weights of this version. */
  exitAtVersion?: number
  /** Each generate call waits this long (ms). */
  generateDelayMs?: number
}

export function createRolloutWorker(data: TestWorkerData): RolloutWorkerSetup {
  if (data.failSetup === true) throw new RangeError('no backend for this test')
  let weights = data.weights
  let version = 0
  const scripted = createScriptedPolicy({
    id: 'learner',
    replies: (request: GenerationRequest) => {
      const seed = Number(/seed (-?\d+)/.exec(request.messages?.at(-1)?.content ?? '')?.[1])
      if (data.failEpisodesEvery !== undefined && seed % data.failEpisodesEvery === 0) throw new Error(`episode seed ${seed} refused`)
      const text = weights % 2 === 0 ? '[right]' : '[left]'
      return { text, logprobs: Array.from(text, () => -weights / 100) }
    },
  })
  return {
    environments: [() => createRandomWalk()],
    policy: {
      specificationVersion: 'v1',
      id: 'learner',
      async generate(requests) {
        if (data.exitAtVersion !== undefined && version >= data.exitAtVersion) process.exit(3)
        if (data.generateDelayMs !== undefined) await new Promise((resolve) => setTimeout(resolve, data.generateDelayMs))
        return scripted.generate(requests)
      },
    },
    prompt: '{observation}',
    annotate: (result, playedWith) => ({ samples: result.samples.length, version: playedWith }),
    setWeights(next, nextVersion) {
      if (nextVersion === data.failWeightsVersion) throw new TypeError(`weights ${String(next)} do not fit`)
      weights = next as number
      version = nextVersion
    },
  }
}
