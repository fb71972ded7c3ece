import { advantageEstimators } from '@ludic/advantages'
import { InvalidArgumentError, LudicError, type Sample, type Trajectory } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { createRlTrainer } from '../rl-trainer.js'
import { createRolloutSource, type RolloutSource } from '../rollout-source.js'
import { createPickEnvironment, createTestModel, tokenizer, useBackendAndDirectory } from '../test/support.js'
import { advantageBatchOf, buildExperience, rowsOf } from './experience.js'

useBackendAndDirectory('ludic-pipeline-')

const sample = (trajectoryId: string, role: string, turnIndex: number, tokens: number): Sample => ({
  trajectoryId,
  turnIndex,
  role,
  environmentId: 'pick-v1',
  groupId: trajectoryId.split('/').slice(0, -1).join('/'),
  promptTokenIds: Int32Array.from([97]),
  responseTokenIds: Int32Array.from({ length: tokens }, () => 98),
  rolloutLogprobs: Float32Array.from({ length: tokens }, (_, index) => -index - 1),
  invalid: false,
})
const trajectory = (id: string, returns: Record<string, number>): Trajectory =>
  ({
    id,
    groupId: id.split('/').slice(0, -1).join('/'),
    environmentId: 'pick-v1',
    seed: 1,
    roles: Object.keys(returns),
    turns: [],
    returns,
    truncated: false,
  }) as unknown as Trajectory

describe('buildExperience', () => {
  it('lays samples end to end with integer ids, and puts each role’s return on the last token of its last turn', () => {
    const samples = [sample('g/1/0', 'a', 0, 2), sample('g/1/0', 'b', 1, 1), sample('g/1/0', 'a', 2, 3), sample('g/1/1', 'a', 0, 2)]
    const experience = buildExperience([trajectory('g/1/0', { a: 1, b: -1 }), trajectory('g/1/1', { a: 0.5, b: 0 })], samples, {
      origin: { offPolicy: false },
    })
    expect(Array.from(experience.offsets)).toEqual([0, 2, 3, 6, 8])
    expect(Array.from(experience.ids.group)).toEqual([0, 0, 0, 0])
    expect(Array.from(experience.ids.episode)).toEqual([0, 0, 0, 1])
    expect(Array.from(experience.ids.role)).toEqual([0, 1, 0, 0])
    expect(experience.names.roles).toEqual(['a', 'b'])
    expect(Array.from(experience.outcome)).toEqual([1, -1, 1, 0.5])
    expect(rowsOf(experience, 'tokenRewards').map((row) => Array.from(row))).toEqual([[0, 0], [-1], [0, 0, 1], [0, 0.5]])
    expect(rowsOf(experience, 'rolloutLogprobs')[2]).toEqual(Float32Array.from([-1, -2, -3]))
    const batch = advantageBatchOf(experience)
    expect(batch.groupIds).toEqual(['g/1', 'g/1', 'g/1', 'g/1'])
    expect(batch.trajectoryIds).toEqual(['g/1/0', 'g/1/0', 'g/1/0', 'g/1/1'])
    expect(batch.turnIndices).toEqual([0, 1, 2, 0])
    expect(batch.opponentIds).toEqual(['', '', '', '']) // these trajectories record no turns
  })

  it("gives each sample its opponents: the policies of its episode's other roles, distinct and sorted", () => {
    const turn = (index: number, role: string, policyId?: string) => ({
      index,
      role,
      observation: '',
      action: 'x',
      rewards: {},
      invalidAction: false,
      ...(policyId === undefined ? {} : { policyId }),
    })
    const withTurns = (id: string, turns: ReturnType<typeof turn>[]): Trajectory =>
      ({ ...trajectory(id, { a: 0, b: 0, c: 0 }), turns }) as unknown as Trajectory
    const trajectories = [
      withTurns('g/1/0', [turn(0, 'a', 'learner'), turn(1, 'b', 'learner'), turn(2, 'a', 'learner')]), // self-play
      withTurns('g/1/1', [turn(0, 'a', 'random'), turn(1, 'b', 'learner')]),
      withTurns('g/1/2', [turn(0, 'a', 'learner'), turn(1, 'b', 'snapshot-4'), turn(2, 'c', 'minimax'), turn(3, 'b', 'snapshot-4'), turn(4, 'c')]),
      // The seating recorded: b was seated though the episode ended before it acted.
      { ...withTurns('g/1/3', [turn(0, 'a', 'learner')]), policyIds: { a: 'learner', b: 'random' } },
    ]
    const samples = [
      ...[sample('g/1/0', 'a', 0, 1), sample('g/1/0', 'b', 1, 1), sample('g/1/0', 'a', 2, 1), sample('g/1/1', 'b', 1, 1)],
      ...[sample('g/1/2', 'a', 0, 1), sample('g/1/9', 'a', 0, 1), sample('g/1/3', 'a', 0, 1)],
    ]
    const experience = buildExperience(trajectories, samples, { origin: { offPolicy: false } })
    expect(advantageBatchOf(experience).opponentIds).toEqual(['learner', 'learner', 'learner', 'random', 'minimax+snapshot-4', '', 'random'])
  })
})

