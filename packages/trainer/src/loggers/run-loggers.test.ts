import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { InvalidArgumentError } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import type { StepMetrics } from '../metrics-log.js'
import { createPreferenceTrainer } from '../preference-trainer.js'
import { createRewardModelTrainer } from '../reward-model-trainer.js'
import type { RlTrainerConfig } from '../rl-config.js'
import { createRlTrainer } from '../rl-trainer.js'
import { createPickEnvironment, createTestModel, tokenizer, useBackendAndDirectory } from '../test/support.js'
import { readEventFile } from '../test/tensorboard-reader.js'
import type { RunLoggerV1, RunStartV1 } from './run-logger.js'
import { createRunLoggers, plainConfig, redactSecrets, runConfigLoggersSchema, runLoggersSchema } from './run-loggers.js'

const temporaryDirectory = useBackendAndDirectory('ludic-run-loggers-')

/** A user's logger that records every call. */
function recordingLogger(calls: unknown[][]): RunLoggerV1 {
  return {
    specificationVersion: 'v1',
    name: 'recording',
    start: (run: RunStartV1) => void calls.push(['start', run.trainer, run.resumedAtStep, run.history?.map((record) => record.step)]),
    log: (metrics: StepMetrics) => void calls.push(['log', metrics.step]),
    text: (tag: string, step: number) => void calls.push(['text', tag, step]),
    close: () => void calls.push(['close']),
  }
}

const rlConfig = (extra: Partial<RlTrainerConfig>): RlTrainerConfig => ({
  model: createTestModel(1),
  tokenizer,
  environments: [() => createPickEnvironment(['player0', 'player1'])],
  optimizer: { learningRate: 3e-3 },
  batch: { episodesPerStep: 2, miniBatchSize: 4, ppoEpochs: 1, maxTokens: 2 },
  seed: 3,
  ...extra,
})

const refusal = (make: () => unknown) => {
  try {
    make()
  } catch (error) {
    return error as InvalidArgumentError
  }
  throw new Error('not refused')
}

