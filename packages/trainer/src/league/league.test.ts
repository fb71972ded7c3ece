import { readdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError } from '@ludic/core'
import { createScriptedPolicy } from '@ludic/core/test'
import { applyLora, createLocalPolicy } from '@ludic/model'
import { collect } from '@ludic/rollout'
import { describe, expect, it } from 'vitest'
import { learnerPolicyId, type RlTrainerConfig } from '../rl-config.js'
import { createRlTrainer } from '../rl-trainer.js'
import { expectResumeBitForBit } from '../test/resume.js'
import { createPickEnvironment, createTestModel, tokenizer, useBackendAndDirectory } from '../test/support.js'
import { League } from './league.js'
import { snapshotPoolConfigSchema, type SnapshotPoolConfig } from './snapshot-pool.js'

const temporaryDirectory = useBackendAndDirectory('ludic-league-')

const twoRoles = () => createPickEnvironment(['player0', 'player1'])
const pool = (config: Partial<SnapshotPoolConfig> = {}) => ({ pool: 'snapshots' as const, share: 0.75, every: 1, keep: 2, ...config })
const leagueConfig = (model: ReturnType<typeof createTestModel>, extra: Partial<RlTrainerConfig> = {}): RlTrainerConfig => ({
  model,
  tokenizer,
  environments: [twoRoles],
  optimizer: { learningRate: 3e-2 },
  batch: { episodesPerStep: 8, miniBatchSize: 8, ppoEpochs: 1, maxTokens: 2 },
  seed: 3,
  opponents: [pool({ sampling: 'pfsp' }), { policy: createScriptedPolicy({ id: 'always-b', replies: () => 'b' }), share: 0.25 }],
  ...extra,
})

describe('League', () => {
  it("seats a snapshot's own model in its share of the episodes, trains only the learner's turns, and frees the snapshot models", async () => {
    const model = createTestModel(4)
    const options = snapshotPoolConfigSchema.parse(pool({ share: 1, sampling: 'pfsp', keep: 3 }))
    const league = new League({ model, tokenizer, maxGenerationBatch: 8, seed: 1, opponents: [options], learnerId: learnerPolicyId, keepLast: 2 })
    const learner = createLocalPolicy({ model, tokenizer, id: learnerPolicyId, maxBatch: 8 })
    const tensors = tf.memory().numTensors
    await league.prepare(0)
    expect(league.pool.all.map((member) => member.step)).toEqual([0])
    expect(tf.memory().numTensors).toBe(tensors) // a snapshot is plain data, not tensors
    const step = league.step(learner, 0, 'step-0')
    const result = await collect({
      environments: [twoRoles],
      policies: step.policies,
      learnerPolicyIds: [learnerPolicyId],
      seeds: [1, 2, 3, 4, 5, 6],
      runId: 'step-0',
      generation: { maxTokens: 2 },
    })
    expect(tf.memory().numTensors).toBeGreaterThan(tensors) // the snapshot's model, alive during the rollout
    step.release()
    expect(tf.memory().numTensors).toBe(tensors)
    // Every episode has the snapshot in one seat (share 1), drawn per episode; the samples are the learner's turns only.
    expect(step.seating.size).toBe(6)
    const seats = new Set([...step.seating.values()].map((seated) => seated.seat))
    expect(seats).toEqual(new Set(['player0', 'player1']))
    for (const trajectory of result.trajectories) {
      const seated = step.seating.get(trajectory.id)!
      expect(seated.opponent).toBe('snapshot-0')
      for (const turn of trajectory.turns) expect(turn.policyId).toBe(turn.role === seated.seat ? 'snapshot-0' : learnerPolicyId)
    }
    const trained = new Set(result.samples.map((sample) => `${sample.trajectoryId}#${sample.turnIndex}`))
    const learnerTurns = result.trajectories.flatMap((trajectory) =>
      trajectory.turns.filter((turn) => turn.policyId === learnerPolicyId).map((turn) => `${trajectory.id}#${turn.index}`),
    )
    expect([...trained].sort()).toEqual(learnerTurns.sort())
    league.record(step.seating, result.trajectories)
    expect(league.pool.all[0]!.scores).toHaveLength(6)
    expect(league.metrics()['league/games']).toBe(6)
    expect(Number.isFinite(league.metrics()['league/rating/snapshot-0'])).toBe(true)
    // The step's greedy baselines (ReMax) meet the opponents its episodes met, though the games changed the PFSP weights.
    await league.prepare(1)
    const seeds = Array.from({ length: 24 }, (_, index) => index)
    const play = async () => {
      const played = league.step(learner, 1, 'step-1')
      const games = await collect({ environments: [twoRoles], policies: played.policies, seeds, runId: 'step-1', generation: { maxTokens: 1 } })
      played.release()
      return { seating: played.seating, trajectories: games.trajectories }
    }
    const sampled = await play()
    expect(new Set([...sampled.seating.values()].map((seated) => seated.opponent))).toEqual(new Set(['snapshot-0', 'snapshot-1']))
    const weights = league.pool.weights()
    league.record(sampled.seating, sampled.trajectories)
    expect(league.pool.weights()).not.toEqual(weights)
    await league.prepare(1)
    expect((await play()).seating).toEqual(sampled.seating)
    model.dispose()
  })

  it('the snapshot model shares no variable with the learner: training the learner leaves the snapshot as it was', async () => {
    const model = createTestModel(5)
    const league = new League({
      model,
      tokenizer,
      maxGenerationBatch: 8,
      seed: 1,
      opponents: [snapshotPoolConfigSchema.parse(pool({ share: 1 }))],
      learnerId: learnerPolicyId,
      keepLast: 2,
    })
    await league.prepare(0)
    const first = [...model.parameters().values()][0]!
    const before = first.dataSync().slice()
    first.assign(tf.add(first, 1)) // "training" the learner
    const step = league.step(createLocalPolicy({ model, tokenizer, id: learnerPolicyId }), 0, 'step-0')
    const drawn = step.policies({ role: 'player0', roles: ['player0'], environmentId: 'pick-v1', seed: 0, groupIndex: 0, episodeIndex: 0 })
    expect(drawn.id).toBe('snapshot-0')
    const completion = await drawn.generate([{ prompt: 'x', maxTokens: 1, seed: 1, temperature: 0 }])
    expect(completion).toHaveLength(1)
    step.release()
    // The snapshot's values are the weights before the change, not after.
    const values = (league as unknown as { values: Map<number, Map<string, { data: Float32Array }>> }).values.get(0)!
    expect(Array.from(values.values().next().value!.data)).toEqual(Array.from(before))
    model.dispose()
  })
})

