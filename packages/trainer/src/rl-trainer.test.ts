import { readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError } from '@ludic/core'
import { createScriptedPolicy } from '@ludic/core/test'
import { createGrpo, createRae } from '@ludic/advantages'
import { applyLora, createModel, loadTrainingCheckpoint, sequenceLogprobs } from '@ludic/model'
import { describe, expect, it, vi } from 'vitest'
import { entropyKeep } from './experience/update.js'
import { learnerPolicyId, type RlTrainerConfig } from './rl-config.js'
import { ResumeError } from './run-state.js'
import { checkRlTrainerConfig, createRlTrainer } from './rl-trainer.js'
import { createSftTrainer } from './sft-trainer.js'
import { createPickEnvironment, createTestModel, tokenizer, useBackendAndDirectory } from './test/support.js'

const temporaryDirectory = useBackendAndDirectory('ludic-trainer-')

const twoRoles = () => createPickEnvironment(['player0', 'player1'])
const baseConfig = (model: ReturnType<typeof createTestModel>, extra: Partial<RlTrainerConfig> = {}): RlTrainerConfig => ({
  model,
  tokenizer,
  environments: [twoRoles],
  optimizer: { learningRate: 3e-3 },
  batch: { episodesPerStep: 4, miniBatchSize: 4, ppoEpochs: 2, maxTokens: 2 },
  seed: 3,
  ...extra,
})

const snapshot = (model: ReturnType<typeof createTestModel>) => new Map([...model.parameters()].map(([name, variable]) => [name, variable.dataSync().slice()]))

