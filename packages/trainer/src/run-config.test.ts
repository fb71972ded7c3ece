import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ParseError, type PolicyV1, type TurnView } from '@ludic/core'
import { gamePrompts, games } from '@ludic/games'
import * as tf from '@tensorflow/tfjs-core'
import { describe, expect, it } from 'vitest'
import { createFlowOfReasoningTrainer } from './flow-of-reasoning-trainer.js'
import { createRlTrainer } from './rl-trainer.js'
import { createPreferenceTrainer } from './preference-trainer.js'
import { loadRunConfig, loadTrainingRun, readRunConfigFile, type RunConfigFileLimits } from './run-config.js'
import { createSftTrainer } from './sft-trainer.js'
import { createPickEnvironment, tokenizer, useBackendAndDirectory } from './test/support.js'

const temporaryDirectory = useBackendAndDirectory('ludic-run-config-')
const lossPlugin = fileURLToPath(new URL('./test/fixtures/loss-plugin.js', import.meta.url))

// The games of @ludic/games and their named prompts, as a command line would pass them.
const registries = { environments: games, prompts: gamePrompts }

const write = async (name: string, content: unknown) => {
  const path = join(temporaryDirectory(), name)
  await writeFile(path, typeof content === 'string' ? content : JSON.stringify(content))
  return path
}

const valid = {
  model: { preset: 'tiny', seed: 1, overrides: { hiddenSize: 32, numAttentionHeads: 2, numHiddenLayers: 1, intermediateSize: 64 } },
  environments: [{ game: 'kuhn-poker-v1', options: { rounds: 1, reward: 'chips' } }],
  advantage: { name: 'rae', options: { decay: 0.9 } },
  policyLoss: { name: 'ppo-clip', options: { clipHigh: 0.28 } },
  optimizer: { learningRate: 1e-4 },
  schedule: { type: 'warmup-cosine', warmupSteps: 1, totalSteps: 10 },
  batch: { episodesPerStep: 2, miniBatchSize: 8, ppoEpochs: 1, maxTokens: 3 },
  prompt: 'terse',
  runDirectory: 'run',
}

