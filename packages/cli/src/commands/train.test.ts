import { existsSync } from 'node:fs'
import { mkdir, readdir, readFile, rm, truncate, writeFile } from 'node:fs/promises'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { loadModel } from '@ludic/model'
import { loadTokenizer } from '@ludic/tokenizer'
import * as tf from '@tensorflow/tfjs-core'
import { describe, expect, it, vi } from 'vitest'
import { runCli } from '../cli.js'
import { exitCodes } from '../errors.js'
import { captureIo, tinyOverrides, useBackendAndDirectory } from '../test/support.js'
import type { TrainSummary } from './train.js'

const temporaryDirectory = useBackendAndDirectory('ludic-cli-train-')
const plugin = fileURLToPath(new URL('../test/fixtures/coin-plugin.js', import.meta.url))
const model = JSON.stringify({ preset: 'tiny', seed: 2, overrides: tinyOverrides })

/** A small self-play run: a tokenizer trained on random legal play, a warm-up, one evaluation against the random player. */
const rlConfig = (game: string, extra: string[] = []) =>
  [
    `model: ${model}`,
    'tokenizer: { train: { vocabSize: 280, episodes: 8 } }',
    'environments:',
    `  - game: ${game}`,
    'chatTemplate: "{{ messages[-1][\'content\'] }}\\n>"',
    'warmUp: { steps: 2, episodes: 4, batchSize: 8 }',
    'evaluation: { every: 2, episodes: 4, opponents: [random] }',
    'batch: { episodesPerStep: 2, miniBatchSize: 8, ppoEpochs: 1, maxTokens: 4 }',
    'steps: 2',
    ...extra,
    '',
  ].join('\n')

