import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createIteratedPrisonersDilemma, createTicTacToe } from '@ludic/games'
import { afterAll, describe, expect, it } from 'vitest'
import { main } from './main.js'
import { terseObservation } from './games-setup.js'

const directories: string[] = []
afterAll(async () => {
  for (const directory of directories) await rm(directory, { recursive: true, force: true, maxRetries: 5 })
})

describe('multi-game', () => {
  it('dispatches the terse prompt on the game', () => {
    const ticTacToe = createTicTacToe()
    ticTacToe.reset(0)
    expect(terseObservation(ticTacToe.step('[4]').next!.observation)).toBe('tictactoe X\n012\n3O5\n678\nfree 0 1 2 3 5 6 7 8')
    const dilemma = createIteratedPrisonersDilemma({ rounds: 3 })
    dilemma.reset(0)
    dilemma.step('[Cooperate]')
    const view = dilemma.step('[Defect]').next!
    expect(terseObservation(view.observation)).toBe('ipd 2/3\nme C\nthem D')
    expect(terseObservation(dilemma.step('[Defect]').next!.observation)).toBe('ipd 2/3\nme D\nthem C')
  })

  it('trains on three games at once with tiny settings and writes per-game metrics and evaluations', async () => {
    const runDirectory = await mkdtemp(join(tmpdir(), 'ludic-multi-game-'))
    directories.push(runDirectory)
    const lines: string[] = []
    const report = await main({
      steps: 2,
      sftSteps: 5,
      warmupGames: 4,
      sftExamplesPerGame: 24,
      episodesPerStep: 4,
      miniBatchSize: 32,
      evaluateEvery: 1,
      evaluationEpisodes: 4,
      checkpointEvery: 1,
      runDirectory,
      backend: 'wasm',
      progress: false,
      log: (line) => lines.push(line),
    })
    expect(report.evaluations.map((evaluation) => evaluation.step)).toEqual([0, 1, 2])
    for (const evaluation of report.evaluations) {
      expect(evaluation.kuhnExploitability).toBeGreaterThanOrEqual(0)
      expect(evaluation.kuhnExploitability).toBeLessThanOrEqual(1.5)
      expect(Object.keys(evaluation)).toEqual(['step', 'kuhnExploitability', 'kuhn', 'tictactoe', 'ipd'])
      for (const figures of [evaluation.kuhn, evaluation.tictactoe, evaluation.ipd]) {
        for (const rate of [figures.winRate, figures.drawRate, figures.invalidRate]) {
          expect(rate).toBeGreaterThanOrEqual(0)
          expect(rate).toBeLessThanOrEqual(1)
        }
        expect(figures.winRate + figures.drawRate).toBeLessThanOrEqual(1)
      }
    }
    const metrics = (await readFile(join(runDirectory, 'metrics.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, number>)
    expect(metrics.map((record) => record.step)).toEqual([1, 2])
    for (const game of ['kuhn-poker-v1', 'tictactoe-v0', 'iterated-prisoners-dilemma-v0']) {
      expect(metrics[0]![`reward/${game}/player0`]).toBeTypeOf('number')
      expect(metrics[0]![`winRate/${game}/player1`]).toBeTypeOf('number')
    }
    expect(metrics[0]!.episodes).toBe(12) // 4 of each game
    expect(metrics[1]!['eval/tictactoe/winRate']).toBeTypeOf('number')
    const saved = JSON.parse(await readFile(join(runDirectory, 'report.json'), 'utf8')) as { after: { step: number } }
    expect(saved.after.step).toBe(2)
    expect(await readFile(join(runDirectory, 'chart.svg'), 'utf8')).toContain('TicTacToe')
    expect(lines.at(-2)).toMatch(/^after 2 self-play steps: Kuhn exploitability [\d.]+/)
  })
})