describe('loadRunConfig', () => {
  it('resolves the named estimator, loss, environments and model preset into a trainer config that runs', async () => {
    const config = await loadRunConfig(await write('valid.json', valid), { ...registries, tokenizer })
    expect(config.runDirectory).toBe(join(temporaryDirectory(), 'run'))
    expect(config.model.config.hiddenSize).toBe(32)
    expect(config.model.config.vocabSize).toBe(tokenizer.vocabSize)
    expect((config.advantage as { name: string }).name).toBe('rae')
    expect(config.environments![0]!().id).toBe('kuhn-poker-v1')
    expect(config.prompt).toBe(gamePrompts.terse) // 'terse' named a games prompt
    const trainer = createRlTrainer(config)
    const metrics = await trainer.step()
    expect(metrics.episodes).toBe(2)
    trainer.dispose()
    config.model.dispose()
  })

  it('starts the training games from random openings where an environment names them', async () => {
    const file = { ...valid, environments: [{ game: 'tictactoe-v0', randomOpenings: { share: 1, minMoves: 2, maxMoves: 2 } }], prompt: 'spiral' }
    const config = await loadRunConfig(await write('openings.json', file), { ...registries, tokenizer })
    const boardOf = (view: TurnView) => (view.state as { board: string[] }).board
    const view = config.environments![0]!().reset(7)
    expect(boardOf(view).filter((cell) => cell !== '')).toHaveLength(2)
    expect(view.role).toBe('player0')
    const plain = await loadRunConfig(await write('plain.json', { ...file, environments: [{ game: 'tictactoe-v0' }] }), { ...registries, tokenizer })
    expect(boardOf(plain.environments![0]!().reset(7)).every((cell) => cell === '')).toBe(true)
    config.model.dispose()
    plain.model.dispose()
  })

  it('names the file and the field of bad input', async () => {
    const cases: [unknown, string][] = [
      ['{ not json', 'not JSON'],
      [{ ...valid, environments: [{ game: 'chess-v0' }] }, 'environments[0].game'],
      [{ ...valid, advantage: { name: 'nope' } }, 'advantage.name: is not a registered advantage estimator (gae, grpo'],
      [{ ...valid, policyLoss: { name: 'ppo-clip', options: { clipLow: -1 } } }, 'policyLoss'],
      [{ ...valid, environments: [{ game: 'kuhn-poker-v1', options: { rounds: 0 } }] }, 'environments'],
      [{ ...valid, batch: { ppoEpochs: 0 } }, 'batch.ppoEpochs'],
      [{ ...valid, surprise: true }, 'surprise'],
      [{ ...valid, trajectories: { maxLineBytes: 10 } }, 'trajectories.maxLineBytes'],
      [{ ...valid, loggers: ['jsonl', 'tensorbord'] }, "loggers[1]: is not a logger ('jsonl', 'tensorboard', 'wandb'); did you mean 'tensorboard'?"],
      [{ ...valid, loggers: [{ kind: 'wandb', mode: 'sometimes' }] }, 'loggers[0].mode'],
      [
        { ...valid, environments: [{ game: 'tictactoe-v0', randomOpenings: { share: 1, minMoves: 5, maxMoves: 4 } }] },
        'environments[0].randomOpenings.minMoves',
      ],
      [{ ...valid, environments: [{ game: 'tictactoe-v0', randomOpenings: { share: 2, maxMoves: 4 } }] }, 'environments[0].randomOpenings.share'],
      [
        { ...valid, environments: [{ game: 'simple-negotiation-v1', randomOpenings: { share: 1, maxMoves: 2 } }] },
        'environments[0].randomOpenings: Invalid argument',
      ],
      [
        { ...valid, environments: [{ game: 'kuhn-poker-v1', options: { rounds: 1 }, randomOpenings: { share: 0.5, minMoves: 3, maxMoves: 3 } }] },
        'environments[0].randomOpenings.minMoves: every opening of 3–3 moves ended kuhn-poker-v1',
      ],
    ]
    for (const [index, [content, expected]] of cases.entries()) {
      const path = await write(`bad-${index}.json`, content)
      const error = await loadRunConfig(path, { ...registries, tokenizer }).catch((caught: unknown) => caught)
      expect(error, JSON.stringify(content)).toBeInstanceOf(ParseError)
      expect((error as Error).message).toContain(path)
      expect((error as Error).message).toContain(expected)
    }
    const missing = await loadRunConfig(join(temporaryDirectory(), 'missing.json'), registries).catch((caught: unknown) => caught)
    expect(missing).toBeInstanceOf(ParseError)
    const noTokenizer = await loadRunConfig(await write('no-tokenizer.json', valid), registries).catch((caught: unknown) => caught)
    expect((noTokenizer as Error).message).toContain('tokenizer')
    await expect(loadRunConfig(await write('no-registry.json', valid), {} as never)).rejects.toThrow(/options.environments/)
  })

  it('passes trajectories (YAML) through to the trainer config', async () => {
    const yaml = `model: { preset: tiny, overrides: { hiddenSize: 32, numAttentionHeads: 2, numHiddenLayers: 1, intermediateSize: 64 } }
environments: [{ game: kuhn-poker-v1 }]
trajectories: { episodesPerStep: all, maxLineBytes: 8192 }
`
    const config = await loadRunConfig(await write('trajectories.yaml', yaml), { ...registries, tokenizer })
    expect(config.trajectories).toEqual({ enabled: true, episodesPerStep: 'all', maxLineBytes: 8192, entropy: true })
    config.model.dispose()
  })

  it('passes the KL schedule and the moving reference (YAML) through to a trainer that runs them', async () => {
    const yaml = `model: { preset: tiny, overrides: { hiddenSize: 32, numAttentionHeads: 2, numHiddenLayers: 1, intermediateSize: 64 } }
environments: [{ game: kuhn-poker-v1 }]
batch: { episodesPerStep: 2, miniBatchSize: 8, ppoEpochs: 1, maxTokens: 3 }
kl: { coefficient: 0.2, schedule: { type: warmup-cosine, totalSteps: 1, minRatio: 0.25 }, referenceSync: { every: 1, mixupAlpha: 0.5 } }
`
    const config = await loadRunConfig(await write('kl.yaml', yaml), { ...registries, tokenizer })
    expect(config.kl).toEqual({
      coefficient: 0.2,
      estimator: 'low_var_kl',
      schedule: { type: 'warmup-cosine', totalSteps: 1, minRatio: 0.25, warmupSteps: 0, holdSteps: 0 },
      referenceSync: { every: 1, mixupAlpha: 0.5 },
    })
    const trainer = createRlTrainer(config)
    expect((await trainer.step()).klCoefficient).toBe(0.2)
    expect((await trainer.step()).klCoefficient).toBe(0.05)
    trainer.dispose()
    config.model.dispose()
    const wrong = await write('kl-wrong.yaml', yaml.replace('every: 1', 'every: 0'))
    await expect(loadRunConfig(wrong, { ...registries, tokenizer })).rejects.toThrow(/kl\.referenceSync\.every/)
  })

  it('runs an exact KL from a config (kl.estimator full-forward), its term logged, and refuses an unknown estimator by name', async () => {
    const yaml = `model: { preset: tiny, overrides: { hiddenSize: 32, numAttentionHeads: 2, numHiddenLayers: 1, intermediateSize: 64 } }
environments: [{ game: kuhn-poker-v1 }]
batch: { episodesPerStep: 2, miniBatchSize: 8, ppoEpochs: 1, maxTokens: 3 }
kl: { coefficient: 0.2, estimator: full-forward }
`
    const config = await loadRunConfig(await write('kl-exact.yaml', yaml), { ...registries, tokenizer })
    expect(config.kl).toEqual({ coefficient: 0.2, estimator: 'full-forward' })
    const trainer = createRlTrainer(config)
    const metrics = await trainer.step()
    // The first step's policy is the reference: the exact KL is 0 (to float error) and logged.
    expect(metrics.kl).toBeGreaterThanOrEqual(0)
    expect(metrics.kl).toBeLessThan(1e-5)
    const before = tf.memory().numTensors // the optimizer's moments are made on its first step
    const second = await trainer.step()
    expect(second.kl).toBeGreaterThan(0) // one update away from the reference
    expect(tf.memory().numTensors).toBe(before)
    trainer.dispose()
    config.model.dispose()
    const wrong = await write('kl-exact-wrong.yaml', yaml.replace('full-forward', 'full-backward'))
    await expect(loadRunConfig(wrong, { ...registries, tokenizer })).rejects.toThrow(/kl\.estimator/)
  })

  it('gives the trainer its loggers (default [jsonl]) and the file’s checked settings for them to record', async () => {
    const plain = await loadRunConfig(await write('default-loggers.json', valid), { ...registries, tokenizer })
    expect(plain.loggers).toEqual(['jsonl'])
    plain.model.dispose()
    const loggers = ['jsonl', { kind: 'tensorboard', directory: 'tb' }, { kind: 'wandb', project: 'kuhn', mode: 'offline' }]
    const config = await loadRunConfig(await write('loggers.json', { ...valid, loggers }), { ...registries, tokenizer })
    expect(config.loggers).toEqual(loggers)
    expect(config.loggedConfig).toMatchObject({ kind: 'rl', steps: 100, environments: [{ game: 'kuhn-poker-v1' }], runDirectory: 'run', loggers })
    config.model.dispose()
  })

  it('makes an environment registered by the user', async () => {
    const config = await loadRunConfig(await write('custom.json', { ...valid, environments: [{ game: 'pick-v1' }], prompt: '{observation}' }), {
      tokenizer,
      environments: { create: () => createPickEnvironment(['player0', 'player1']), names: () => ['pick-v1'] },
    })
    expect(config.environments![0]!().id).toBe('pick-v1')
    expect(config.prompt).toBe('{observation}')
    config.model.dispose()
  })
})

