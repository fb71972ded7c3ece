import type { Completion, EnvironmentV1, GenerationRequest, PolicyV1 } from '@ludic/core'
import { GenerationBatchError, serveOpenAICompatible, type LoraAdapterLoader, type OpenAICompatibleServer } from '@ludic/rollout'
import { afterEach, describe, expect, it } from 'vitest'
import { followingNewest, playDisaggregatedBatch, type DisaggregatedPlan, type PlayedAdapter } from './disaggregated-play.js'
import { createPickEnvironment, tokenizer } from './test/support.js'

const servers: OpenAICompatibleServer[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()))
})

/** A completion of the move 'a' (one token, log-prob −0.5) for `request`. */
function answer(request: GenerationRequest): Completion {
  return {
    text: 'a',
    promptTokenIds: tokenizer.encode(request.messages?.at(-1)?.content ?? request.prompt ?? '', { addSpecialTokens: false }),
    tokenIds: tokenizer.encode('a', { addSpecialTokens: false }),
    logprobs: Float32Array.of(-0.5),
    finishReason: 'stop',
  }
}

/**
 * A server whose adapters each answer 'a', recording which adapter answered each request, in order. It answers nothing
 * until `hold` requests have arrived (or 5 s after the first arrived: a test then fails on what was answered rather
 * than hanging), so the first `hold` are all answered — and recorded — before any later request can be: without it,
 * a first batch answered early lets its game's next turn (to a newer adapter's batcher) be answered before the rest of
 * the first turns, and the recorded order interleaves (it did once in `.ci/run` beside a training run).
 */
async function recordingServer(adapterNames: readonly string[], hold = 0) {
  const answered: string[] = []
  let received = 0
  let release = () => {}
  const gate = new Promise<void>((resolve) => {
    release = resolve
  })
  if (hold === 0) release()
  const policyOf = (name: string): PolicyV1 => ({
    specificationVersion: 'v1',
    id: name,
    generate: async (requests) => {
      if (received === 0) setTimeout(release, 5000).unref()
      received += requests.length
      if (received >= hold) release()
      await gate
      return requests.map((request) => {
        answered.push(name)
        return answer(request)
      })
    },
  })
  const loader: LoraAdapterLoader = { load: async ({ name }) => policyOf(name), unload: () => {} }
  // Batches answered side by side, so that one held at the gate does not keep the others from arriving.
  const batching = { windowMs: 5, maxBatchSize: 64, maxConcurrentBatches: 4 }
  const server = await serveOpenAICompatible(policyOf('base'), { modelId: 'base', tokenizer, lora: { loader }, batching })
  servers.push(server)
  for (const name of adapterNames) {
    const response = await fetch(`${server.url}/load_lora_adapter`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ lora_name: name, lora_path: `/adapters/${name}` }),
    })
    expect(response.status).toBe(200)
  }
  return { server, answered }
}

const plan = (endpoint: string, partialRollouts: boolean): DisaggregatedPlan => ({
  endpoints: [endpoint],
  policyId: 'learner',
  requestTimeoutMs: 10_000,
  maxRetries: 0,
  concurrency: 4,
  seed: 3,
  episodesPerStep: 4,
  groupSize: 1,
  maxTurns: 4,
  maxTokens: 1,
  temperature: 1,
  maxStaleness: 1,
  partialRollouts,
})

/**
 * Plays one batch of 4 two-turn games (both seats the learner) starting on step-0, where step-1 is loaded — `newest()`
 * says so — once the first turn of any game has been stepped.
 */
