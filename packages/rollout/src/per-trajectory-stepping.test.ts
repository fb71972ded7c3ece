import type { Completion, GenerationRequest, PolicyV1 } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { collect } from './collect.js'
import { createRandomWalk, createSeededPolicy } from './test/episodes.js'

/**
 * The seeded policy, except that requests of reset seed `slowSeed` wait until `open()`. Records how many requests
 * each `generate` call held.
 */
function withSlowSeed(slowSeed: number) {
  const inner = createSeededPolicy()
  const callSizes: number[] = []
  let open: () => void = () => {}
  const gate = new Promise<void>((resolve) => {
    open = resolve
  })
  const isSlow = (request: GenerationRequest) => request.messages!.some((message) => message.content.startsWith(`seed ${slowSeed},`))
  const policy: PolicyV1 = {
    specificationVersion: 'v1',
    id: 'seeded',
    async generate(requests, options): Promise<Completion[]> {
      callSizes.push(requests.length)
      if (requests.some(isSlow)) await gate
      return inner.generate(requests, options)
    },
  }
  return { policy, callSizes, open }
}

describe("collect's stepping", () => {
  it('per-trajectory: each episode steps on its own completion; the others finish while one request is held', async () => {
    const { policy, callSizes, open } = withSlowSeed(1)
    const ended: number[] = []
    const running = collect({
      environments: [() => createRandomWalk({ target: 2 })],
      policies: policy,
      seeds: [1, 2, 3, 4],
      concurrency: 4,
      stepping: 'per-trajectory',
      generation: { maxTokens: 16 },
    }).then((result) => {
      ended.push(result.trajectories.length)
      return result
    })
    // Seeds 2–4 finish although seed 1's first request never returns yet: no batch barrier.
    for (let wait = 0; wait < 15_000 && callSizes.length < 4 + 3; wait++) await new Promise((resolve) => setTimeout(resolve, 2)) // 30 s at most
    expect(ended).toEqual([])
    expect(callSizes.length).toBeGreaterThan(4) // batched, the first call would hold all four requests and wait
    expect(callSizes.every((size) => size === 1)).toBe(true)
    open()
    const result = await running
    expect(result.failures).toEqual([])
    expect(result.trajectories.map((trajectory) => trajectory.seed)).toEqual([1, 2, 3, 4])
  })

  it('gives the same trajectories batched and per-trajectory for a policy that is a function of its request', async () => {
    const play = (stepping: 'batched' | 'per-trajectory') =>
      collect({
        environments: [() => createRandomWalk()],
        policies: createSeededPolicy(),
        seeds: [5, 6, 7, 8, 9],
        groupSize: 2,
        concurrency: 3,
        stepping,
        samplingSeed: 11,
        generation: { maxTokens: 16 },
      })
    const [batched, perTrajectory] = [await play('batched'), await play('per-trajectory')]
    expect(perTrajectory.trajectories.map((trajectory) => trajectory.turns.map((turn) => turn.action))).toEqual(
      batched.trajectories.map((trajectory) => trajectory.turns.map((turn) => turn.action)),
    )
  })

  it('batched: requests waiting on the policy share a call', async () => {
    const { policy, callSizes, open } = withSlowSeed(-1)
    open()
    await collect({ environments: [() => createRandomWalk()], policies: policy, seeds: [1, 2, 3], concurrency: 3, generation: { maxTokens: 16 } })
    expect(callSizes[0]).toBe(3)
  })
})
