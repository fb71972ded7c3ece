import type { EnvironmentV1, GenerationRequest, PolicyV1, Trajectory } from '@ludic/core'
import { createScriptedPolicy } from '@ludic/core/test'
import { describe, expect, it } from 'vitest'
import { runEpisodes, type EpisodePlan } from './episode-runner.js'
import { createRandomWalk, waitFor } from './test/episodes.js'

function plan(index: number, policy: PolicyV1, created: EnvironmentV1[] = []): EpisodePlan {
  const idle: EnvironmentV1[] = []
  return {
    trajectoryId: `walk/${index}`,
    groupId: `walk/${index}`,
    environmentId: 'random-walk-v1',
    seed: index,
    environment: {
      acquire: () => {
        const reused = idle.pop()
        if (reused !== undefined) return reused
        created.push(createRandomWalk({ target: 100 }))
        return created.at(-1)!
      },
      release: (environment) => idle.push(environment),
    },
    policyFor: () => policy,
    request: (view): GenerationRequest => ({ messages: [{ role: 'user', content: view.observation }], maxTokens: 4 }),
  }
}

describe('runEpisodes', () => {
  it('pulls episodes lazily from an endless source and drains in-flight episodes when aborted', async () => {
    const controller = new AbortController()
    const policy = createScriptedPolicy({ replies: () => '[right]' })
    let pulled = 0
    function* endless() {
      for (let index = 0; ; index++) {
        pulled++
        yield plan(index, policy)
      }
    }
    const ended: Trajectory[] = []
    await runEpisodes({
      episodes: endless(),
      concurrency: 3,
      maxTurns: 2,
      signal: controller.signal,
      onEpisodeEnd: (trajectory) => {
        ended.push(trajectory)
        if (ended.length === 5) controller.abort()
      },
    })
    // Episodes run in lockstep batches of 3: the abort comes during the second wave, which finishes.
    expect(ended.map((trajectory) => trajectory.id)).toEqual(['walk/0', 'walk/1', 'walk/2', 'walk/3', 'walk/4', 'walk/5'])
    expect(ended.every((trajectory) => trajectory.truncated && trajectory.turns.length === 2)).toBe(true)
    expect(pulled).toBe(6)
    expect(policy.calls).toBe(4)
  })

  it('keeps one generate call in flight per policy and batches what arrived meanwhile', async () => {
    const sizes: number[] = []
    const inner = createScriptedPolicy({ replies: () => '[left]' })
    let release: (() => void) | undefined
    const slow: PolicyV1 = {
      specificationVersion: 'v1',
      id: 'slow',
      async generate(requests) {
        sizes.push(requests.length)
        if (sizes.length === 1) await new Promise<void>((resolve) => (release = resolve))
        return inner.generate(requests)
      },
    }
    const fast = createScriptedPolicy({ replies: () => '[left]' })
    // Episodes 0–3 start on the slow policy, 4–7 on the fast one (different roles act first).
    const plans = Array.from({ length: 8 }, (_, index) => ({ ...plan(index, slow), policyFor: (role: string) => ((role === 'a') === index < 4 ? slow : fast) }))
    const ended: string[] = []
    const run = runEpisodes({ episodes: plans, concurrency: 8, maxTurns: 2, onEpisodeEnd: (trajectory) => ended.push(trajectory.id) })
    await waitFor(() => release !== undefined && fast.calls >= 1)
    // The fast policy's 4 episodes now wait on the slow policy, whose first call is still running.
    expect(sizes).toEqual([4])
    release?.()
    await run
    expect(sizes).toEqual([4, 4])
    expect(fast.calls).toBe(2)
    expect(ended).toHaveLength(8)
  })

  it('reuses released environment instances, at most one per episode in flight', async () => {
    const created: EnvironmentV1[] = []
    const policy = createScriptedPolicy({ replies: () => '[left]' })
    const plans = Array.from({ length: 6 }, (_, index) => plan(index, policy, created))
    // All plans share one pool here only if they share the source: give them the first plan's.
    const shared = plans.map((episode) => ({ ...episode, environment: plans[0]!.environment }))
    await runEpisodes({ episodes: shared, concurrency: 2, maxTurns: 1, onEpisodeEnd: () => {} })
    expect(created).toHaveLength(2)
  })

  it('rejects when onEpisodeEnd throws and stops pulling episodes', async () => {
    const policy = createScriptedPolicy({ replies: () => '[left]' })
    let closed = false
    function* three() {
      try {
        for (let index = 0; index < 3; index++) yield plan(index, policy)
      } finally {
        closed = true
      }
    }
    const run = runEpisodes({
      episodes: three(),
      concurrency: 1,
      maxTurns: 1,
      onEpisodeEnd: () => {
        throw new Error('sink is full')
      },
    })
    await expect(run).rejects.toThrow('sink is full')
    expect(closed).toBe(true)
  })
})
