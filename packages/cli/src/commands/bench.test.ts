import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { runCli } from '../cli.js'
import { exitCodes } from '../errors.js'
import { captureIo, saveTinyModel, useBackendAndDirectory } from '../test/support.js'
import type { BenchResult } from './bench.js'

const temporaryDirectory = useBackendAndDirectory('ludic-cli-bench-')

describe('ludic eval and ludic bench', () => {
  it('evaluates a model directory in games: the table with win rates and their 95% intervals, and the report files', async () => {
    const directory = await saveTinyModel(join(temporaryDirectory(), 'tiny'))
    const out = join(temporaryDirectory(), 'results')
    const { io, stdout, stderr } = captureIo()
    const argv = ['eval', directory, '--games', 'kuhn-poker-v1,tictactoe-v0', '--opponents', 'random', '--episodes', '4', '--max-tokens', '4', '--out', out]
    expect(await runCli(argv, io), stderr()).toBe(exitCodes.ok)
    const text = stdout()
    expect(text).toContain('| game | opponent | episodes | win rate | win 95% interval |')
    const kuhn = text.split('\n').find((line) => line.startsWith('| kuhn-poker-v1 | random |'))!
    expect(kuhn).toMatch(/\| 4 \| [\d.]+ \| \[[\d.]+, [\d.]+\] \|/)
    expect(text).toContain(`Report files: ${join(out, 'games.json')}`)
    expect(existsSync(join(out, 'games.md'))).toBe(true)
  })

  it('runs a suite by name with --set options, JSON with --json; an unknown suite is a usage error listing them', async () => {
    const out = join(temporaryDirectory(), 'kuhn')
    const { io, stdout } = captureIo()
    expect(await runCli(['--json', '--quiet', 'bench', 'kuhn', '--set', 'samples=4', '--out', out], io)).toBe(exitCodes.ok)
    const result = JSON.parse(stdout()) as BenchResult
    expect(result.report.suite).toBe('kuhn')
    expect(result.report.tables[0]!.rows.length).toBeGreaterThan(0)
    expect(result.files.json).toBe(join(out, 'kuhn.json'))
    const unknown = captureIo()
    expect(await runCli(['bench', 'speed'], unknown.io)).toBe(exitCodes.usage)
    expect(unknown.stderr()).toContain('allowed: kernels | tokenizer | train-step')
    const badOption = captureIo()
    expect(await runCli(['bench', 'kuhn', '--set', 'samples=-1', '--out', out], badOption.io)).toBe(exitCodes.usage)
    expect(badOption.stderr()).toContain('samples')
  })
})
