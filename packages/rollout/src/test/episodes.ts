import { createRandom, type EnvironmentV1, type GenerationRequest, type PolicyV1, type StepOutcome, type TurnView } from '@ludic/core'
import { createScriptedPolicy, type ScriptedPolicy } from '@ludic/core/test'

/**
 * Test helpers (not exported from the package). A two-role random walk whose length depends on the
 * moves: 'a' wins at +3, 'b' at −3; an answer without `[left]` or `[right]` is invalid and ends it.
 */
export function createRandomWalk(options: { id?: string; target?: number } = {}): EnvironmentV1 {
  const id = options.id ?? 'random-walk-v1'
  const target = options.target ?? 3
  const roles = ['a', 'b'] as const
  let position = 0
  let turn = 0
  let seed = 0
  const view = (): TurnView => ({
    role: roles[turn % 2]!,
    observation: `seed ${seed}, turn ${turn}, position ${position}`,
    legalActions: ['[left]', '[right]'],
    stateKey: `${roles[turn % 2]} at ${position}`, // all that decides the rest of a walk
  })
  return {
    specificationVersion: 'v1',
    id,
    roles,
    reset(newSeed) {
      seed = newSeed
      position = createRandom(newSeed).nextInt(3) - 1
      turn = 0
      return view()
    },
    step(action): StepOutcome {
      const role = roles[turn % 2]!
      const move = /\[(left|right)\]/.exec(action)?.[1]
      if (move === undefined) {
        return { done: true, truncated: false, rewards: { a: 0, b: 0, [role]: -1.5 }, info: { invalidAction: true, reason: 'no move' } }
      }
      position += move === 'right' ? 1 : -1
      turn++
      if (Math.abs(position) >= target) {
        const winner = position > 0 ? 'a' : 'b'
        return { done: true, truncated: false, rewards: { a: winner === 'a' ? 1 : -1, b: winner === 'b' ? 1 : -1 }, info: {} }
      }
      return { done: false, truncated: false, next: view(), rewards: { a: 0, b: 0.25 * (turn % 2) }, info: {} }
    },
  }
}

/** A policy that is a function of its request: its move and log-probs come from the request seed. */
export function createSeededPolicy(id = 'seeded'): ScriptedPolicy {
  return createScriptedPolicy({
    id,
    replies: (request: GenerationRequest) => {
      const random = createRandom(request.seed ?? 0)
      const move = random.nextInt(2) === 0 ? '[left]' : '[right]'
      const text = `I pick ${move}`
      return { text, logprobs: Array.from(text, () => -random.nextFloat()) }
    },
  })
}

/** Delays each `generate` call by a few milliseconds drawn from `Math.random`, to shuffle scheduling. */
export function withJitter(policy: PolicyV1, maxDelayMs = 3): PolicyV1 {
  return {
    specificationVersion: 'v1',
    id: policy.id,
    async generate(requests) {
      await new Promise((resolve) => setTimeout(resolve, Math.random() * maxDelayMs))
      return policy.generate(requests)
    },
  }
}

/** A seed that identifies a request's episode in tests (the observation starts with `seed N,`). */
export function requestEpisodeSeed(request: GenerationRequest): number {
  const content = request.messages?.at(-1)?.content ?? ''
  return Number(/seed (-?\d+)/.exec(content)?.[1] ?? Number.NaN)
}

/**
 * Polls `condition` every 2 ms; throws after `timeoutMs` (so a test never hangs on it). The bound is for a
 * condition that never comes, not a speed: generous, so a machine busy with other work does not trip it.
 */
export async function waitFor(condition: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`waitFor: condition still false after ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 2))
  }
}