describe('createRlTrainer', () => {
  it('takes a step that changes the weights, logs every term, and leaks no tensor', async () => {
    const model = createTestModel(1)
    const runDirectory = join(temporaryDirectory(), 'step')
    const trainer = createRlTrainer(baseConfig(model, { runDirectory }))
    const before = snapshot(model)
    const first = await trainer.step()
    const after = snapshot(model)
    expect([...before].some(([name, values]) => values.some((value, index) => value !== after.get(name)![index]))).toBe(true)
    const tensors = tf.memory().numTensors
    const second = await trainer.step()
    expect(tf.memory().numTensors).toBe(tensors)
    for (const name of [
      'reward/pick-v1/player0',
      'reward/pick-v1/player1',
      'winRate/pick-v1/player0',
      'invalidRate',
      'responseLength',
      'entropy',
      'approxKl',
      'clipFraction',
      'pgLoss',
      'loss',
      'grad_norm',
      'tokensPerSecond',
    ]) {
      expect(Number.isFinite(second[name]), name).toBe(true)
    }
    expect(first.step).toBe(1)
    expect(first.episodes).toBe(4)
    const lines = (await readFile(join(runDirectory, 'metrics.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { step: number })
    expect(lines.map((line) => line.step)).toEqual([1, 2])
    trainer.dispose()
    model.dispose()
  })

  it('recomputeLayers reaches the forward pass and gives the same update as keeping the activations, without a leak', async () => {
    const run = async (recomputeLayers: boolean) => {
      const model = createTestModel(1)
      const forward = vi.spyOn(model, 'hiddenStates')
      const trainer = createRlTrainer(baseConfig(model, { recomputeLayers, entropyCoefficient: 0.01 }))
      await trainer.step()
      const tensors = tf.memory().numTensors
      const metrics = await trainer.step()
      expect(tf.memory().numTensors).toBe(tensors)
      const recomputedCalls = forward.mock.calls.filter(([, options]) => options?.recomputeLayers === true).length
      const weights = snapshot(model)
      trainer.dispose()
      model.dispose()
      return { metrics, weights, recomputedCalls }
    }
    const kept = await run(false)
    const recomputed = await run(true)
    expect(kept.recomputedCalls).toBe(0)
    expect(recomputed.recomputedCalls).toBeGreaterThan(0)
    for (const name of ['loss', 'pgLoss', 'entropy', 'grad_norm']) expect(recomputed.metrics[name], name).toBeCloseTo(kept.metrics[name]!, 5)
    let largest = 0
    for (const [name, values] of kept.weights)
      values.forEach((value, index) => (largest = Math.max(largest, Math.abs(value - recomputed.weights.get(name)![index]!))))
    expect(largest).toBeLessThan(1e-5)
  })

  it('resumes from the latest checkpoint exactly as an uninterrupted run (bit for bit)', async () => {
    const options = {
      checkpointEvery: 2,
      batch: { episodesPerStep: 3, miniBatchSize: 2, ppoEpochs: 2, maxTokens: 2 },
      kl: { coefficient: 0.05 },
      entropyCoefficient: 0.01,
    }
    const straightModel = createTestModel(5)
    const straight = createRlTrainer(baseConfig(straightModel, { ...options, runDirectory: join(temporaryDirectory(), 'straight') }))
    await straight.run({ steps: 4 })

    const interruptedModel = createTestModel(5)
    const interrupted = createRlTrainer(baseConfig(interruptedModel, { ...options, runDirectory: join(temporaryDirectory(), 'resumed') }))
    for (let step = 0; step < 3; step++) await interrupted.step() // checkpoint at 2; step 3 is "lost" in a crash
    interrupted.dispose()
    interruptedModel.dispose()

    const resumedModel = createTestModel(99) // other initial weights: everything comes from the checkpoint
    const resumed = createRlTrainer(baseConfig(resumedModel, { ...options, runDirectory: join(temporaryDirectory(), 'resumed'), resume: true }))
    await resumed.run({ steps: 4 })
    expect(resumed.stepCount).toBe(4)
    const expected = snapshot(straightModel)
    for (const [name, values] of snapshot(resumedModel)) expect(values, name).toEqual(expected.get(name))
    const steps = (await readFile(join(temporaryDirectory(), 'resumed', 'metrics.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { step: number }).step)
    expect(steps).toEqual([1, 2, 3, 4])
    expect(resumed.history.map((metrics) => metrics.loss)).toEqual(straight.history.map((metrics) => metrics.loss))
    for (const item of [straight, resumed]) item.dispose()
    straightModel.dispose()
    resumedModel.dispose()
  })

  it('kl.referenceSync moves the reference toward the policy every k steps, and a resumed run restores the moved reference', async () => {
    const savedReference = async (directory: string, step: number) => {
      const reference = createTestModel(77)
      await loadTrainingCheckpoint(join(directory, 'reference', `checkpoint-${step}`), { parameters: reference.parameters() })
      const weights = snapshot(reference)
      reference.dispose()
      return weights
    }
    // α = 1 (the default), every step: the reference saved with checkpoint 1 is the policy after step 1, bit for bit.
    const copied = createTestModel(6)
    const copiedDirectory = join(temporaryDirectory(), 'sync-copy')
    const copying = createRlTrainer(
      baseConfig(copied, { checkpointEvery: 1, runDirectory: copiedDirectory, kl: { coefficient: 0.05, referenceSync: { every: 1 } } }),
    )
    await copying.step()
    const policy = snapshot(copied)
    for (const [name, values] of await savedReference(copiedDirectory, 1)) expect(values, name).toEqual(policy.get(name))
    copying.dispose()
    copied.dispose()

    const options = { checkpointEvery: 1, keepLast: 10, kl: { coefficient: 0.2, referenceSync: { every: 2, mixupAlpha: 0.5 } }, entropyCoefficient: 0.01 }
    const straightModel = createTestModel(6)
    const straightDirectory = join(temporaryDirectory(), 'sync-straight')
    const straight = createRlTrainer(baseConfig(straightModel, { ...options, runDirectory: straightDirectory }))
    const start = snapshot(straightModel)
    for (let step = 0; step < 2; step++) await straight.step()
    const afterTwo = snapshot(straightModel)
    await straight.run({ steps: 5 })
    // The reference saved with checkpoint 2 is ½·θ₂ + ½·θ₀; with checkpoint 1 it is still θ₀.
    const one = await savedReference(straightDirectory, 1)
    for (const [name, values] of one) expect(values, name).toEqual(start.get(name))
    const two = await savedReference(straightDirectory, 2)
    let largest = 0
    for (const [name, values] of two) {
      const expected = Float32Array.from(afterTwo.get(name)!, (value, index) => 0.5 * value + 0.5 * start.get(name)![index]!)
      largest = Math.max(largest, ...values.map((value, index) => Math.abs(value - expected[index]!)))
    }
    expect(largest).toBeLessThan(1e-6)
    expect([...two].some(([name, values]) => values.some((value, index) => value !== start.get(name)![index]))).toBe(true)

    // Killed after step 3 (checkpoint 3; the reference last moved at step 2), resumed to 5: equal to the straight run.
    const interruptedModel = createTestModel(6)
    const interrupted = createRlTrainer(baseConfig(interruptedModel, { ...options, runDirectory: join(temporaryDirectory(), 'sync-resumed') }))
    for (let step = 0; step < 3; step++) await interrupted.step()
    interrupted.dispose()
    interruptedModel.dispose()
    const resumedModel = createTestModel(99)
    const resumed = createRlTrainer(baseConfig(resumedModel, { ...options, runDirectory: join(temporaryDirectory(), 'sync-resumed'), resume: true }))
    await resumed.run({ steps: 5 })
    const expected = snapshot(straightModel)
    for (const [name, values] of snapshot(resumedModel)) expect(values, name).toEqual(expected.get(name))
    expect(resumed.history.map((metrics) => metrics.kl)).toEqual(straight.history.map((metrics) => metrics.kl))
    for (const item of [straight, resumed]) item.dispose()
    straightModel.dispose()
    resumedModel.dispose()
  })

  it('refuses kl.referenceSync where the reference cannot move: an off-policy source, LoRA adapters', () => {
    const model = createTestModel(6)
    const attempt = (config: RlTrainerConfig) => {
      try {
        createRlTrainer(config).dispose()
      } catch (error) {
        return error as InvalidArgumentError
      }
      throw new Error('not refused')
    }
    const sync = { coefficient: 0.1, referenceSync: { every: 1 } }
    const workers = attempt({
      ...baseConfig(model),
      environments: undefined,
      kl: sync,
      asyncRollout: { setupModule: '/nowhere.js' },
      recomputeOldLogprobs: true,
    })
    expect(workers).toBeInstanceOf(InvalidArgumentError)
    expect(workers.argument).toBe('config.kl.referenceSync')
    expect(workers.message).toContain('off-policy')
    applyLora(model, { rank: 2, targetModules: ['q_proj'] })
    const lora = attempt(baseConfig(model, { kl: sync }))
    expect(lora.argument).toBe('config.kl.referenceSync')
    expect(lora.message).toContain('LoRA')
    expect(() => createRlTrainer(baseConfig(model, { kl: { coefficient: 0.1, referenceSync: { every: 0 } } }))).toThrow(/config\.kl\.referenceSync\.every/)
    model.dispose()
  })

  it('resumes from the newest checkpoint that loads, setting a broken one aside and saying so', async () => {
    const runDirectory = join(temporaryDirectory(), 'broken')
    const options = { checkpointEvery: 1, keepLast: 3, runDirectory }
    const straightModel = createTestModel(6)
    const straight = createRlTrainer(baseConfig(straightModel, { ...options, runDirectory: join(temporaryDirectory(), 'broken-straight') }))
    await straight.run({ steps: 3 })
    const firstModel = createTestModel(6)
    const first = createRlTrainer(baseConfig(firstModel, options))
    await first.run({ steps: 2 })
    first.dispose()
    firstModel.dispose()
    // A crash cut the newest checkpoint's weights short.
    const weights = join(runDirectory, 'checkpoint-2', 'model.safetensors')
    await writeFile(weights, (await readFile(weights)).subarray(0, 100))
    const notices: string[] = []
    const resumedModel = createTestModel(98)
    const resumed = createRlTrainer(baseConfig(resumedModel, { ...options, resume: true, notify: (message) => notices.push(message) }))
    await resumed.run({ steps: 3 })
    expect(notices).toHaveLength(1)
    expect(notices[0]).toMatch(/checkpoint-2 cannot be read .*set aside as .*broken-checkpoint-2-/)
    expect((await readdir(runDirectory)).filter((name) => name.startsWith('broken-checkpoint-2-'))).toHaveLength(1)
    const steps = (await readFile(join(runDirectory, 'metrics.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { step: number }).step)
    expect(steps).toEqual([1, 2, 3])
    const expected = snapshot(straightModel)
    for (const [name, values] of snapshot(resumedModel)) expect(values, name).toEqual(expected.get(name))
    for (const item of [straight, resumed]) item.dispose()
    straightModel.dispose()
    resumedModel.dispose()
  })

  it('starts metrics.jsonl over when a run killed before its first checkpoint is run again', async () => {
    const runDirectory = join(temporaryDirectory(), 'no-checkpoint')
    for (let attempt = 0; attempt < 2; attempt++) {
      const model = createTestModel(7)
      const trainer = createRlTrainer(baseConfig(model, { runDirectory, checkpointEvery: 10, resume: true }))
      await trainer.step()
      await trainer.step() // killed here: no checkpoint was written
      trainer.dispose()
      model.dispose()
    }
    const steps = (await readFile(join(runDirectory, 'metrics.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { step: number }).step)
    expect(steps).toEqual([1, 2])
  })

  it('scales β by kl.schedule each step: β·m(step) trains as that constant β would, and is logged', async () => {
    const run = async (kl: RlTrainerConfig['kl']) => {
      const model = createTestModel(4)
      const trainer = createRlTrainer(baseConfig(model, { kl }))
      const coefficients: (number | undefined)[] = []
      for (let step = 0; step < 3; step++) coefficients.push((await trainer.step()).klCoefficient)
      const weights = snapshot(model)
      trainer.dispose()
      model.dispose()
      return { coefficients, weights }
    }
    const differs = (a: ReturnType<typeof snapshot>, b: ReturnType<typeof snapshot>) =>
      [...a].some(([name, values]) => values.some((value, index) => value !== b.get(name)![index]))
    const halved = await run({ coefficient: 0.4, schedule: () => 0.5 })
    const constant = await run({ coefficient: 0.2 })
    const doubled = await run({ coefficient: 0.4 })
    expect(halved.coefficients).toEqual([0.2, 0.2, 0.2])
    expect(constant.coefficients).toEqual([0.2, 0.2, 0.2])
    // The schedule's β is the β trained with (bit for bit), and the KL term moves the weights (β 0.4 differs).
    expect(differs(halved.weights, constant.weights)).toBe(false)
    expect(differs(doubled.weights, constant.weights)).toBe(true)
    // By name: a cosine from β to 0 over 2 steps.
    const annealed = await run({ coefficient: 0.4, schedule: { type: 'warmup-cosine', totalSteps: 2, minRatio: 0 } })
    expect(annealed.coefficients[0]).toBe(0.4)
    expect(annealed.coefficients[1]).toBeCloseTo(0.2, 12)
    expect(annealed.coefficients[2]).toBe(0)
    expect(() => createRlTrainer(baseConfig(createTestModel(4), { kl: { coefficient: 0.1, schedule: { type: 'warmup-cosine', totalSteps: 0 } } }))).toThrow(
      /config\.kl\.schedule/,
    )
  })

  it('restricts the entropy bonus to the response tokens whose ids are not excluded', async () => {
    const sequences = [
      { promptIds: Int32Array.from([1]), responseIds: Int32Array.from([5, 7, 9]) },
      { promptIds: Int32Array.from([1]), responseIds: Int32Array.from([7]) },
    ]
    expect([...entropyKeep(sequences, 3, new Set([7]))]).toEqual([1, 0, 1, 0, 0, 0])
    // Every id excluded: no position counts, the entropy term is 0; none excluded: it is positive.
    const all = Array.from({ length: 259 }, (_, id) => id)
    const excluded = createTestModel(2)
    const masked = createRlTrainer(baseConfig(excluded, { entropyCoefficient: 0.1, entropyExcludeTokenIds: all }))
    expect((await masked.step()).entropy).toBe(0)
    masked.dispose()
    excluded.dispose()
    const plain = createTestModel(2)
    const unmasked = createRlTrainer(baseConfig(plain, { entropyCoefficient: 0.1 }))
    expect((await unmasked.step()).entropy).toBeGreaterThan(0)
    unmasked.dispose()
    plain.dispose()
  })

  it('learns: after SFT on a and b, self-play with RAE makes the policy prefer the winning answer', async () => {
    const model = createTestModel(2)
    const prompt = (role: string, seed: number) =>
      tokenizer.encode(tokenizer.applyChatTemplate!([{ role: 'user', content: `game ${seed}: ${role} picks a or b` }], { addGenerationPrompt: true }), {
        addSpecialTokens: false,
      })
    const examples = [0, 1, 2, 3, 4, 5, 6].flatMap((seed) =>
      ['a', 'b'].map((letter) => ({ promptIds: prompt('player0', seed), responseIds: tokenizer.encode(letter, { addSpecialTokens: false }) })),
    )
    const sft = createSftTrainer({ model, examples, batchSize: 14, optimizer: { learningRate: 1e-2 }, seed: 1 })
    const sftHistory = await sft.run({ steps: 25 })
    sft.dispose()
    expect(sftHistory.at(-1)!.loss).toBeLessThan(0.8) // ≈ ln 2: a and b equally likely, nothing else
    const probabilityOfA = () =>
      tf.tidy(() => {
        const promptIds = [0, 1, 2, 3, 4, 5, 6].flatMap((seed) => [prompt('player0', seed), prompt('player0', seed)])
        const responseIds = promptIds.map((_, index) => tokenizer.encode(index % 2 === 0 ? 'a' : 'b', { addSpecialTokens: false }))
        const logprobs = sequenceLogprobs(model, { promptIds, responseIds }).logprobs.dataSync()
        let total = 0
        for (let index = 0; index < logprobs.length; index += 2)
          total += Math.exp(logprobs[index]!) / (Math.exp(logprobs[index]!) + Math.exp(logprobs[index + 1]!))
        return total / (logprobs.length / 2)
      })
    const before = probabilityOfA()
    const trainer = createRlTrainer({
      model,
      tokenizer,
      environments: [() => createPickEnvironment(['player0'])],
      optimizer: { learningRate: 1e-2 },
      batch: { episodesPerStep: 16, miniBatchSize: 16, ppoEpochs: 2, maxTokens: 1 },
      seed: 4,
    })
    const history = await trainer.run({ steps: 15 })
    const after = probabilityOfA()
    expect(before).toBeGreaterThan(0.3)
    expect(before).toBeLessThan(0.7)
    expect(after).toBeGreaterThan(0.9)
    expect(history.at(-1)!['reward/pick-v1/player0']).toBeGreaterThan(history[0]!['reward/pick-v1/player0']!)
    trainer.dispose()
    model.dispose()
  })

  it('takes any advantage estimator and calls the evaluation hook every k steps', async () => {
    const model = createTestModel(3)
    const seen: number[] = []
    const trainer = createRlTrainer(
      baseConfig(model, {
        advantage: createGrpo(),
        batch: { episodesPerStep: 2, groupSize: 2, miniBatchSize: 8, ppoEpochs: 1, maxTokens: 2 },
        evaluateEvery: 2,
        evaluate: ({ step }) => {
          seen.push(step)
          return { score: step * 10 }
        },
      }),
    )
    const history = await trainer.run({ steps: 4 })
    expect(seen).toEqual([2, 4])
    expect(history.map((metrics) => metrics['eval/score'])).toEqual([undefined, 20, undefined, 40])
    trainer.dispose()
    model.dispose()
  })

  it("plays fixed opponents in a share of the episodes and trains on the model's turns only", async () => {
    const model = createTestModel(7)
    const run = async (share: number) => {
      const opponent = createScriptedPolicy({ id: 'always-b', replies: () => 'b' })
      const trainer = createRlTrainer(
        baseConfig(model, { opponents: [{ policy: opponent, share }], batch: { episodesPerStep: 16, miniBatchSize: 16, ppoEpochs: 1, maxTokens: 2 } }),
      )
      const metrics = await trainer.step()
      trainer.dispose()
      const roles = new Set(opponent.requests.map((request) => /player\d/.exec(request.messages!.at(-1)!.content)![0]))
      return { requests: opponent.requests.length, roles, samples: metrics.samples! }
    }
    // Every episode has the opponent in one of the two roles (drawn per episode); the model plays the other,
    // so at most one sample per episode (an invalid first move ends an episode before the second role acts).
    const all = await run(1)
    expect(all.requests).toBeGreaterThan(0)
    expect(all.requests).toBeLessThan(16) // player0 in some episodes only (as player1 it acts only after a valid first move)
    expect(all.samples).toBeLessThanOrEqual(16)
    expect(all.samples + all.requests).toBeGreaterThanOrEqual(16)
    const half = await run(0.5)
    expect(half.requests).toBeGreaterThan(0)
    expect(half.requests).toBeLessThan(all.requests + 1)
    expect(half.samples + half.requests).toBeGreaterThanOrEqual(16)
    expect(await run(0.5)).toEqual(half) // drawn from the seed and step: the same again
    expect(() =>
      createRlTrainer(
        baseConfig(model, {
          opponents: [
            { policy: createScriptedPolicy({ id: 'a', replies: () => 'a' }), share: 0.7 },
            { policy: createScriptedPolicy({ id: 'b', replies: () => 'b' }), share: 0.5 },
          ],
        }),
      ),
    ).toThrow(/config.opponents.*add up to at most 1/)
    expect(() =>
      createRlTrainer(baseConfig(model, { opponents: [{ policy: createScriptedPolicy({ id: learnerPolicyId, replies: () => 'a' }), share: 0.5 }] })),
    ).toThrow(/config.opponents.0.policy.id/)
    model.dispose()
  })

  it("seats a fixed opponent by its seats' weights, and refuses seats naming a role it cannot play when built", async () => {
    const model = createTestModel(7)
    const opponent = createScriptedPolicy({ id: 'always-b', replies: () => 'b' })
    const trainer = createRlTrainer(
      baseConfig(model, {
        opponents: [{ policy: opponent, share: 1, seats: { player0: 1 } }],
        batch: { episodesPerStep: 16, miniBatchSize: 16, ppoEpochs: 1, maxTokens: 2 },
      }),
    )
    await trainer.step()
    trainer.dispose()
    // Seated first in every episode (the seats alike: about half; the share-1 test above), so asked once an episode, as player0.
    const asked = opponent.requests.map((request) => /player\d/.exec(request.messages!.at(-1)!.content)![0])
    expect(asked).toEqual(Array.from({ length: 16 }, () => 'player0'))
    const withSeats = (seats: Record<string, number>, extra: Partial<RlTrainerConfig> = {}) =>
      baseConfig(model, { opponents: [{ policy: createScriptedPolicy({ id: 'a', replies: () => 'a' }), share: 0.5, seats }], ...extra })
    expect(() => createRlTrainer(withSeats({ player9: 1 }))).toThrow(
      /config\.opponents\.0\.seats\.player9.*environment 0 does not have \(its roles: player0, player1\)/,
    )
    expect(() => checkRlTrainerConfig(withSeats({ player9: 1 }))).toThrow(/config\.opponents\.0\.seats\.player9/)
    expect(() => createRlTrainer(withSeats({ player0: 0, player1: 0 }))).toThrow(/config\.opponents\.0\.seats.*a role with a weight above 0/)
    expect(() => createRlTrainer(withSeats({ player0: -1 }))).toThrow(/config\.opponents\.0\.seats\.player0/)
    expect(() => createRlTrainer(withSeats({ player1: 1 }, { rolePolicies: { player1: createScriptedPolicy({ id: 'user', replies: () => 'a' }) } }))).toThrow(
      /config\.opponents\.0\.seats\.player1.*played by config\.rolePolicies/,
    )
    model.dispose()
  })

  it("keeps RAE's baselines per opponent with perOpponent: the scripted opponent's games and self-play's apart; resumes only so", async () => {
    const model = createTestModel(7)
    const rae = createRae({ perOpponent: true })
    const opponent = createScriptedPolicy({ id: 'always-b', replies: () => 'b' })
    const runDirectory = join(temporaryDirectory(), 'per-opponent')
    const config = (advantage: ReturnType<typeof createRae>, resume = false) =>
      baseConfig(model, {
        advantage,
        opponents: [{ policy: opponent, share: 0.5 }],
        batch: { episodesPerStep: 16, miniBatchSize: 16, ppoEpochs: 1, maxTokens: 2 },
        runDirectory,
        checkpointEvery: 1,
        resume,
      })
    const trainer = createRlTrainer(config(rae))
    await trainer.step()
    trainer.dispose()
    // A seat's opponent is the one seated, also in games that ended before it acted (the untrained model's moves are
    // mostly invalid, so in self-play player1 rarely gets a turn).
    const baselines = rae.getState().baselines
    expect(new Set(baselines.map((baseline) => baseline.opponent))).toEqual(new Set(['always-b', learnerPolicyId]))
    const player0 = baselines.filter((baseline) => baseline.role === 'player0').map((baseline) => baseline.opponent)
    expect(player0.sort()).toEqual(['always-b', learnerPolicyId])
    // Resumed with per-role baselines, the checkpoint's per-opponent ones are refused as a ResumeError, naming the estimator.
    const perRole = createRlTrainer(config(createRae(), true))
    const error = await perRole.step().catch((caught: unknown) => caught)
    expect(ResumeError.isInstance(error) && error.reason).toBe('estimator-state')
    expect((error as Error).message).toMatch(/estimator 'rae' in checkpoint-1 does not fit config\.advantage.*has an opponent/)
    perRole.dispose()
    // With the same option it resumes, the baselines restored.
    const again = createRae({ perOpponent: true })
    const resumed = createRlTrainer(config(again, true))
    await resumed.step()
    expect(resumed.stepCount).toBe(2)
    expect(again.getState().baselines.length).toBeGreaterThanOrEqual(baselines.length)
    resumed.dispose()
    model.dispose()
  })

  it.each(['llama', 'gpt2'])(
    'plays the rollout on the generation engine (config.batch.engine, %s): the episodes of batched generation, steps that train',
    async (architecture) => {
      const testModel = () =>
        architecture === 'llama'
          ? createTestModel(5)
          : createModel('tiny', { vocabSize: 259, seed: 5, overrides: { architecture: 'gpt2', hiddenSize: 32, intermediateSize: 64 } })
      const batched = testModel()
      const onEngine = testModel()
      const config = (model: ReturnType<typeof createTestModel>, engine: boolean) =>
        baseConfig(model, { batch: { episodesPerStep: 8, miniBatchSize: 8, ppoEpochs: 1, maxTokens: 3, engine }, seed: 9 })
      const a = createRlTrainer(config(batched, false))
      const b = createRlTrainer(config(onEngine, true))
      try {
        const [first, second] = [await a.step(), await b.step()]
        for (const name of ['reward/pick-v1/player0', 'reward/pick-v1/player1', 'invalidRate', 'responseLength']) expect(second[name], name).toBe(first[name])
        const tensors = tf.memory().numTensors
        const later = await b.step() // new weights: the engine copies them and goes on
        expect(Number.isFinite(later.loss)).toBe(true)
        expect(tf.memory().numTensors).toBe(tensors)
      } finally {
        a.dispose()
        b.dispose()
        batched.dispose()
        onEngine.dispose()
      }
    },
  )

  it('rejects bad configurations with errors that name the argument', () => {
    const model = createTestModel(4)
    const attempt = (config: unknown) => {
      try {
        createRlTrainer(config as RlTrainerConfig)
      } catch (error) {
        return error
      }
      return undefined
    }
    const noModel = attempt({ ...baseConfig(model), model: 'tiny' })
    expect(noModel).toBeInstanceOf(InvalidArgumentError)
    expect((noModel as InvalidArgumentError).argument).toBe('config.model')
    expect((attempt({ ...baseConfig(model), environments: [] }) as InvalidArgumentError).argument).toBe('config.environments')
    expect((attempt({ ...baseConfig(model), batch: { ppoEpochs: 0 } }) as InvalidArgumentError).argument).toBe('config.batch.ppoEpochs')
    expect((attempt({ ...baseConfig(model), checkpointEvery: 3 }) as InvalidArgumentError).argument).toBe('config.runDirectory')
    expect(attempt({ ...baseConfig(model), unknownOption: 1 }) as InvalidArgumentError).toBeInstanceOf(InvalidArgumentError)
    expect((attempt({ ...baseConfig(model), resume: true }) as InvalidArgumentError).argument).toBe('config.runDirectory')
    // Engine settings it cannot run (no row fits the KV budget), named under config.batch.engine; with worker threads
    // too, refused when the trainer is built, before a worker starts.
    const noRow = attempt({ ...baseConfig(model), batch: { engine: { kvCacheBytes: 1 } } }) as InvalidArgumentError
    const noRowWorkers = attempt({
      ...baseConfig(model),
      environments: undefined,
      batch: { engine: { kvCacheBytes: 1 } },
      asyncRollout: { setupModule: '/nowhere.js' },
      recomputeOldLogprobs: true,
    }) as InvalidArgumentError
    for (const error of [noRow, noRowWorkers]) {
      expect(error.argument).toBe('config.batch.engine.kvCacheBytes')
      expect(error.message).toContain('holds no sequence')
    }
    // The engine's weight products on the backend are accepted; an unknown place is refused by name.
    expect(attempt({ ...baseConfig(model), batch: { engine: { products: 'backend' } } })).toBeUndefined()
    const unknownPlace = attempt({ ...baseConfig(model), batch: { engine: { products: 'gpu' } } }) as InvalidArgumentError
    expect(unknownPlace.argument).toBe('config.batch.engine')
    expect(unknownPlace.message).toMatch(/products/)
    const smallTokenizer = { ...tokenizer, vocabSize: 300 }
    const mismatch = attempt({ ...baseConfig(model), tokenizer: smallTokenizer }) as InvalidArgumentError
    expect(mismatch.message).toContain('tokenizer has 300 ids, model has 259')
    expect(() => createSftTrainer({ model, tokenizer: smallTokenizer, examples: [{ prompt: 'a', response: 'b' }] })).toThrow(
      /tokenizer has 300 ids, model has 259/,
    )
    model.dispose()
  })
})
