import { writeFile } from 'node:fs/promises'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { runCli } from './cli.js'
import { exitCodes } from './errors.js'
import type { TrainSummary } from './commands/train.js'
import { captureIo, saveTinyModel, useBackendAndDirectory } from './test/support.js'

const temporaryDirectory = useBackendAndDirectory('ludic-cli-plugins-')
const plugin = fileURLToPath(new URL('./test/fixtures/coin-plugin.js', import.meta.url))
const broken = fileURLToPath(new URL('./test/fixtures/broken-plugin.js', import.meta.url))

// The games a plugin registers are named on the command line as in a config: `--plugin` imports the module first with
// the loader of a config's `plugins:`. This file imports the coin plugin only through `--plugin`, and it checks that
// the game is unknown before: an isolated-test (its own module graph), as a file run after one that loaded the plugin
// would find it registered.
describe('--plugin', () => {
  it('lets ludic eval evaluate a game a plugin registers (without it: not a registered game, exit 2)', async () => {
    const directory = temporaryDirectory()
    const model = await saveTinyModel(join(directory, 'tiny'))
    const argv = ['eval', model, '--games', 'coin-pick-v1', '--opponents', 'random', '--episodes', '2', '--out', join(directory, 'eval')]
    const without = captureIo({ cwd: directory })
    expect(await runCli(argv, without.io)).toBe(exitCodes.usage)
    expect(without.stderr()).toContain('\'options.games\' (value: "coin-pick-v1"): is not a registered game')

    const { io, stdout, stderr } = captureIo({ cwd: directory })
    expect(await runCli(['--json', ...argv, '--plugin', relative(directory, plugin)], io), stderr()).toBe(exitCodes.ok)
    const result = JSON.parse(stdout()) as { report: { tables: { rows: unknown[][] }[] } }
    expect(result.report.tables[0]!.rows.map((row) => row[0])).toContain('coin-pick-v1')
  })

  it('lets ludic bench and ludic train name a plugin game, as a config with plugins: would', async () => {
    const directory = temporaryDirectory()
    const model = await saveTinyModel(join(directory, 'tiny-bench'))
    const bench = captureIo({ cwd: directory })
    const sets = [`checkpoint=${model}`, 'games=[coin-pick-v1]', 'opponents=[random]', 'episodes=2'].flatMap((set) => ['--set', set])
    expect(await runCli(['bench', 'games', ...sets, '--out', join(directory, 'bench'), '--plugin', plugin], bench.io), bench.stderr()).toBe(exitCodes.ok)
    expect(bench.stdout()).toContain('coin-pick-v1')

    const config = join(directory, 'coin.yaml')
    await writeFile(
      config,
      [
        'model: { preset: tiny, seed: 0, overrides: { hiddenSize: 32, numAttentionHeads: 2, numHiddenLayers: 1, intermediateSize: 64 } }',
        'tokenizer: { train: { vocabSize: 280, episodes: 8 } }',
        'environments: [{ game: coin-pick-v1 }]',
        'advantage: { name: counted-grpo }',
        'chatTemplate: "{{ messages[-1][\'content\'] }}\\n>"',
        'batch: { episodesPerStep: 2, miniBatchSize: 8, ppoEpochs: 1, maxTokens: 4, groupSize: 2 }',
        'steps: 1',
        '',
      ].join('\n'),
    )
    const train = captureIo({ cwd: directory })
    expect(
      await runCli(['--json', '--quiet', 'train', config, '--run-directory', 'coin-run', '--plugin', relative(directory, plugin)], train.io),
      train.stderr(),
    ).toBe(exitCodes.ok)
    expect((JSON.parse(train.stdout()) as TrainSummary).steps).toBe(1)
  })

  it('is input not found (3) for a missing module and a usage error (2) for one that fails to import, as in a config', async () => {
    const directory = temporaryDirectory()
    const missing = captureIo({ cwd: directory })
    expect(await runCli(['bench', 'games', '--plugin', 'no-such-plugin.js'], missing.io)).toBe(exitCodes.notFound)
    expect(missing.stderr()).toContain(`--plugin at [0]: no such file: ${join(directory, 'no-such-plugin.js')}`)
    const failing = captureIo({ cwd: directory })
    expect(await runCli(['eval', 'anything', '--plugin', plugin, '--plugin', broken], failing.io)).toBe(exitCodes.usage)
    expect(failing.stderr()).toContain('--plugin at [1]: cannot import')
    expect(failing.stderr()).toContain('this plugin is broken on purpose')
  })
})