async function playAcrossAnUpdate(partialRollouts: boolean) {
  // The four first turns all answered (and recorded) before any second turn can be.
  const { server, answered } = await recordingServer(['step-0', 'step-1'], 4)
  let newest: PlayedAdapter = { name: 'step-0', version: 0 }
  const environment = (): EnvironmentV1 => {
    const game = createPickEnvironment(['player0', 'player1'])
    return {
      ...game,
      step(action) {
        const outcome = game.step(action)
        newest = { name: 'step-1', version: 1 }
        return outcome
      },
    }
  }
  const { result } = await playDisaggregatedBatch(
    plan(server.url, partialRollouts),
    { environments: [environment], tokenizer },
    { name: 'step-0', version: 0 },
    7,
    new AbortController().signal,
    () => newest,
  )
  return { result, answered }
}

describe('playDisaggregatedBatch', () => {
  it('with partialRollouts, each turn goes to the newest adapter loaded when it is issued, and its tokens carry that version', async () => {
    const { result, answered } = await playAcrossAnUpdate(true)
    expect(result.failures).toEqual([])
    // The four first turns were sent together, before any step; every second turn after one.
    expect(answered).toEqual([...Array(4).fill('step-0'), ...Array(4).fill('step-1')])
    for (const trajectory of result.trajectories) {
      expect(trajectory.turns.map((turn) => Array.from(turn.completion!.tokenPolicyVersions!))).toEqual([[0], [1]])
    }
    const samples = result.samples.map((sample) => [sample.turnIndex, sample.policyVersion, Array.from(sample.tokenPolicyVersions!)])
    expect(samples).toEqual(
      Array(4)
        .fill([
          [0, 0, [0]],
          [1, 1, [1]],
        ])
        .flat(),
    )
  })

  it('without partialRollouts, the whole batch plays the adapter it started with, its samples stamped with that version', async () => {
    const { result, answered } = await playAcrossAnUpdate(false)
    expect(answered).toEqual(Array(8).fill('step-0'))
    expect(result.samples).toHaveLength(8)
    for (const sample of result.samples) {
      expect(sample.policyVersion).toBe(0)
      expect(sample.tokenPolicyVersions).toBeUndefined()
    }
  })
})

describe('followingNewest', () => {
  const request: GenerationRequest = { messages: [{ role: 'user', content: 'pick' }], maxTokens: 1 }

  it('never goes back past the batch’s adapter, makes one client per adapter, and stamps the completions of a call that partly failed', async () => {
    const made: string[] = []
    const client = (name: string): PolicyV1 => {
      made.push(name)
      return {
        specificationVersion: 'v1',
        id: name,
        generate: async (requests) => {
          if (requests.length === 1) return [answer(requests[0]!)]
          throw new GenerationBatchError({ policyId: name, completions: [answer(requests[0]!), undefined], errors: [undefined, new Error('lost')] })
        },
      }
    }
    let newest: PlayedAdapter | undefined
    const policy = followingNewest('learner', client, { name: 'step-3', version: 3 }, () => newest)
    // Nothing loaded as far as newest() knows, then an older adapter: the batch's own.
    expect(Array.from((await policy.generate([request]))[0]!.tokenPolicyVersions!)).toEqual([3])
    newest = { name: 'step-2', version: 2 }
    expect(Array.from((await policy.generate([request]))[0]!.tokenPolicyVersions!)).toEqual([3])
    newest = { name: 'step-4', version: 4 }
    expect(Array.from((await policy.generate([request]))[0]!.tokenPolicyVersions!)).toEqual([4])
    expect(Array.from((await policy.generate([request]))[0]!.tokenPolicyVersions!)).toEqual([4])
    expect(made).toEqual(['step-3', 'step-4'])
    const failed = await policy.generate([request, request]).then(
      () => undefined,
      (error: unknown) => error,
    )
    expect(GenerationBatchError.isInstance(failed)).toBe(true)
    const batchError = failed as GenerationBatchError
    expect(Array.from(batchError.completions[0]!.tokenPolicyVersions!)).toEqual([4])
    expect(batchError.completions[1]).toBeUndefined()
    expect((batchError.errors[1] as Error).message).toBe('lost')
    expect(policy.id).toBe('learner')
  })
})