describe('loggers', () => {
  it('the config lists: default jsonl; an unknown name, a wrong field, a repeat, a non-logger refused naming loggers.<i> and the value', () => {
    expect(runLoggersSchema.parse(undefined)).toEqual(['jsonl'])
    expect(runConfigLoggersSchema.parse(['jsonl', { kind: 'tensorboard', directory: 'tb' }, { kind: 'wandb', project: 'p' }])).toHaveLength(3)
    const issue = (schema: typeof runLoggersSchema, value: unknown) => schema.safeParse(value).error?.issues[0]
    expect(issue(runLoggersSchema, ['jsonl', 'tensorbord'])).toMatchObject({
      path: [1],
      message: expect.stringMatching(/is not a logger .*did you mean 'tensorboard'/),
    })
    expect(issue(runLoggersSchema, [{ kind: 'wandb', projet: 'p' }])).toMatchObject({ path: [0], message: expect.stringContaining('projet') })
    expect(issue(runLoggersSchema, [{ kind: 'wandb', mode: 'sometimes' }])).toMatchObject({ path: [0, 'mode'] })
    expect(issue(runLoggersSchema, ['jsonl', { kind: 'jsonl' }])).toMatchObject({ path: [1], message: expect.stringContaining('second time') })
    expect(issue(runLoggersSchema, [42])).toMatchObject({ path: [0], message: expect.stringContaining('RunLoggerV1') })
    // A file cannot hold code: a logger object is not accepted there.
    expect(issue(runConfigLoggersSchema, [recordingLogger([])])).toMatchObject({ path: [0] })
    expect(runLoggersSchema.safeParse([recordingLogger([]), recordingLogger([])]).success).toBe(true)
    const error = refusal(() => createRlTrainer(rlConfig({ loggers: ['jsonl', 'tensorbord' as 'tensorboard'] })))
    expect(InvalidArgumentError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({ argument: 'config.loggers.1', value: 'tensorbord' })
  })

  it('a logger that cannot work is refused when the trainer is made (TensorBoard without a run directory; online W&B without a key or the SDK)', () => {
    const noDirectory = refusal(() => createRlTrainer(rlConfig({ loggers: ['tensorboard'] })))
    expect(noDirectory).toMatchObject({ argument: 'config.loggers.0', value: 'tensorboard', message: expect.stringContaining('needs config.runDirectory') })
    const base = { directory: '/tmp/run', trainer: 'rl', config: {}, notify: () => {} }
    expect(refusal(() => createRunLoggers({ ...base, loggers: [{ kind: 'wandb', mode: 'online' }], environment: {} }))).toMatchObject({
      argument: 'config.loggers.0',
      message: expect.stringContaining('WANDB_API_KEY'),
    })
    const missing = refusal(() =>
      createRunLoggers({
        ...base,
        loggers: ['jsonl', 'wandb'],
        environment: { WANDB_API_KEY: 'k'.repeat(40) },
        resolveWandbSdk: () => {
          throw new Error("Cannot find module '@wandb/sdk'")
        },
      }),
    )
    expect(missing).toMatchObject({ argument: 'config.loggers.1', value: 'wandb', message: expect.stringContaining('npm install @wandb/sdk') })
    expect(refusal(() => createRunLoggers({ ...base, directory: undefined, loggers: ['wandb'], environment: {} }))).toMatchObject({
      message: expect.stringContaining("W&B's offline run files"),
    })
    // jsonl without a run directory writes nothing, as before.
    expect(() => createRunLoggers({ ...base, directory: undefined, loggers: ['jsonl'] })).not.toThrow()
  })

  it('the RL trainer calls a user’s logger in order (start, log and the episode’s text per step, close); resumed, it starts at the checkpoint with its history', async () => {
    const runDirectory = join(temporaryDirectory(), 'user-logger')
    const calls: unknown[][] = []
    const first = createRlTrainer(rlConfig({ runDirectory, loggers: ['jsonl', recordingLogger(calls)], checkpointEvery: 2 }))
    await first.run({ steps: 2 })
    first.dispose()
    expect(calls).toEqual([
      ['start', 'self-play', undefined, undefined],
      ['log', 1],
      ['text', 'episodes/sample', 1],
      ['log', 2],
      ['text', 'episodes/sample', 2],
      ['close'],
    ])
    calls.length = 0
    const second = createRlTrainer(rlConfig({ runDirectory, loggers: ['jsonl', recordingLogger(calls)], resume: true }))
    await second.run({ steps: 3 })
    second.dispose()
    expect(calls).toEqual([['start', 'self-play', 2, [1, 2]], ['log', 3], ['text', 'episodes/sample', 3], ['close']])
    const steps = (await readFile(join(runDirectory, 'metrics.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as StepMetrics).step)
    expect(steps).toEqual([1, 2, 3])
  })

  it('the RL trainer with tensorboard: every step’s finite metrics as scalars, the config and one episode’s transcript as text', async () => {
    const runDirectory = join(temporaryDirectory(), 'tensorboard')
    const trainer = createRlTrainer(rlConfig({ runDirectory, loggers: ['jsonl', 'tensorboard'] }))
    const history = await trainer.run({ steps: 2 })
    trainer.dispose()
    const [file, ...others] = await readdir(join(runDirectory, 'tensorboard'))
    expect(others).toEqual([])
    const events = readEventFile(new Uint8Array(await readFile(join(runDirectory, 'tensorboard', file!))))
    for (const metrics of history) {
      const expected = Object.entries(metrics)
        .filter(([name, value]) => name !== 'step' && Number.isFinite(value))
        .map(([tag, value]) => ({ tag, value: Math.fround(value) }))
      expect(events.find((event) => event.step === metrics.step && event.scalars.length > 0)!.scalars).toEqual(expected)
    }
    const texts = events.flatMap((event) => event.texts.map((text) => ({ step: event.step, ...text })))
    expect(texts.map(({ step, tag }) => [step, tag])).toEqual([
      [0, 'config'],
      [1, 'episodes/sample'],
      [2, 'episodes/sample'],
    ])
    const logged = JSON.parse(texts[0]!.value.replace(/^ {4}/gm, '')) as Record<string, unknown>
    expect(logged).toMatchObject({ seed: 3, batch: { episodesPerStep: 2 } })
    expect(Object.keys(logged).filter((key) => ['model', 'tokenizer', 'environments', 'loggers'].includes(key))).toEqual([])
    expect(texts[1]!.value).toMatch(/^ {4}pick-v1, seed \d+, \d+ turns; returns: player0 .*\n {4}\n {4}\[0\] player0/)
  })

  it('the preference and reward-model trainers write through their loggers (TensorBoard beside metrics.jsonl), refused without a run directory', async () => {
    const pairs = [
      { prompt: 'sky? ', chosen: 'blue', rejected: 'green' },
      { prompt: 'grass? ', chosen: 'green', rejected: 'blue' },
    ]
    const runDirectory = join(temporaryDirectory(), 'preference')
    const model = createTestModel(2)
    const trainer = createPreferenceTrainer({ model, tokenizer, pairs, batchSize: 2, steps: 2, runDirectory, loggers: ['jsonl', 'tensorboard'] })
    const history = await trainer.run()
    trainer.dispose()
    const [file] = await readdir(join(runDirectory, 'tensorboard'))
    const events = readEventFile(new Uint8Array(await readFile(join(runDirectory, 'tensorboard', file!))))
    expect(
      events.filter((event) => event.scalars.length > 0).map((event) => [event.step, event.scalars.find((scalar) => scalar.tag === 'loss')!.value]),
    ).toEqual(history.map((metrics) => [metrics.step, Math.fround(metrics.loss)]))
    expect(refusal(() => createPreferenceTrainer({ model, tokenizer, pairs, loggers: ['tensorboard'] }))).toMatchObject({ argument: 'config.loggers.0' })
    expect(
      refusal(() => createRewardModelTrainer({ model: createTestModel(2), tokenizer, maxLength: 48, pairs, loggers: ['jsonl', 'tensorboard'] })),
    ).toMatchObject({ argument: 'config.loggers.1' })
    model.dispose()
  })

  it('plainConfig keeps plain settings, leaves out named fields, functions and class instances, cuts long arrays', () => {
    class Model {}
    expect(
      plainConfig(
        {
          model: new Model(),
          seed: 1,
          nested: { rate: 0.5, notify: () => {}, when: new Date(0) },
          many: Array.from({ length: 100 }, (_, index) => index),
          nan: Number.NaN,
          data: [1],
        },
        ['data'],
      ),
    ).toEqual({ seed: 1, nested: { rate: 0.5 }, many: '[100 items]', nan: 'NaN' })
  })

  it('the recorded configuration keeps no secret: a judge’s API key, a token, a password are <redacted> before any logger sees them', async () => {
    const config = { seed: 1, scorer: { options: { apiKey: 'sk-live-123', model: 'judge' } }, hub: [{ hfToken: 'hf_abc' }], password: 'p', keys: 3 }
    expect(redactSecrets(config)).toEqual({
      seed: 1,
      scorer: { options: { apiKey: '<redacted>', model: 'judge' } },
      hub: [{ hfToken: '<redacted>' }],
      password: '<redacted>',
      keys: 3,
    })
    expect(config.scorer.options.apiKey).toBe('sk-live-123')
    const seen: unknown[] = []
    const spy: RunLoggerV1 = {
      specificationVersion: 'v1',
      name: 'spy',
      start: (run) => void seen.push(run.config),
      log: () => {},
      text: () => {},
      close: () => {},
    }
    const loggers = createRunLoggers({ loggers: runLoggersSchema.parse([spy]), directory: undefined, trainer: 'rl', config, notify: () => {} })
    await loggers.log({ step: 1, loss: 0 })
    await loggers.close()
    expect(JSON.stringify(seen)).not.toContain('sk-live-123')
    expect(JSON.stringify(seen)).toContain('<redacted>')
  })
})