describe('ludic train', () => {
  it('runs an RL config from YAML: warm-up, self-play steps, evaluation with intervals, a model ludic serve can load, JSON on stdout', async () => {
    const path = join(temporaryDirectory(), 'kuhn.yaml')
    await writeFile(path, rlConfig('kuhn-poker-v1', ['prompt: kuhn-terse', 'runDirectory: runs/kuhn']))
    const tensors = tf.memory().numTensors
    const { io, stdout, stderr } = captureIo()
    expect(await runCli(['--json', 'train', path], io)).toBe(exitCodes.ok)
    const summary = JSON.parse(stdout()) as TrainSummary
    expect(summary).toMatchObject({ kind: 'rl', steps: 2, interrupted: false, runDirectory: join(temporaryDirectory(), 'runs/kuhn') })
    expect(summary.warmUp?.steps).toBe(2)
    const winRate = summary.evaluation!['eval/random/winRate']!
    expect(summary.evaluation!['eval/random/winRateLow']).toBeLessThanOrEqual(winRate)
    expect(summary.evaluation!['eval/random/winRateHigh']).toBeGreaterThanOrEqual(winRate)
    expect(stderr()).toContain('self-play [')
    expect(stderr()).toContain('warm-up [')
    const metrics = (await readFile(join(summary.runDirectory, 'metrics.jsonl'), 'utf8')).trim().split('\n')
    expect(metrics).toHaveLength(2)
    const saved = await loadModel(summary.modelDirectory!)
    const tokenizer = await loadTokenizer(summary.modelDirectory!)
    expect(saved.config.vocabSize).toBe(tokenizer.vocabSize)
    expect(tokenizer.applyChatTemplate([{ role: 'user', content: 'card J' }], { addGenerationPrompt: true })).toBe('card J\n>')
    saved.dispose()
    expect(tf.memory().numTensors).toBe(tensors)
  })

  it('plays the rollout on the generation engine with batch.engine in the config, the same episodes as without it; a wrong engine field is a usage error', async () => {
    const run = async (name: string, engine: string) => {
      const path = join(temporaryDirectory(), `${name}.yaml`)
      await writeFile(
        path,
        rlConfig('tictactoe-v0', [`runDirectory: runs/${name}`]).replace(
          'batch: { episodesPerStep: 2, miniBatchSize: 8, ppoEpochs: 1, maxTokens: 4 }',
          `batch: { episodesPerStep: 2, miniBatchSize: 8, ppoEpochs: 1, maxTokens: 4${engine} }`,
        ),
      )
      const { io, stdout, stderr } = captureIo()
      const code = await runCli(['--json', 'train', path], io)
      return { code, stdout: stdout(), stderr: stderr(), directory: join(temporaryDirectory(), `runs/${name}`) }
    }
    const plain = await run('batched', '')
    const engine = await run('engine', ', engine: true')
    expect([plain.code, engine.code], engine.stderr).toEqual([exitCodes.ok, exitCodes.ok])
    const rewards = async (directory: string) =>
      (await readFile(join(directory, 'metrics.jsonl'), 'utf8'))
        .trim()
        .split('\n')
        .map((line) => (JSON.parse(line) as Record<string, number>)['reward/tictactoe-v0/player0'])
    expect(await rewards(engine.directory)).toEqual(await rewards(plain.directory))
    const wrong = await run('wrong', ', engine: { maxRows: 0 }')
    expect(wrong.code).toBe(exitCodes.usage)
    expect(wrong.stderr).toContain('batch.engine')
  })

  it("imports a config's plugins: a user game (its legal moves reach the random opponent), a user estimator and a user policy loss", async () => {
    const directory = temporaryDirectory()
    const path = join(directory, 'coin.yaml')
    const extra = [
      `plugins: [${relative(directory, plugin)}]`,
      'advantage: { name: counted-grpo }',
      'policyLoss: { name: counted-ppo-clip, options: { clipHigh: 0.28 } }',
    ]
    await writeFile(path, rlConfig('coin-pick-v1', [...extra, 'batch.groupSize: 2']))
    await writeFile(path, (await readFile(path, 'utf8')).replace('batch.groupSize: 2\n', '').replace('ppoEpochs: 1,', 'ppoEpochs: 1, groupSize: 2,'))
    const { io, stdout, stderr } = captureIo({ cwd: directory })
    expect(await runCli(['--json', '--quiet', 'train', path, '--run-directory', 'coin-run'], io), stderr()).toBe(exitCodes.ok)
    const summary = JSON.parse(stdout()) as TrainSummary
    expect(summary.runDirectory).toBe(join(directory, 'coin-run'))
    expect(summary.evaluation!['eval/random/winRate']).toBeGreaterThanOrEqual(0)
    expect((globalThis as { countedGrpoCalls?: number }).countedGrpoCalls).toBe(2) // one estimate per step
    expect((globalThis as { countedPolicyLossCalls?: number }).countedPolicyLossCalls).toBeGreaterThanOrEqual(2) // at least one update per step
    expect(stderr()).toBe('') // --quiet: no bar, no log
  })

  it('runs SFT from JSON Lines data with periodic progress lines in a log and a live bar on a TTY', async () => {
    const directory = temporaryDirectory()
    await writeFile(join(directory, 'sft.jsonl'), ['{"prompt":"2+2=","response":"4"}', '{"prompt":"3+3=","response":"6"}'].join('\n'))
    const path = join(directory, 'sft.yaml')
    await writeFile(path, `kind: sft\nmodel: ${model}\ntokenizer: { train: { vocabSize: 262 } }\ndata: sft.jsonl\nsteps: 30\nbatchSize: 2\n`)
    const log = captureIo()
    expect(await runCli(['train', path, '--run-directory', join(directory, 'sft-run')], log.io)).toBe(exitCodes.ok)
    const lines = log
      .stderr()
      .split('\n')
      .filter((line) => line.startsWith('sft ['))
    expect(lines.length).toBeGreaterThanOrEqual(2)
    expect(lines.length).toBeLessThanOrEqual(12) // at the start, every 10% and the end: not one per step
    expect(lines.at(-1)).toContain('30/30')
    expect(log.stdout()).toContain('trained sft (sft.yaml): 30 steps')
    expect(log.stdout()).toContain(`model: ${join(directory, 'sft-run', 'model')} (ludic serve and ludic eval take it)`)
    const tty = captureIo({ tty: true })
    expect(await runCli(['train', path, '--steps', '3', '--run-directory', join(directory, 'sft-tty')], tty.io)).toBe(exitCodes.ok)
    expect(tty.stderr()).toContain('\x1B[1G') // redrawn in place
    expect(tty.stderr()).toContain('3/3')
  })

  it('writes through the config’s loggers (SFT: metrics.jsonl and TensorBoard); a logger that cannot be is a usage error before training', async () => {
    const directory = temporaryDirectory()
    await writeFile(join(directory, 'sft.jsonl'), ['{"prompt":"2+2=","response":"4"}', '{"prompt":"3+3=","response":"6"}'].join('\n'))
    const sft = (loggers: string) =>
      `kind: sft\nmodel: ${model}\ntokenizer: { train: { vocabSize: 262 } }\ndata: sft.jsonl\nsteps: 3\nbatchSize: 2\nloggers: ${loggers}\n`
    await writeFile(join(directory, 'sft-loggers.yaml'), sft('[jsonl, tensorboard]'))
    const runDirectory = join(directory, 'sft-loggers')
    expect(await runCli(['--quiet', 'train', join(directory, 'sft-loggers.yaml'), '--run-directory', runDirectory], captureIo().io)).toBe(exitCodes.ok)
    expect((await readFile(join(runDirectory, 'metrics.jsonl'), 'utf8')).trim().split('\n')).toHaveLength(3)
    const [events] = await readdir(join(runDirectory, 'tensorboard'))
    expect(events).toMatch(/^events\.out\.tfevents\.\d{10}\./)
    await writeFile(join(directory, 'sft-typo.yaml'), sft('[jsonl, tensorbord]'))
    const typo = captureIo()
    expect(await runCli(['train', join(directory, 'sft-typo.yaml'), '--run-directory', join(directory, 'typo')], typo.io)).toBe(exitCodes.usage)
    expect(typo.stderr()).toContain("loggers[1]: is not a logger ('jsonl', 'tensorboard', 'wandb'); did you mean 'tensorboard'?")
    // Online W&B without an API key: refused before the warm-up trains anything.
    vi.stubEnv('WANDB_API_KEY', '')
    try {
      const path = join(directory, 'kuhn-wandb.yaml')
      await writeFile(path, rlConfig('kuhn-poker-v1', ['loggers: [jsonl, { kind: wandb, mode: online }]']))
      const online = captureIo()
      expect(await runCli(['train', path, '--run-directory', join(directory, 'wandb-run')], online.io)).toBe(exitCodes.usage)
      expect(online.stderr()).toContain('config.loggers.1')
      expect(online.stderr()).toContain('WANDB_API_KEY')
      expect(online.stderr()).not.toContain('warm-up:')
    } finally {
      vi.unstubAllEnvs()
    }
  })

  it('runs CPO with a scorer module and a reward model from preference pairs', async () => {
    const directory = temporaryDirectory()
    const scorer = relative(directory, fileURLToPath(new URL('../test/fixtures/short-answer-scorer.js', import.meta.url)))
    const cpo = join(directory, 'cpo.yaml')
    await writeFile(
      cpo,
      rlConfig('kuhn-poker-v1', ['kind: cpo', `scorer: { module: ${scorer}, options: { weight: 0.5, judgeApiKey: sk-not-for-the-run-directory } }`]).replace(
        'ppoEpochs: 1,',
        'ppoEpochs: 1, groupSize: 2,',
      ),
    )
    const cpoRun = captureIo()
    expect(await runCli(['--json', '--quiet', 'train', cpo, '--run-directory', join(directory, 'cpo-run')], cpoRun.io), cpoRun.stderr()).toBe(exitCodes.ok)
    const cpoSummary = JSON.parse(cpoRun.stdout()) as TrainSummary
    expect(cpoSummary).toMatchObject({ kind: 'cpo', steps: 2 })
    expect(cpoSummary.last['judge/groups']).toBe(2) // episodesPerStep 2: two groups judged in the last step
    // The config as it ran, for ludic view: the file with the run directory applied, the judge's key left out.
    const saved = await readFile(join(directory, 'cpo-run', 'run-config.json'), 'utf8')
    expect(JSON.parse(saved)).toMatchObject({
      kind: 'cpo',
      runDirectory: join(directory, 'cpo-run'),
      scorer: { options: { weight: 0.5, judgeApiKey: '<redacted>' } },
    })
    expect(saved).not.toContain('sk-not-for-the-run-directory')

    await writeFile(
      join(directory, 'pairs.jsonl'),
      ['{"prompt":"best?","chosen":" yes","rejected":" no"}', '{"prompt":"good?","chosen":" yes","rejected":" no"}'].join('\n'),
    )
    const rewardModel = join(directory, 'rm.yaml')
    await writeFile(
      rewardModel,
      `kind: reward-model\nmodel: ${model}\ntokenizer: { train: { vocabSize: 262 } }\ndata: pairs.jsonl\nheldOut: pairs.jsonl\nmaxLength: 32\nsteps: 2\nbatchSize: 2\n`,
    )
    const rmRun = captureIo()
    expect(await runCli(['--json', '--quiet', 'train', rewardModel, '--run-directory', join(directory, 'rm-run')], rmRun.io), rmRun.stderr()).toBe(exitCodes.ok)
    const rmSummary = JSON.parse(rmRun.stdout()) as TrainSummary
    expect(rmSummary).toMatchObject({ kind: 'reward-model', steps: 2 })
    expect(rmSummary.evaluation!.pairs).toBe(2)
    const rewardModelSaved = await loadModel(rmSummary.modelDirectory!)
    expect((await loadTokenizer(rmSummary.modelDirectory!)).vocabSize).toBe(rewardModelSaved.config.vocabSize)
    expect(JSON.parse(await readFile(join(directory, 'rm-run', 'run-config.json'), 'utf8'))).toMatchObject({ kind: 'reward-model', steps: 2 })
    rewardModelSaved.dispose()
    const missingScorer = captureIo()
    await writeFile(cpo, (await readFile(cpo, 'utf8')).replace(scorer, './nowhere.js'))
    expect(await runCli(['train', cpo], missingScorer.io)).toBe(exitCodes.notFound)
  })

  it("runs the Game of 24 example's for.yaml (kind: for) with a small budget, and --resume continues it to a larger total", async () => {
    const config = fileURLToPath(new URL('../../../../examples/game24-diversity/for.yaml', import.meta.url))
    const runDirectory = join(temporaryDirectory(), 'for-yaml')
    const small = ['samplesPerProblem=2', 'localSearch.tries=2', 'checkpointEvery=1', 'tokenizer.train.vocabSize=300']
    const argv = (steps: number, ...extra: string[]) => [
      '--json',
      'train',
      config,
      '--steps',
      String(steps),
      '--run-directory',
      runDirectory,
      ...[...small, ...Object.entries(tinyOverrides).map(([name, value]) => `model.overrides.${name}=${value}`)].flatMap((field) => ['--set', field]),
      ...extra,
    ]
    const first = captureIo()
    expect(await runCli(argv(2), first.io), first.stderr()).toBe(exitCodes.ok)
    expect(JSON.parse(first.stdout()) as TrainSummary).toMatchObject({ kind: 'for', steps: 2, interrupted: false })
    expect(existsSync(join(runDirectory, 'checkpoint-2'))).toBe(true)
    const resumed = captureIo()
    expect(await runCli(argv(3, '--resume'), resumed.io), resumed.stderr()).toBe(exitCodes.ok)
    const summary = JSON.parse(resumed.stdout()) as TrainSummary
    expect(summary).toMatchObject({ kind: 'for', steps: 3, last: { step: 3 } })
    expect(summary.last.loss).toBeGreaterThanOrEqual(0)
    const steps = (await readFile(join(runDirectory, 'metrics.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { step: number }).step)
    expect(steps).toEqual([1, 2, 3])
    expect(existsSync(join(summary.modelDirectory!, 'tokenizer.json'))).toBe(true)
  })

  it("runs the AlignDistil example's aligndistil.yaml (kind: aligndistil): teachers, then distillation, with held-out figures", async () => {
    const config = fileURLToPath(new URL('../../../../examples/aligndistil/aligndistil.yaml', import.meta.url))
    const { io, stdout, stderr } = captureIo()
    const fields = [
      'teachers.steps=1',
      'evaluateEvery=1',
      'tokenizer.train.vocabSize=300',
      ...Object.entries(tinyOverrides).map(([name, value]) => `model.overrides.${name}=${value}`),
    ]
    const argv = [
      '--json',
      'train',
      config,
      '--steps',
      '2',
      '--run-directory',
      join(temporaryDirectory(), 'aligndistil-yaml'),
      ...fields.flatMap((field) => ['--set', field]),
    ]
    expect(await runCli(argv, io), stderr()).toBe(exitCodes.ok)
    const summary = JSON.parse(stdout()) as TrainSummary
    expect(summary).toMatchObject({ kind: 'aligndistil', steps: 2, interrupted: false, last: { step: 2 } })
    expect(summary.last.teacherKl).toBeGreaterThanOrEqual(0)
    expect(summary.evaluation).toMatchObject({ pairs: 32 })
    expect(stderr()).toContain('align-distil [')
    const metrics = (await readFile(join(summary.runDirectory, 'metrics.jsonl'), 'utf8')).trim().split('\n')
    expect(metrics.map((line) => (JSON.parse(line) as { step: number }).step)).toEqual([1, 2])
    expect(JSON.parse(metrics[1]!)['eval/accuracy']).toBeGreaterThanOrEqual(0)
  })

  it("runs the Kuhn Poker example's kuhn.yaml with a small budget", async () => {
    const config = fileURLToPath(new URL('../../../../examples/selfplay-kuhn-poker/kuhn.yaml', import.meta.url))
    const { io, stdout, stderr } = captureIo()
    const argv = ['--json', 'train', config, '--steps', '1', '--run-directory', join(temporaryDirectory(), 'kuhn-yaml')]
    for (const field of [
      'batch.episodesPerStep=4',
      'warmUp.steps=2',
      'warmUp.episodes=20',
      'tokenizer.train.episodes=20',
      'evaluation.every=1',
      'evaluation.episodes=4',
    ])
      argv.push('--set', field)
    expect(await runCli(argv, io), stderr()).toBe(exitCodes.ok)
    const summary = JSON.parse(stdout()) as TrainSummary
    expect(summary).toMatchObject({ kind: 'rl', steps: 1, warmUp: { steps: 2 } })
    expect(summary.evaluation!['eval/random/winRate']).toBeGreaterThanOrEqual(0)
    const tokenizer = await loadTokenizer(summary.modelDirectory!)
    expect(tokenizer.vocabSize).toBeLessThanOrEqual(320)
    const text = captureIo()
    const textArgv = argv
      .slice(3)
      .map((argument) => (argument === join(temporaryDirectory(), 'kuhn-yaml') ? join(temporaryDirectory(), 'kuhn-yaml-text') : argument))
    expect(await runCli(['--quiet', 'train', config, ...textArgv], text.io)).toBe(exitCodes.ok) // a run directory of its own
    expect(text.stdout()).toMatch(/^ {2}against random: win rate [\d.]+ \[[\d.]+, [\d.]+\] \(95%\), mean reward -?[\d.]+, invalid moves [\d.]+$/m)
  })

  it("plays league opponents named in the config (a snapshot pool and the random player), logs the pool's ratings, and refuses a wrong pool field by name", async () => {
    const directory = temporaryDirectory()
    const path = join(directory, 'league.yaml')
    const league = 'opponents: [{ pool: snapshots, every: 1, keep: 2, sampling: pfsp, share: 0.6 }, { name: random, share: 0.2 }]'
    await writeFile(path, rlConfig('tictactoe-v0', [league, 'runDirectory: runs/league', 'checkpointEvery: 1']).replace(/^evaluation:.*\n/m, ''))
    const { io, stdout, stderr } = captureIo()
    expect(await runCli(['--json', '--quiet', 'train', path], io), stderr()).toBe(exitCodes.ok)
    const summary = JSON.parse(stdout()) as TrainSummary
    expect(summary).toMatchObject({ kind: 'rl', steps: 2 })
    const lines = (await readFile(join(summary.runDirectory, 'metrics.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, number>)
    expect(lines.map((line) => line['league/members'])).toEqual([1, 2])
    expect(Object.keys(lines[1]!).filter((name) => name.startsWith('league/winRate/'))).toEqual(['league/winRate/snapshot-0', 'league/winRate/snapshot-1'])
    expect(lines.some((line) => Number.isFinite(line['league/rating/learner']))).toBe(true)
    expect((await readdir(join(summary.runDirectory, 'league'))).sort()).toEqual(['snapshot-0.safetensors', 'snapshot-1.safetensors'])
    // --resume continues the pool from the run directory: a third step, its snapshot added, the oldest dropped.
    const resumed = captureIo()
    expect(await runCli(['--json', '--quiet', 'train', path, '--resume', '--steps', '3'], resumed.io), resumed.stderr()).toBe(exitCodes.ok)
    const last = JSON.parse((await readFile(join(summary.runDirectory, 'metrics.jsonl'), 'utf8')).trim().split('\n').at(-1)!) as Record<string, number>
    expect(last.step).toBe(3)
    expect(Object.keys(last).filter((name) => name.startsWith('league/winRate/'))).toEqual(['league/winRate/snapshot-1', 'league/winRate/snapshot-2'])

    const wrong = join(directory, 'wrong-league.yaml')
    await writeFile(wrong, rlConfig('tictactoe-v0', ['opponents: [{ pool: snapshots, every: 0, sampling: best, share: 0.5 }]']))
    const refused = captureIo()
    expect(await runCli(['train', wrong], refused.io)).toBe(exitCodes.usage)
    expect(refused.stderr()).toContain('opponents[0].every: Too small')
    expect(refused.stderr()).toMatch(/opponents\[0\]\.sampling: not an allowed value \(got "best"\) \(allowed: uniform \| recency \| pfsp\)/)
    expect(refused.stderr()).not.toContain('opponents[0].name') // the entry is read as a pool, not as a scripted player
  })

  it('stops at Ctrl+C after the current step, saves a checkpoint and exits 130; --resume continues', async () => {
    const directory = temporaryDirectory()
    const path = join(directory, 'stop.yaml')
    await writeFile(path, rlConfig('kuhn-poker-v1', ['prompt: kuhn-terse', 'runDirectory: stop-run']).replace('\nsteps: 2\n', '\nsteps: 3\n'))
    const { io, controller, stdout } = captureIo()
    const write = io.stderr.write
    io.stderr.write = (text: string) => {
      if (text.startsWith('self-play [') && text.includes(' 1/3')) controller.abort() // as Ctrl+C once the first step is done
      return write(text)
    }
    expect(await runCli(['--json', 'train', path], io)).toBe(exitCodes.interrupted)
    const summary = JSON.parse(stdout()) as TrainSummary
    expect(summary).toMatchObject({ interrupted: true, steps: 1 }) // the step under way when the signal came is finished
    expect(await readdir(join(directory, 'stop-run'))).toContain('checkpoint-1')
    const again = captureIo()
    expect(await runCli(['--json', 'train', path, '--resume'], again.io)).toBe(exitCodes.ok)
    const resumed = JSON.parse(again.stdout()) as TrainSummary
    expect(resumed).toMatchObject({ interrupted: false, steps: 3 })
    expect(resumed.warmUp).toBeUndefined() // a resumed run is past its warm-up
    expect(existsSync(join(directory, 'stop-run', 'model', 'model.safetensors'))).toBe(true)
  })

  it('stops an SFT run at Ctrl+C with a checkpoint too, and --resume continues it to its total', async () => {
    const directory = temporaryDirectory()
    await writeFile(join(directory, 'sft.jsonl'), ['{"prompt":"2+2=","response":"4"}', '{"prompt":"3+3=","response":"6"}'].join('\n'))
    const path = join(directory, 'sft-stop.yaml')
    await writeFile(
      path,
      `kind: sft\nmodel: ${model}\ntokenizer: { train: { vocabSize: 262 } }\ndata: sft.jsonl\nsteps: 4\nbatchSize: 2\nrunDirectory: sft-stop\n`,
    )
    const { io, controller, stdout } = captureIo()
    const write = io.stderr.write
    io.stderr.write = (text: string) => {
      if (text.startsWith('sft [') && text.includes(' 2/4')) controller.abort() // as Ctrl+C once the second step is done
      return write(text)
    }
    expect(await runCli(['--json', 'train', path], io)).toBe(exitCodes.interrupted)
    expect(JSON.parse(stdout()) as TrainSummary).toMatchObject({ kind: 'sft', interrupted: true, steps: 2 })
    expect(await readdir(join(directory, 'sft-stop'))).toContain('checkpoint-2')
    const again = captureIo()
    expect(await runCli(['--json', 'train', path, '--resume'], again.io)).toBe(exitCodes.ok)
    const resumed = JSON.parse(again.stdout()) as TrainSummary
    expect(resumed).toMatchObject({ interrupted: false, steps: 4, last: { step: 4 } })
    const steps = (await readFile(join(directory, 'sft-stop', 'metrics.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { step: number }).step)
    expect(steps).toEqual([1, 2, 3, 4])
  })

  describe('--resume never trains as if resumed from what cannot be read (issue 34)', () => {
    /** A 2-step run with a KL reference and a checkpoint each step, and what its files held. */
    async function trainedRun(name: string) {
      const directory = join(temporaryDirectory(), name)
      await mkdir(directory, { recursive: true })
      const path = join(directory, 'run.yaml')
      await writeFile(
        path,
        rlConfig('kuhn-poker-v1', ['prompt: kuhn-terse', 'runDirectory: run', 'checkpointEvery: 1', 'kl: { coefficient: 0.1 }']).replace(
          '\nsteps: 2\n',
          '\nsteps: 2\n',
        ),
      )
      const first = captureIo()
      expect(await runCli(['--json', '--quiet', 'train', path], first.io), first.stderr()).toBe(exitCodes.ok)
      const run = join(directory, 'run')
      const modelBytes = await readFile(join(run, 'model', 'model.safetensors'))
      return { path, run, modelBytes }
    }
    const resume = async (path: string, steps = 3) => {
      const io = captureIo()
      const code = await runCli(['--json', '--quiet', 'train', path, '--resume', '--steps', String(steps)], io.io)
      return { code, stderr: io.stderr(), stdout: io.stdout() }
    }

    it('every checkpoint cut short: exit 3 naming each, no step trained, model/ and the checkpoints left as they were', async () => {
      const { path, run, modelBytes } = await trainedRun('all-broken')
      for (const checkpoint of ['checkpoint-1', 'checkpoint-2']) await truncate(join(run, checkpoint, 'model.safetensors'), 100)
      const before = await readdir(run)
      const metricsBefore = await readFile(join(run, 'metrics.jsonl'), 'utf8')
      const outcome = await resume(path)
      expect(outcome.code).toBe(exitCodes.notFound)
      expect(outcome.stderr).toMatch(/cannot resume: none of the 2 checkpoint\(s\) in .* can be read \(checkpoint-2: .*; checkpoint-1: /)
      expect(outcome.stderr).toContain('nothing was trained or overwritten')
      expect(await readFile(join(run, 'model', 'model.safetensors'))).toEqual(modelBytes)
      expect(await readdir(run)).toEqual(before) // nothing set aside: a second --resume says the same
      expect(await readFile(join(run, 'metrics.jsonl'), 'utf8')).toBe(metricsBefore)
      expect((await resume(path)).code).toBe(exitCodes.notFound)
    })

    it('the newest checkpoint cut short: set aside, and the run resumes from the one before', async () => {
      const { path, run } = await trainedRun('newest-broken')
      await truncate(join(run, 'checkpoint-2', 'model.safetensors'), 100)
      const outcome = await resume(path)
      expect(outcome.code, outcome.stderr).toBe(exitCodes.ok)
      expect(JSON.parse(outcome.stdout)).toMatchObject({ steps: 3, interrupted: false })
      expect((await readdir(run)).some((name) => name.startsWith('broken-checkpoint-2-'))).toBe(true)
      const steps = (await readFile(join(run, 'metrics.jsonl'), 'utf8'))
        .trim()
        .split('\n')
        .map((line) => (JSON.parse(line) as { step: number }).step)
      expect(steps).toEqual([1, 2, 3])
    })

    it('reference/ missing or cut short: exit 3 saying the KL reference cannot be restored, nothing overwritten', async () => {
      const { path, run, modelBytes } = await trainedRun('reference')
      const saved = join(run, 'reference', 'checkpoint-0', 'model.safetensors')
      const referenceBytes = await readFile(saved)
      await truncate(saved, 64)
      const cut = await resume(path)
      expect(cut.code).toBe(exitCodes.notFound)
      expect(cut.stderr).toMatch(/cannot resume: the KL term's reference in .*reference.*checkpoint-0 cannot be read/)
      await writeFile(saved, referenceBytes)
      await rm(join(run, 'reference'), { recursive: true })
      const missing = await resume(path)
      expect(missing.code).toBe(exitCodes.notFound)
      expect(missing.stderr).toMatch(
        /cannot resume: .*reference is missing, and the KL term's reference \(the weights the run started from\) cannot be rebuilt/,
      )
      expect(await readFile(join(run, 'model', 'model.safetensors'))).toEqual(modelBytes)
      expect(existsSync(join(run, 'reference'))).toBe(false) // not saved again from the wrong weights
    })

    it('metrics.jsonl cut mid-line or deleted: rebuilt from the checkpoint, saying so, with no step lost', async () => {
      const { path, run } = await trainedRun('metrics')
      const metricsPath = join(run, 'metrics.jsonl')
      const lines = (await readFile(metricsPath, 'utf8')).trim().split('\n')
      await writeFile(metricsPath, `${lines[0]!.slice(0, 20)}`) // the first line cut mid-write
      const cut = await resume(path, 3)
      expect(cut.code, cut.stderr).toBe(exitCodes.ok)
      expect(cut.stderr).toContain("warning: metrics.jsonl lacked step(s) 1-2 of checkpoint-2; rebuilt it from the checkpoint's history")
      const steps = async () =>
        (await readFile(metricsPath, 'utf8'))
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as { step: number })
      expect((await steps()).map((record) => record.step)).toEqual([1, 2, 3])
      expect((await steps())[1]).toEqual(JSON.parse(lines[1]!))
      await rm(metricsPath)
      const deleted = await resume(path, 4)
      expect(deleted.code, deleted.stderr).toBe(exitCodes.ok)
      expect((await steps()).map((record) => record.step)).toEqual([1, 2, 3, 4])
    })
  })

  it('refuses a fresh run into a directory that holds another run (its checkpoints would mix), before the warm-up; --resume continues it', async () => {
    const directory = join(temporaryDirectory(), 'another-run')
    await mkdir(directory, { recursive: true })
    const path = join(directory, 'run.yaml')
    await writeFile(path, rlConfig('kuhn-poker-v1', ['prompt: kuhn-terse', 'runDirectory: run', 'checkpointEvery: 1', 'kl: { coefficient: 0.1 }']))
    const first = captureIo()
    expect(await runCli(['--quiet', 'train', path], first.io), first.stderr()).toBe(exitCodes.ok)
    const held = await readdir(join(directory, 'run'))
    const config = await readFile(join(directory, 'run', 'run-config.json'), 'utf8')
    expect(JSON.parse(config)).toMatchObject({ steps: 2, checkpointEvery: 1 })
    const again = captureIo()
    expect(await runCli(['train', path, '--steps', '1'], again.io)).toBe(exitCodes.usage)
    expect(again.stderr()).toMatch(
      /config\.runDirectory.*holds another run \(checkpoint-1, checkpoint-2, reference\): continue it with config\.resume \(ludic train --resume\)/,
    )
    expect(again.stderr()).not.toContain('warm-up') // refused before the warm-up trains
    expect(await readdir(join(directory, 'run'))).toEqual(held)
    expect(await readFile(join(directory, 'run', 'run-config.json'), 'utf8')).toBe(config) // the refused run's config did not replace it
    const resumed = captureIo()
    expect(await runCli(['--quiet', 'train', path, '--resume', '--steps', '3'], resumed.io), resumed.stderr()).toBe(exitCodes.ok)
    expect(JSON.parse(await readFile(join(directory, 'run', 'run-config.json'), 'utf8'))).toMatchObject({ steps: 3, resume: true })
  })

  it('refuses an estimator whose needs the config does not meet before the warm-up trains (GAE without a critic), and runs it with one', async () => {
    const path = join(temporaryDirectory(), 'gae.yaml')
    await writeFile(path, rlConfig('kuhn-poker-v1', ['prompt: kuhn-terse', 'advantage: { name: gae }', 'runDirectory: gae']))
    const refused = captureIo()
    expect(await runCli(['train', path], refused.io)).toBe(exitCodes.usage)
    expect(refused.stderr()).toMatch(/config\.advantage.*"gae".*needs the critic's values V\(s_t\): set config\.critic/)
    expect(refused.stderr()).not.toContain('warm-up') // refused before the warm-up trains
    const withCritic = captureIo()
    expect(await runCli(['--json', 'train', path, '--set', 'critic.model=separate'], withCritic.io), withCritic.stderr()).toBe(exitCodes.ok)
    const summary = JSON.parse(withCritic.stdout()) as TrainSummary
    const metrics = (await readFile(join(summary.runDirectory, 'metrics.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
    for (const step of metrics) expect(Number.isFinite(step.valueLoss)).toBe(true)
  })
})
