import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { InvalidArgumentError, parseArgument } from '@ludic/core'
import { afterAll, describe, expect, it } from 'vitest'
import { ablation, ablationRows, ablationTable, resultOf, type AblationResult } from './ablation.js'
import { mainOptionsSchema, type Report } from './main.js'

const directories: string[] = []
afterAll(async () => {
  for (const directory of directories) await rm(directory, { recursive: true, force: true, maxRetries: 5 })
})

const play = (winRate: number, lossRate = 0.1) => ({
  winRate,
  winRateInterval: { low: 0, high: 1 },
  drawRate: 1 - winRate - lossRate,
  lossRate,
  invalidRate: 0,
  winRateAsO: winRate + 0.1,
  winRateAsX: winRate - 0.1,
})
/** A report.json as `main` writes it, with the figures the table reads. */
const reportWith = (winRate: number, greedyMinimaxLoss: number, seconds: number) =>
  ({
    options: { evaluationEpisodes: 400 },
    after: { step: 120, ...play(winRate), greedyWinRate: winRate + 0.02, greedyDrawRate: 0, greedyInvalidRate: 0 },
    minimaxAfter: { sampled: play(0, 0.25), greedy: play(0, greedyMinimaxLoss) },
    seconds,
  }) as unknown as Report

describe('selfplay-tictactoe ablation', () => {
  it("every row's options are valid options of main, and the rows' names are distinct", () => {
    for (const row of ablationRows) expect(() => parseArgument(mainOptionsSchema, { ...row.options, steps: 120 }, row.name)).not.toThrow()
    expect(new Set(ablationRows.map((row) => row.name)).size).toBe(ablationRows.length)
  })

  it('tabulates per-seed win rates, the pooled rate with its Wilson interval, and greedy losses to minimax', () => {
    const results: AblationResult[] = [resultOf('random', 0, reportWith(0.75, 0, 300)), resultOf('random', 1, reportWith(0.8, 1, 320))]
    const table = ablationTable(ablationRows, results, 400)
    const lines = table.trim().split('\n')
    // Header, separator, and only the row that has runs.
    expect(lines).toHaveLength(3)
    // 300 + 320 wins of 800: 77.5 %, Wilson [74.5, 80.3].
    expect(lines[2]).toBe(
      '| + random player, share 0.5 (the default) | 75.0 / 80.0 | 77.5 [74.5, 80.3] | 87.5 / 67.5 | 10.0 | 79.5 | 75.0 / 25.0 | 1 of 2 | 310 s |',
    )
  })

  it('reads the runs that have a report instead of running them, and writes the table beside them', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'ludic-ablation-'))
    directories.push(directory)
    for (const [seed, winRate] of [
      [0, 0.5],
      [1, 0.6],
    ] as const) {
      await mkdir(join(directory, `self-play-seed${seed}`))
      await writeFile(join(directory, `self-play-seed${seed}`, 'report.json'), JSON.stringify(reportWith(winRate, 0, 100)))
    }
    const { results, table } = await ablation({ rows: 'self-play', seeds: '0,1', runsDirectory: directory, steps: 7 })
    expect(results.map((result) => [result.seed, result.winRate])).toEqual([
      [0, 0.5],
      [1, 0.6],
    ])
    expect(table).toContain('| pure self-play (RAE + PPO) | 50.0 / 60.0 | 55.0 [')
    expect(await readFile(join(directory, 'ablation.md'), 'utf8')).toBe(`7 self-play steps a run, seeds 0, 1\n\n${table}`)
    expect(JSON.parse(await readFile(join(directory, 'ablation.json'), 'utf8'))).toMatchObject({ steps: 7, seeds: [0, 1] })
  })

  it('refuses an unknown row by name before any run starts', async () => {
    const error = await ablation({ rows: 'self-play,nope', runsDirectory: join(tmpdir(), 'never-made') }).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(InvalidArgumentError)
    expect(error).toMatchObject({ argument: 'options.rows', value: 'nope' })
  })
})
