import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { createProgram, runCli } from './cli.js'
import { exitCodes } from './errors.js'
import { captureIo, useBackendAndDirectory } from './test/support.js'

const temporaryDirectory = useBackendAndDirectory('ludic-cli-')

describe('ludic', () => {
  it('prints its help with every command, the examples and the exit codes', async () => {
    const { io, stdout } = captureIo()
    expect(await runCli(['--help'], io)).toBe(exitCodes.ok)
    for (const command of ['train', 'eval', 'bench', 'serve', 'tokenizer', 'download', 'view', '--json', '--quiet', '--seed', 'Exit codes:', '130']) {
      expect(stdout()).toContain(command)
    }
    const train = captureIo()
    expect(await runCli(['train', '--help'], train.io)).toBe(exitCodes.ok)
    expect(train.stdout()).toContain('--set <path=value>')
    expect(train.stdout()).toContain('Examples:')
    const version = captureIo()
    expect(await runCli(['--version'], version.io)).toBe(exitCodes.ok)
    expect(version.stdout()).toMatch(/^\d+\.\d+\.\d+/)
  })

  it('is a usage error (2) for an unknown command, a missing argument or a bad number', async () => {
    for (const argv of [
      ['fly'],
      ['train'],
      ['train', 'x.yaml', '--steps', 'ten'],
      ['serve', 'model', '--port', '-1'],
      ['serve', 'model', '--port', '70000'],
      ['eval', 'm', '--suite', 'chess'],
    ]) {
      const { io, stderr } = captureIo()
      expect(await runCli(argv, io), argv.join(' ')).toBe(exitCodes.usage)
      expect(stderr()).not.toBe('')
    }
  })

  it('is input not found (3) for a missing config file or model directory', async () => {
    const { io, stderr } = captureIo({ cwd: temporaryDirectory() })
    expect(await runCli(['train', 'missing.yaml'], io)).toBe(exitCodes.notFound)
    expect(stderr()).toContain('missing.yaml')
    const serve = captureIo({ cwd: temporaryDirectory() })
    expect(await runCli(['serve', './no-such-model', '--port', '0'], serve.io)).toBe(exitCodes.notFound)
  })

  it('names every wrong field of a config file with the allowed values (exit code 2)', async () => {
    const path = join(temporaryDirectory(), 'bad.yaml')
    await writeFile(
      path,
      [
        'model: { preset: huge }',
        'environments: [{ game: chess-v0 }]',
        'advantage: { name: nope }',
        'policyLoss: { name: ppo-wild }',
        'batch: { ppoEpochs: 0 }',
        'surprise: 1',
        '',
      ].join('\n'),
    )
    const { io, stderr } = captureIo()
    expect(await runCli(['train', path], io)).toBe(exitCodes.usage)
    const text = stderr()
    expect(text).toContain(`invalid ${path}: 6 wrong fields`)
    expect(text).toMatch(/model\.preset: not an allowed value \(got "huge"\) \(allowed: tiny \| small \| base\)/)
    expect(text).toMatch(/environments\[0\]\.game: is not a registered environment \(tictactoe-v0, kuhn-poker-v1/)
    expect(text).toMatch(/advantage\.name: is not a registered advantage estimator \(gae, grpo/)
    expect(text).toMatch(/policyLoss\.name: is not a registered policy loss \(ppo-clip, truncated-ppo, .*\) \(got "ppo-wild"\)/)
    expect(text).toContain('batch.ppoEpochs: Too small')
    expect(text).toContain('surprise: unknown field')
    const kind = join(temporaryDirectory(), 'kind.yaml')
    await writeFile(kind, 'kind: ppo\n')
    const wrongKind = captureIo()
    expect(await runCli(['train', kind], wrongKind.io)).toBe(exitCodes.usage)
    expect(wrongKind.stderr()).toContain('kind: not an allowed value (got "ppo") (allowed: rl | cpo | sft | preference | reward-model | for | aligndistil)')
  })

  it('bounds --set paths into lists on train and bench, and config files by size and depth, naming the path (exit code 2)', async () => {
    const path = join(temporaryDirectory(), 'lists.yaml')
    await writeFile(path, 'environments: [{ game: kuhn-poker-v1 }]\n')
    const train = captureIo()
    expect(await runCli(['train', path, '--set', 'environments.4294967294.game=x'], train.io)).toBe(exitCodes.usage) // grew memory ~100 MB/s
    expect(train.stderr()).toContain('cannot set environments.4294967294: environments has 1 item, so its index is at most 1')
    const bench = captureIo()
    expect(await runCli(['bench', 'kuhn', '--set', 'samples.4294967294=4'], bench.io)).toBe(exitCodes.usage)
    expect(bench.stderr()).toContain('cannot set samples.4294967294: samples has 0 items')
    const deep = join(temporaryDirectory(), 'deep.json')
    await writeFile(deep, `{"environments": ${'['.repeat(100_000)}${']'.repeat(100_000)}}`)
    const nested = captureIo()
    expect(await runCli(['train', deep], nested.io)).toBe(exitCodes.usage) // was exit 1, 'Maximum call stack size exceeded' naming no file
    expect(nested.stderr()).toContain(`Cannot parse ${deep} at environments${'[0]'.repeat(63)}: is nested more than 64 objects and arrays deep`)
  })

  it('suggests the field meant by a misspelled one of a config file, as commander does for a flag', async () => {
    const path = join(temporaryDirectory(), 'misspelled.yaml')
    await writeFile(path, ['model: { preset: tiny }', 'stepz: 2', 'batch: { episodsPerStep: 4 }', 'surprise: 1', ''].join('\n'))
    const { io, stderr } = captureIo()
    expect(await runCli(['train', path], io)).toBe(exitCodes.usage)
    expect(stderr()).toContain('  stepz: unknown field (did you mean "steps"?)')
    expect(stderr()).toContain('  batch.episodsPerStep: unknown field (did you mean "episodesPerStep"?)')
    expect(stderr()).toMatch(/ {2}surprise: unknown field\n/)
    const flag = captureIo()
    expect(await runCli(['train', path, '--step', '2'], flag.io)).toBe(exitCodes.usage)
    expect(flag.stderr()).toContain('(Did you mean --steps?)')
  })

  it('builds a program tests can drive with exitOverride', async () => {
    const { io } = captureIo()
    const program = createProgram(io)
    await expect(program.parseAsync(['nothing'], { from: 'user' })).rejects.toMatchObject({ code: 'commander.unknownCommand' })
  })
})