describe('League with a learner that trains LoRA adapters', () => {
  it("keeps the adapters only, and a snapshot's model is the base with the snapshot's adapters attached", async () => {
    const model = createTestModel(12)
    const lora = applyLora(model, { rank: 2, alpha: 4 })
    const league = new League({
      model,
      tokenizer,
      maxGenerationBatch: 8,
      seed: 1,
      opponents: [snapshotPoolConfigSchema.parse(pool({ share: 1, keep: 3 }))],
      learnerId: learnerPolicyId,
      keepLast: 2,
    })
    const ids = [[5, 9, 33, 70]]
    const logitsOf = (of: ReturnType<typeof createTestModel>) => tf.tidy(() => Array.from(of.forward(ids).dataSync()))
    const learner = createLocalPolicy({ model, tokenizer, id: learnerPolicyId })
    await league.prepare(0) // B = 0: the base model
    const base = logitsOf(model)
    for (const [name, variable] of lora.parameters()) if (name.endsWith('lora_B.weight')) variable.assign(tf.randomNormal(variable.shape, 0, 0.5, 'float32', 3))
    await league.prepare(1) // the adapters trained
    const trained = logitsOf(model)
    expect(trained).not.toEqual(base)
    const values = (league as unknown as { values: Map<number, Map<string, unknown>> }).values
    expect([...values.get(1)!.keys()].sort()).toEqual([...lora.parameters().keys()].sort()) // the adapters only
    const tensors = tf.memory().numTensors
    const step = league.step(learner, 1, 'step-1')
    const seat = (groupIndex: number) =>
      step.policies({ role: 'player0', roles: ['player0'], environmentId: 'pick-v1', seed: 0, groupIndex, episodeIndex: groupIndex })
    const drawn = new Set(Array.from({ length: 12 }, (_, index) => seat(index).id))
    expect(drawn).toEqual(new Set(['snapshot-0', 'snapshot-1']))
    step.release()
    expect(tf.memory().numTensors).toBe(tensors)
    // The snapshots' models reproduce the learner at their steps (made directly, as the step makes them).
    const made = (league as unknown as { snapshotModelOf(step: number): ReturnType<typeof createTestModel> }).snapshotModelOf
    for (const [snapshot, expected] of [
      [0, base],
      [1, trained],
    ] as const) {
      const copy = made.call(league, snapshot)
      expect(copy.linearAdapters().size).toBe(model.linearAdapters().size)
      const logits = logitsOf(copy)
      logits.forEach((value, index) => expect(value).toBeCloseTo(expected[index]!, 5))
      copy.dispose()
    }
    expect(tf.memory().numTensors).toBe(tensors)
    model.dispose()
  })

  it('trains the adapters against their own snapshots, with no leak', async () => {
    const model = createTestModel(13)
    applyLora(model, { rank: 2 })
    const trainer = createRlTrainer(leagueConfig(model))
    await trainer.step()
    const tensors = tf.memory().numTensors
    const metrics = [await trainer.step(), await trainer.step()]
    expect(tf.memory().numTensors).toBe(tensors)
    expect(metrics.map((step) => step['league/members'])).toEqual([2, 2])
    expect(metrics[1]!['league/games']).toBeGreaterThan(0)
    trainer.dispose()
    model.dispose()
  })
})

