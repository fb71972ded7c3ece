import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { EnvironmentV1, StepOutcome, TurnView } from '@ludic/core'
import { createByteTokenizer } from '@ludic/core/test'
import { createModel, type CausalLanguageModel } from '@ludic/model'
import { initTensors } from '@ludic/tensors'
import { afterAll, beforeAll } from 'vitest'

export const tokenizer = createByteTokenizer()

/**
 * The test file's setup: the WebAssembly backend and a temporary directory, removed after the file's tests.
 * Returns a function that gives the directory (it exists once `beforeAll` has run).
 */
export function useBackendAndDirectory(prefix: string): () => string {
  let directory: string | undefined
  beforeAll(async () => {
    await initTensors({ backend: 'wasm', verbose: false })
    directory = await mkdtemp(join(tmpdir(), prefix))
  })
  afterAll(async () => {
    if (directory !== undefined) await rm(directory, { recursive: true, force: true, maxRetries: 5 })
  })
  return () => directory!
}

/** A very small model over the byte tokenizer's 259 ids: d = 32, one layer. */
export function createTestModel(seed: number): CausalLanguageModel {
  return createModel('tiny', { vocabSize: 259, seed, overrides: { hiddenSize: 32, numAttentionHeads: 2, numHiddenLayers: 1, intermediateSize: 64 } })
}

/**
 * `roles` players answer one after the other with a single letter; each role gets +1 for `a`, −1 for `b`
 * and −1.5 for anything else (invalid, which ends the episode). With `stateKeys`, each turn's view keys its state
 * (the role and the game it faces), for estimators that group by state (GiGPO).
 */
export function createPickEnvironment(roles: readonly string[] = ['player0'], options: { stateKeys?: boolean } = {}): EnvironmentV1 {
  let turn = 0
  let seed = 0
  const view = (): TurnView => ({
    role: roles[turn]!,
    observation: `game ${seed % 7}: ${roles[turn]} picks a or b`,
    legalActions: ['a', 'b'],
    ...(options.stateKeys === true ? { stateKey: `${roles[turn]}|game ${seed % 7}` } : {}),
  })
  const rewards: Record<string, number> = {}
  return {
    specificationVersion: 'v1',
    id: 'pick-v1',
    roles,
    reset(newSeed) {
      seed = newSeed
      turn = 0
      for (const role of roles) rewards[role] = 0
      return view()
    },
    step(action): StepOutcome {
      const role = roles[turn]!
      const move = action.trim()
      if (move !== 'a' && move !== 'b')
        return { done: true, truncated: false, rewards: { ...rewards, [role]: -1.5 }, info: { invalidAction: true, reason: 'not a or b' } }
      rewards[role] = move === 'a' ? 1 : -1
      turn++
      if (turn === roles.length) return { done: true, truncated: false, rewards: { ...rewards }, info: {} }
      return { done: false, truncated: false, next: view(), rewards: Object.fromEntries(roles.map((r) => [r, 0])), info: {} }
    },
  }
}

/** A one-exchange dialogue: the user speaks (a fixed policy), the character answers; rewards are always 0. */
export function createChatEnvironment(): EnvironmentV1 {
  let seed = 0
  let turn = 0
  return {
    specificationVersion: 'v1',
    id: 'chat-v1',
    roles: ['user', 'character'],
    reset(newSeed) {
      seed = newSeed
      turn = 0
      return { role: 'user', observation: `you are a visitor (${seed % 5})` }
    },
    step() {
      turn++
      if (turn === 1)
        return { done: false, truncated: false, next: { role: 'character', observation: `you are the keeper (${seed % 5})` }, rewards: {}, info: {} }
      return { done: true, truncated: false, rewards: { user: 0, character: 0 }, info: {} }
    },
  }
}