describe('loadTrainingRun', () => {
  const tinyModel = { preset: 'tiny', seed: 1, overrides: { hiddenSize: 32, numAttentionHeads: 2, numHiddenLayers: 1, intermediateSize: 64 } }
  const answering = (id: string, text: string): PolicyV1 => ({
    specificationVersion: 'v1',
    id,
    generate: async (requests) =>
      requests.map(() => ({
        text,
        promptTokenIds: new Int32Array(0),
        tokenIds: new Int32Array(0),
        logprobs: new Float32Array(0),
        finishReason: 'stop' as const,
      })),
  })
  const pick = { create: () => createPickEnvironment(['player0', 'player1']), names: () => ['pick-v1'] }
  const opponents = { create: () => answering('always-a', 'a'), names: () => ['always-a'] }

  it('reads YAML: a tokenizer trained on random legal play, an SFT warm-up on it and evaluations against a named opponent', async () => {
    const yaml = `# a two-player toy game
steps: 2
model: ${JSON.stringify(tinyModel)}
tokenizer:
  train: { vocabSize: 270, episodes: 6 }
environments:
  - game: pick-v1
chatTemplate: "{{ messages[-1]['content'] }}\\n>"
warmUp: { steps: 2, episodes: 4, batchSize: 4 }
evaluation: { every: 1, episodes: 2, opponents: [always-a] }
batch: { episodesPerStep: 2, miniBatchSize: 4, ppoEpochs: 1, maxTokens: 2 }
seed: 3
`
    const run = await loadTrainingRun(await write('run.yaml', yaml), { environments: pick, opponents })
    if (run.kind !== 'rl') throw new Error(`kind ${run.kind}`)
    expect(run.steps).toBe(2)
    expect(run.tokenizer.vocabSize).toBeLessThanOrEqual(270)
    expect(run.tokenizer.eosTokenId).toBeDefined()
    expect(run.tokenizerFiles?.['tokenizer_config.json']).toMatchObject({ eos_token: '<|end|>', chat_template: "{{ messages[-1]['content'] }}\n>" })
    const examples = run.warmUp!.config.examples as { prompt: string; response: string }[]
    expect(examples.length).toBe(4 * 2) // 4 episodes, two turns each
    for (const example of examples) {
      expect(['a', 'b']).toContain(example.response)
      expect(example.prompt).toMatch(/^game \d: player[01] picks a or b\n>$/)
    }
    const warmUp = createSftTrainer(run.warmUp!.config)
    const sft = await warmUp.run({ steps: run.warmUp!.steps })
    expect(sft.every((metrics) => Number.isFinite(metrics.loss))).toBe(true)
    warmUp.dispose()
    const trainer = createRlTrainer(run.config)
    await trainer.run({ steps: 1 })
    const winRate = trainer.history[0]!['eval/always-a/winRate']
    expect(winRate).toBeGreaterThanOrEqual(0)
    expect(winRate).toBeLessThanOrEqual(1)
    expect(trainer.history[0]!['eval/always-a/winRateLow']).toBeLessThanOrEqual(winRate!)
    trainer.dispose()
    run.model.dispose()
  })

  it("weighs a named opponent's seats (opponents[].seats): passed to the trainer, refused there for a role the game lacks", async () => {
    const yaml = (seats: string) => `model: ${JSON.stringify(tinyModel)}
tokenizer:
  train: { vocabSize: 270, episodes: 6 }
environments:
  - game: pick-v1
chatTemplate: "{{ messages[-1]['content'] }}\\n>"
opponents: [{ name: always-a, share: 1, seats: ${seats} }]
batch: { episodesPerStep: 4, miniBatchSize: 4, ppoEpochs: 1, maxTokens: 2 }
seed: 3
`
    // The opponent tells which seat it was asked to play (the prompt names it).
    const asked: string[] = []
    const base = answering('always-a', 'a')
    const recording = {
      create: () => ({
        ...base,
        generate: async (requests: Parameters<PolicyV1['generate']>[0]) => {
          for (const request of requests) asked.push(/player\d/.exec(request.messages!.at(-1)!.content)![0])
          return base.generate(requests)
        },
      }),
      names: () => ['always-a'],
    }
    const run = await loadTrainingRun(await write('seats.yaml', yaml('{ player0: 1 }')), { environments: pick, opponents: recording })
    if (run.kind !== 'rl') throw new Error(`kind ${run.kind}`)
    expect(run.config.opponents?.[0]).toMatchObject({ share: 1, seats: { player0: 1 } })
    const trainer = createRlTrainer(run.config)
    await trainer.step()
    // Seated first in every one of the 4 episodes, never second.
    expect(asked).toEqual(['player0', 'player0', 'player0', 'player0'])
    trainer.dispose()
    run.model.dispose()
    const other = await loadTrainingRun(await write('seats-other.yaml', yaml('{ player7: 1 }')), { environments: pick, opponents })
    if (other.kind !== 'rl') throw new Error(`kind ${other.kind}`)
    expect(() => createRlTrainer(other.config)).toThrow(/config\.opponents\.0\.seats\.player7/)
    other.model.dispose()
    const none = await loadTrainingRun(await write('seats-none.yaml', yaml('{ player0: 0 }')), { environments: pick, opponents }).catch(
      (caught: unknown) => caught,
    )
    expect(none).toBeInstanceOf(ParseError)
    const issues = ((none as ParseError).cause as { issues: { path: (string | number)[]; message: string }[] }).issues
    expect(issues.map((issue) => issue.path.join('.'))).toContain('opponents.0.seats')
  })

  it('lists every wrong field at once, an unknown name with the registered ones', async () => {
    const path = await write(
      'bad.yaml',
      `model: { preset: huge }
environments: [{ game: chess-v0 }, { game: pick-v1 }]
advantage: { name: nope }
batch: { ppoEpochs: 0 }
evaluation: { opponents: [nobody] }
surprise: 1
`,
    )
    const error = await loadTrainingRun(path, { environments: pick, opponents }).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(ParseError)
    const issues = ((error as ParseError).cause as { issues: { path: (string | number)[]; message: string }[] }).issues
    const paths = issues.map((issue) => issue.path.join('.'))
    for (const expected of ['model', 'environments.0.game', 'advantage.name', 'batch.ppoEpochs', 'evaluation.opponents.0', ''])
      expect(paths).toContain(expected)
    expect(issues.find((issue) => issue.path.join('.') === 'environments.0.game')!.message).toContain('pick-v1')
    const kind = await loadTrainingRun(await write('kind.yaml', 'kind: ppo\n'), { environments: pick }).catch((caught: unknown) => caught)
    expect((kind as Error).message).toMatch(/kind.*"rl"\|"cpo"\|"sft"\|"preference"\|"reward-model"/)
    const notYaml = await loadTrainingRun(await write('broken.yaml', 'model: [unclosed\n'), { environments: pick }).catch((caught: unknown) => caught)
    expect((notYaml as Error).message).toContain('not YAML')
  })

  it('imports the plugins (relative to the file) before checking the names they register', async () => {
    await write('plugin.mjs', 'globalThis.ludicRunConfigPlugin = "plugged-v1"\n')
    const registry = {
      create: () => createPickEnvironment(['player0', 'player1']),
      names: () => [(globalThis as { ludicRunConfigPlugin?: string }).ludicRunConfigPlugin ?? 'unplugged'],
    }
    const config = { model: tinyModel, tokenizer: { train: { vocabSize: 260, episodes: 1 } }, environments: [{ game: 'plugged-v1' }], steps: 1 }
    const run = await loadTrainingRun(await write('plugged.json', { ...config, plugins: ['./plugin.mjs'] }), { environments: registry })
    expect(run.kind).toBe('rl')
    run.model.dispose()
    const missing = await loadTrainingRun(await write('unplugged.json', { ...config, plugins: ['./nowhere.mjs'] }), { environments: registry }).catch(
      (caught: unknown) => caught,
    )
    expect((missing as Error).message).toMatch(/plugins\[0\].*no such file/)
    expect(((missing as ParseError).cause as { code?: string }).code).toBe('ENOENT')
  })

  it('names a policy loss a plugin registers: refused before the plugin (listing the registered ones), trained with after', async () => {
    const config = {
      model: tinyModel,
      tokenizer: { train: { vocabSize: 260, episodes: 1 } },
      environments: [{ game: 'pick-v1' }],
      chatTemplate: "{{ messages[-1]['content'] }}\n>",
      policyLoss: { name: 'counted-ppo-clip', options: { clipHigh: 0.28 } },
      batch: { episodesPerStep: 2, miniBatchSize: 4, ppoEpochs: 1, maxTokens: 2 },
      steps: 1,
    }
    const unplugged = await loadTrainingRun(await write('loss-unplugged.json', config), { environments: pick }).catch((caught: unknown) => caught)
    expect(unplugged).toBeInstanceOf(ParseError)
    expect((unplugged as Error).message).toMatch(/policyLoss.name.*is not a registered policy loss \(ppo-clip, truncated-ppo, gspo/)
    const badOptions = { ...config, plugins: [lossPlugin], policyLoss: { name: 'counted-ppo-clip', options: { clipLow: -1 } } }
    const refused = await loadTrainingRun(await write('loss-bad-options.json', badOptions), { environments: pick }).catch((caught: unknown) => caught)
    expect((refused as Error).message).toMatch(/policyLoss.options.*clipLow/) // its factory checks them when the file is loaded

    const run = await loadTrainingRun(await write('loss-plugged.json', { ...config, plugins: [lossPlugin] }), { environments: pick })
    if (run.kind !== 'rl') throw new Error(`kind ${run.kind}`)
    const calls = () => (globalThis as { countedPolicyLossCalls?: number }).countedPolicyLossCalls ?? 0
    const before = calls()
    const trainer = createRlTrainer(run.config)
    const metrics = await trainer.step()
    expect(calls()).toBeGreaterThan(before) // the update used the plugin's loss
    expect(Number.isFinite(metrics.pgLoss)).toBe(true)
    trainer.dispose()
    run.model.dispose()
  })

  it('makes SFT and preference runs from JSON Lines files relative to the config', async () => {
    await mkdir(join(temporaryDirectory(), 'data'), { recursive: true })
    await write('data/sft.jsonl', ['{"prompt":"2+2=","response":"4"}', '{"prompt":"3+3=","response":"6"}'].join('\n'))
    const sftPath = await write(
      'sft.yaml',
      `kind: sft
model: ${JSON.stringify(tinyModel)}
tokenizer: { train: { vocabSize: 262 } }
data: data/sft.jsonl
steps: 2
batchSize: 2
optimizer: { learningRate: 0.01 }
runDirectory: sft-run
`,
    )
    const sftRun = await loadTrainingRun(sftPath, { environments: pick })
    if (sftRun.kind !== 'sft') throw new Error(`kind ${sftRun.kind}`)
    expect(sftRun.runDirectory).toBe(join(temporaryDirectory(), 'sft-run'))
    const sft = createSftTrainer(sftRun.config)
    const history = await sft.run({ steps: sftRun.steps })
    expect(history).toHaveLength(2)
    sft.dispose()
    sftRun.model.dispose()

    await write('data/pairs.jsonl', ['{"prompt":"best?","chosen":" yes","rejected":" no"}', '{"prompt":"good?","chosen":" yes","rejected":" no"}'].join('\n'))
    const preferencePath = await write(
      'dpo.yaml',
      `kind: preference
model: ${JSON.stringify(tinyModel)}
tokenizer: { train: { vocabSize: 262 } }
data: data/pairs.jsonl
loss: { type: sigmoid, beta: 0.1 }
steps: 1
batchSize: 2
`,
    )
    const preferenceRun = await loadTrainingRun(preferencePath, { environments: pick })
    if (preferenceRun.kind !== 'preference') throw new Error(`kind ${preferenceRun.kind}`)
    const preference = createPreferenceTrainer(preferenceRun.config)
    const metrics = await preference.run()
    expect(metrics).toHaveLength(1)
    expect(Number.isFinite(metrics[0]!.loss)).toBe(true)
    preference.dispose()
    preferenceRun.model.dispose()
    const wrong = await loadTrainingRun(
      await write('dpo-bad.yaml', 'kind: preference\nmodel: { preset: tiny }\ndata: data/missing.jsonl\nloss: { type: magic }\n'),
      {
        environments: pick,
      },
    ).catch((caught: unknown) => caught)
    expect((wrong as Error).message).toContain('loss.type')
  })
})

describe('loadTrainingRun kind: for', () => {
  it("makes a Flow of Reasoning run on a registry's environment (Blocksworld), its seeds as the problems, and refuses a bad one naming the field", async () => {
    const path = await write(
      'for-blocksworld.yaml',
      `kind: for
model: { preset: tiny, seed: 0, overrides: { hiddenSize: 16, numAttentionHeads: 2, numHiddenLayers: 1, intermediateSize: 32 } }
tokenizer: { train: { vocabSize: 300, endToken: "<|end|>" } }
environments:
  - game: blocksworld-v1
    options: { blocks: 3, planLength: 2, successReward: 100, failureReward: 0.001 }
seeds: { from: 10, count: 3 }
solved: 100
steps: 2
samplesPerProblem: 2
localSearch: { tries: 2 }
`,
    )
    const run = await loadTrainingRun(path, registries)
    if (run.kind !== 'for') throw new Error(`kind ${run.kind}`)
    expect(run.config.seeds).toEqual([10, 11, 12])
    expect(run.config.solved).toBe(100)
    const trainer = createFlowOfReasoningTrainer(run.config)
    const history = await trainer.run({ steps: run.steps })
    expect(history.map((metrics) => metrics.step)).toEqual([1, 2])
    for (const metrics of history) expect(Number.isFinite(metrics.loss)).toBe(true)
    for (const key of trainer.logPartitionState().keys) expect(key).toMatch(/^blocksworld-v1\/1[012]$/)
    trainer.dispose()
    run.model.dispose()
    const refused = (name: string, text: string) => write(name, text).then((file) => loadTrainingRun(file, registries).catch((caught: unknown) => caught))
    const unknownGame = await refused('for-bad-game.yaml', 'kind: for\nmodel: { preset: tiny }\nenvironments: [{ game: chess-v0 }]\nseeds: [0]\n')
    expect(ParseError.isInstance(unknownGame)).toBe(true)
    expect((unknownGame as Error).message).toMatch(/environments\[0\]\.game/)
    const openings = await refused(
      'for-openings.yaml',
      'kind: for\nmodel: { preset: tiny }\nenvironments: [{ game: blocksworld-v1, randomOpenings: { maxMoves: 2 } }]\nseeds: [0]\n',
    )
    expect((openings as Error).message).toMatch(/environments\[0\]\.randomOpenings: is not for kind: for/)
    const noSeeds = await refused('for-no-seeds.yaml', 'kind: for\nmodel: { preset: tiny }\nenvironments: [{ game: blocksworld-v1 }]\nseeds: []\n')
    expect((noSeeds as Error).message).toMatch(/seeds/)
  })
})

describe('readRunConfigFile limits', () => {
  const refusal = async (path: string, limits?: RunConfigFileLimits) => {
    const error = await readRunConfigFile(path, limits).catch((caught: unknown) => caught)
    expect(ParseError.isInstance(error)).toBe(true)
    expect((error as ParseError).source).toBe(path)
    return error as ParseError
  }

  it('refuses a file larger than limits.maxBytes before reading it (a 50 MB YAML took 18.7 s and 1.4 GB)', async () => {
    const path = await write('large.yaml', `steps: 1\nnotes: ${'x'.repeat(5 * 1024 * 1024)}\n`)
    expect((await refusal(path)).message).toMatch(/is 5242\d{3} bytes, more than the limit of 4194304 \(limits\.maxBytes\)/)
    expect(await readRunConfigFile(path, { maxBytes: 6 * 1024 * 1024 })).toMatchObject({ steps: 1 }) // the limit is the caller's
    expect((await refusal(await write('small.json', '{"steps": 100}'), { maxBytes: 10 })).message).toMatch(/more than the limit of 10/)
    expect((await refusal(temporaryDirectory())).message).toMatch(/is not a regular file/)
  })

  it('refuses nesting past limits.maxDepth as a ParseError naming the file and the path (was: Maximum call stack size exceeded, no file)', async () => {
    const json = await write('deep.json', `{"steps": 1, "environments": ${'['.repeat(100_000)}${']'.repeat(100_000)}}`)
    const error = await refusal(json)
    expect(error.message).toContain(`Cannot parse ${json} at environments[0]`)
    expect(error.message).toMatch(/is nested more than 64 objects and arrays deep \(limits\.maxDepth\)/)
    const yaml = await write('deep.yaml', `steps: ${'['.repeat(100_000)}${']'.repeat(100_000)}\n`)
    expect((await refusal(yaml)).message).toMatch(/is nested too deeply for the YAML parser|nested more than 64/)
    expect(
      (await refusal(await write('deep-block.yaml', `${Array.from({ length: 70 }, (_, depth) => `${'  '.repeat(depth)}a${depth}:`).join('\n')} 1\n`))).message,
    ).toMatch(/at a0\.a1\..*is nested more than 64/)
    await expect(loadTrainingRun(json, registries)).rejects.toThrow(/deep\.json at environments\[0\].*nested more than 64/)
  })

  it("refuses YAML aliases that expand past 100 (the yaml package's maxAliasCount)", async () => {
    const levels = Array.from(
      { length: 5 },
      (_, level) => `l${level}: &l${level} [${Array.from({ length: 10 }, () => (level === 0 ? 'x' : `*l${level - 1}`)).join(', ')}]`,
    )
    expect((await refusal(await write('laughs.yaml', `${levels.join('\n')}\n`))).message).toMatch(/not YAML \(Excessive alias count/)
  })
})