describe('what the RL trainer refuses when it is built, not after a rollout', () => {
  /** A source of one's own that plays with older weights, counting the batches asked of it. */
  function ownOffPolicySource(): { source: RolloutSource; asked: () => number } {
    let asked = 0
    return {
      source: {
        offPolicy: true,
        async next() {
          asked++
          throw new Error('must not be asked')
        },
        updated() {},
        async close() {},
      },
      asked: () => asked,
    }
  }

  it("an off-policy source of one's own with recomputeOldLogprobs false (the guard is on the source's flag)", () => {
    const model = createTestModel(1)
    const own = ownOffPolicySource()
    expect(() =>
      createRlTrainer({ model, tokenizer, environments: [() => createPickEnvironment()], recomputeOldLogprobs: false }, { rolloutSource: () => own.source }),
    ).toThrow(/config\.recomputeOldLogprobs.*off-policy rollout source/)
    expect(own.asked()).toBe(0)
    model.dispose()
  })

  it('a batch that says it is off-policy from a source that says it is not fails its step', async () => {
    const model = createTestModel(1)
    const trainer = createRlTrainer(
      { model, tokenizer, environments: [() => createPickEnvironment()], batch: { episodesPerStep: 2, maxTokens: 1 } },
      {
        rolloutSource: (context) => {
          const inner = createRolloutSource(context)
          return { ...inner, next: async (step) => ({ ...(await inner.next(step)), offPolicy: { policyVersion: 0, dropped: 0, importanceCap: 2 } }) }
        },
      },
    )
    await expect(trainer.step()).rejects.toThrow(LudicError)
    await expect(trainer.step()).rejects.toThrow(/says it is on-policy/)
    trainer.dispose()
    model.dispose()
  })

  it('an estimator whose needs no stage provides, naming what is missing', () => {
    const model = createTestModel(1)
    const build =
      (name: string, hooks = {}) =>
      () =>
        createRlTrainer({ model, tokenizer, environments: [() => createPickEnvironment()], advantage: advantageEstimators.create(name) }, hooks)
    expect(build('gigpo')).toThrow(InvalidArgumentError)
    expect(build('gigpo')).toThrow(/config\.advantage.*"gigpo".*a key of the state each turn acted on/)
    expect(build('remax', { rolloutSource: () => ownOffPolicySource().source })).toThrow(/the reward of a greedy episode of each group/)
    model.dispose()
  })
})

describe('ReMax on the synchronous source', () => {
  it("plays each group's greedy episode and uses its return as the baseline", async () => {
    const model = createTestModel(2)
    const trainer = createRlTrainer({
      model,
      tokenizer,
      environments: [() => createPickEnvironment(['player0', 'player1'])],
      advantage: advantageEstimators.create('remax'),
      batch: { episodesPerStep: 2, groupSize: 2, maxTokens: 1, miniBatchSize: 8, ppoEpochs: 1 },
    })
    const metrics = await trainer.step()
    expect(Number.isFinite(metrics.pgLoss)).toBe(true)
    expect(metrics['logprobDiff/max']).toBeLessThan(1e-3) // the same weights generated and trained
    trainer.dispose()
    model.dispose()
  })
})
