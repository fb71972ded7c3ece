import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError, LudicError, type Trajectory, type TrajectoryScorerV1 } from '@ludic/core'
import { createScriptedPolicy } from '@ludic/core/test'
import { applyLora } from '@ludic/model'
import { describe, expect, it } from 'vitest'
import { createCpoTrainer, type CpoTrainerConfig } from './cpo-trainer.js'
import { createChatEnvironment, createTestModel, tokenizer, useBackendAndDirectory } from './test/support.js'

useBackendAndDirectory('ludic-cpo-')

const characterReply = (trajectory: Trajectory) => trajectory.turns.find((turn) => turn.role === 'character')?.action ?? ''
const share = (text: string) => (text.length === 0 ? 0 : [...text].filter((character) => character === 'a').length / text.length)

/** A rule "judge": ranks the group by the share of `a`s in the character's reply; remembers the groups it saw. */
function createLetterScorer(): TrajectoryScorerV1 & { groups: Trajectory[][] } {
  const groups: Trajectory[][] = []
  let calls = 0
  return {
    specificationVersion: 'v1',
    name: 'letter-a',
    groups,
    async score(group) {
      groups.push([...group])
      calls++
      return group.map((trajectory) => share(characterReply(trajectory)))
    },
    takeMetrics() {
      const metrics = { 'judge/calls': calls }
      calls = 0
      return metrics
    },
  }
}

const userSimulator = () => createScriptedPolicy({ id: 'user-simulator', replies: () => 'hello there' })

const config = (scorer: TrajectoryScorerV1, extra: Partial<CpoTrainerConfig> = {}): CpoTrainerConfig => ({
  model: createTestModel(11),
  tokenizer,
  environments: [createChatEnvironment],
  rolePolicies: { user: userSimulator() },
  scorer,
  optimizer: { learningRate: 1e-2 },
  batch: { episodesPerStep: 4, groupSize: 4, miniBatchSize: 16, ppoEpochs: 2, maxTokens: 4 },
  seed: 2,
  ...extra,
})

describe('createCpoTrainer', () => {
  it('scores each group together, trains only the character, logs the scorer, and leaks no tensor', async () => {
    const scorer = createLetterScorer()
    const settings = config(scorer)
    const trainer = createCpoTrainer(settings)
    const first = await trainer.step()
    expect(scorer.groups).toHaveLength(4)
    for (const group of scorer.groups) {
      expect(group).toHaveLength(4)
      expect(new Set(group.map((trajectory) => trajectory.groupId)).size).toBe(1)
      expect(group.every((trajectory) => trajectory.turns[0]!.policyId === 'user-simulator')).toBe(true)
    }
    // Only the character's turns are samples: one per episode.
    expect(first.samples).toBe(16)
    expect(first['judge/calls']).toBe(4)
    const expectedMean = scorer.groups.flat().reduce((total, trajectory) => total + share(characterReply(trajectory)), 0) / 16
    expect(first['score/mean']).toBeCloseTo(expectedMean, 6)
    expect(first['reward/chat-v1/character']).toBeCloseTo(expectedMean, 6)
    expect(first['reward/chat-v1/user']).toBe(0)
    const tensors = tf.memory().numTensors
    await trainer.step()
    expect(tf.memory().numTensors).toBe(tensors)
    // Its progress bar says what it does (it said `self-play`, the RL trainer's label).
    const written: string[] = []
    await trainer.run({ steps: 3, progress: { write: (text: string) => written.push(text) } })
    expect(written.join('')).toContain('cpo [')
    expect(written.join('')).not.toContain('self-play')
    trainer.dispose()
    settings.model.dispose()
  })

  it('raises the judged score: the share of `a` in the replies grows over 25 steps', async () => {
    const settings = config(createLetterScorer(), { batch: { episodesPerStep: 8, groupSize: 4, miniBatchSize: 32, ppoEpochs: 2, maxTokens: 4 } })
    const trainer = createCpoTrainer(settings)
    const history = await trainer.run({ steps: 25 })
    const mean = (values: number[]) => values.reduce((total, value) => total + value, 0) / values.length
    const early = mean(history.slice(0, 5).map((metrics) => metrics['score/mean']!))
    const late = mean(history.slice(-5).map((metrics) => metrics['score/mean']!))
    expect(late).toBeGreaterThan(early + 0.2)
    trainer.dispose()
    settings.model.dispose()
  })

  it('trains only the LoRA adapters of a model that has them', async () => {
    const settings = config(createLetterScorer())
    const adapters = applyLora(settings.model, { rank: 2, targetModules: ['q_proj', 'v_proj'] })
    const frozen = new Map(
      [...settings.model.parameters()].filter(([name]) => !/lora_/.test(name)).map(([name, variable]) => [name, variable.dataSync().slice()]),
    )
    const lora = new Map([...settings.model.parameters()].filter(([name]) => /lora_/.test(name)).map(([name, variable]) => [name, variable.dataSync().slice()]))
    expect(lora.size).toBe(adapters.layers.length * 2)
    const trainer = createCpoTrainer(settings)
    await trainer.step()
    for (const [name, values] of frozen) expect(settings.model.parameter(name).dataSync(), name).toEqual(values)
    expect(
      [...lora].some(([name, values]) =>
        settings.model
          .parameter(name)
          .dataSync()
          .some((value, index) => value !== values[index]),
      ),
    ).toBe(true)
    trainer.dispose()
    settings.model.dispose()
  })

  it('refuses a missing scorer, groups of one, a fixed role trained or played by the learner, and bad scores', async () => {
    const scorer = createLetterScorer()
    const model = createTestModel(3)
    const base = { ...config(scorer), model }
    expect(() => createCpoTrainer({ ...base, scorer: undefined as unknown as TrajectoryScorerV1 })).toThrow(/config\.scorer/)
    expect(() => createCpoTrainer({ ...base, batch: { groupSize: 1 } })).toThrow(/config\.batch\.groupSize.*at least 2/)
    expect(() => createCpoTrainer({ ...base, trainRoles: ['user'] })).toThrow(/config\.trainRoles/)
    expect(() => createCpoTrainer({ ...base, rolePolicies: { user: createScriptedPolicy({ id: 'learner', replies: [] }) } })).toThrow(InvalidArgumentError)
    const broken: TrajectoryScorerV1 = { specificationVersion: 'v1', name: 'broken', score: async (group) => group.map(() => Number.NaN) }
    const trainer = createCpoTrainer({ ...base, scorer: broken })
    await expect(trainer.step()).rejects.toSatisfy((error: unknown) => LudicError.isInstance(error) && /scorer 'broken'.*finite/.test(String(error)))
    trainer.dispose()
    model.dispose()
  })
})
