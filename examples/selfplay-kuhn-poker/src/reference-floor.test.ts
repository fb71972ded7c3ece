import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { KuhnPolicy } from '@ludic/games'
import type * as trainer from '@ludic/trainer'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { policyExamples } from './kuhn-setup.js'
import { main } from './main.js'

// Every distillation's examples, as main gives them to the trainer's `warmUp` (which then runs as it is).
const distilled: unknown[][] = []
vi.mock('@ludic/trainer', async (importOriginal) => {
  const original = await importOriginal<typeof trainer>()
  return {
    ...original,
    warmUp: (options: Parameters<typeof trainer.warmUp>[0]) => {
      distilled.push([...options.examples])
      return original.warmUp(options)
    },
  }
})

const directories: string[] = []
afterAll(async () => {
  for (const directory of directories) await rm(directory, { recursive: true, force: true, maxRetries: 5 })
})

describe('selfplay-kuhn-poker roundReferenceFloor', () => {
  it("distils each round's average with its moves clipped to [floor, 1 − floor] for the next round, the last round's as it is", async () => {
    const runDirectory = await mkdtemp(join(tmpdir(), 'ludic-selfplay-kuhn-floor-'))
    directories.push(runDirectory)
    const floor = 0.45
    const perState = 40
    const options = {
      sftSteps: 10,
      episodesPerStep: 8,
      miniBatchSize: 16,
      evaluateEvery: 1,
      evaluationEpisodes: 8,
      distilSteps: 1,
      distilExamplesPerDecision: perState,
      steps: 2,
      rounds: 3,
      roundSteps: 2,
      roundReferenceFloor: floor,
      runDirectory,
      backend: 'wasm',
      progress: false,
      log: () => {},
    } as const
    const report = await main(options)
    const rounds = report.rounds!
    expect(distilled).toHaveLength(3)
    // By hand: each decision's probability clipped.
    const clipped = (policy: KuhnPolicy) =>
      Object.fromEntries(Object.entries(policy).map(([name, p]) => [name, p < floor ? floor : p > 1 - floor ? 1 - floor : p])) as KuhnPolicy
    for (const [index, round] of rounds.entries()) {
      const last = index === rounds.length - 1
      expect(distilled[index], `round ${round.round}`).toEqual(policyExamples(last ? round.average.policy : clipped(round.average.policy), perState))
    }
    // Clipped and not clipped differ in every round (some move outside [0.45, 0.55]), so the check above can tell.
    for (const round of rounds) expect(policyExamples(round.average.policy, perState)).not.toEqual(policyExamples(clipped(round.average.policy), perState))

    // Continued with a round more, the former last round is redone as a middle one: distilled clipped this time.
    distilled.length = 0
    const longer = await main({ ...options, rounds: 4 })
    const [, , third, fourth] = longer.rounds!
    expect(third!.average).toEqual(rounds[2]!.average)
    expect(distilled).toEqual([policyExamples(clipped(third!.average.policy), perState), policyExamples(fourth!.average.policy, perState)])
  })
})