describe('createRlTrainer with a snapshot pool', () => {
  it('logs the pool and its ratings each step, leaks no tensor, and is the same again for the same seed', async () => {
    const run = async () => {
      const model = createTestModel(6)
      const trainer = createRlTrainer(leagueConfig(model))
      await trainer.step()
      const tensors = tf.memory().numTensors
      const history = [await trainer.step(), await trainer.step()]
      expect(tf.memory().numTensors).toBe(tensors)
      trainer.dispose()
      model.dispose()
      return history.map((metrics) => Object.fromEntries(Object.entries(metrics).filter(([name]) => !/Seconds|PerSecond/.test(name))))
    }
    const history = await run()
    const last = history.at(-1)!
    expect(last['league/members']).toBe(2) // keep 2 of the snapshots of steps 0, 1, 2
    expect(Object.keys(last).filter((name) => name.startsWith('league/winRate/'))).toEqual(['league/winRate/snapshot-1', 'league/winRate/snapshot-2'])
    expect(Number.isFinite(last['league/rating/learner'])).toBe(true)
    expect(history.some((metrics) => Number.isFinite(metrics['league/rating/always-b']))).toBe(true)
    expect(last['league/games']).toBeGreaterThan(0)
    expect(await run()).toEqual(history)
  })

  it('resumes with its pool restored from the run directory, bit for bit', async () => {
    await expectResumeBitForBit({
      make: (model, runDirectory, resume) =>
        createRlTrainer(leagueConfig(model, { runDirectory, checkpointEvery: 2, keepLast: 2, resume, trajectories: { enabled: false } })),
      seed: 8,
      directory: temporaryDirectory(),
      // (forwardTensorBytes counts every live tensor of the process: the straight run's model is alive beside the resumed one.)
      timed: ['rolloutSeconds', 'updateSeconds', 'tokensPerSecond', 'forwardTensorBytes'],
    })
    // The files: the pool's (snapshots 3 and 4) and those the kept checkpoints (steps 4 and 5) name, no more.
    const files = (await readdir(join(temporaryDirectory(), 'resumed', 'league'))).sort()
    expect(files).toEqual(['snapshot-2.safetensors', 'snapshot-3.safetensors', 'snapshot-4.safetensors'])
  })

  it("refuses to resume when a snapshot of the checkpoint's pool is missing, naming its file", async () => {
    const runDirectory = join(temporaryDirectory(), 'missing')
    const model = createTestModel(9)
    const trainer = createRlTrainer(leagueConfig(model, { runDirectory, checkpointEvery: 2, trajectories: { enabled: false } }))
    await trainer.run({ steps: 2 })
    trainer.dispose()
    await rm(join(runDirectory, 'league', 'snapshot-0.safetensors'))
    const resumed = createRlTrainer(leagueConfig(model, { runDirectory, checkpointEvery: 2, resume: true, trajectories: { enabled: false } }))
    await expect(resumed.step()).rejects.toThrow(/snapshot of step 0 cannot be read from .*snapshot-0\.safetensors/)
    resumed.dispose()
    model.dispose()
  })

  it('refuses a pool it cannot play, by name, when the trainer is built', async () => {
    const model = createTestModel(10)
    const refused = (extra: Partial<RlTrainerConfig>) => {
      try {
        createRlTrainer(leagueConfig(model, extra))
      } catch (error) {
        return error as InvalidArgumentError
      }
      throw new Error('not refused')
    }
    expect(refused({ opponents: [pool({ share: 0.5 }), pool({ share: 0.5 })] }).message).toMatch(/config\.opponents\.1.*second snapshot pool/)
    expect(refused({ opponents: [pool({ share: 0.5 })], rolePolicies: { player1: createScriptedPolicy({ id: 'b', replies: () => 'b' }) } }).message).toMatch(
      /config\.opponents\.0.*rolePolicies/,
    )
    expect(
      refused({ opponents: [pool({ share: 0.5 }), { policy: createScriptedPolicy({ id: 'snapshot-3', replies: () => 'b' }), share: 0.5 }] }).message,
    ).toMatch(/config\.opponents\.1\.policy\.id/)
    expect(refused({ opponents: [pool({ share: 0.5, sampling: 'best' as never })] }).message).toMatch(/config\.opponents\.0/)
    const tooSmall = refused({ opponents: [pool({ share: 0.5, maxBytes: 1000 })] })
    expect(InvalidArgumentError.isInstance(tooSmall)).toBe(true)
    expect(tooSmall.argument).toBe('config.opponents.0.maxBytes')
    expect(() => createRlTrainer(leagueConfig(model), { rolloutSource: () => ({}) as never })).toThrow(/config\.opponents\.0.*hooks\.rolloutSource/)
    const adapted = createTestModel(11)
    adapted.setAdapter('model.layers.0.self_attn.q_proj', { merged: false, apply: (x) => tf.zerosLike(x) as tf.Tensor2D })
    expect(() => createRlTrainer(leagueConfig(adapted))).toThrow(/config\.opponents\.0.*not LoRA adapters/)
    adapted.dispose()
    model.dispose()
  })
})
