import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Trajectory } from '@ludic/core'
import { afterAll, describe, expect, it } from 'vitest'
import { main } from './main.js'
import { negotiationOutcome, terseObservation } from './negotiation-setup.js'
import { createSimpleNegotiation } from '@ludic/games'

const directories: string[] = []
afterAll(async () => {
  for (const directory of directories) await rm(directory, { recursive: true, force: true, maxRetries: 5 })
})

/** A trajectory whose turns play `actions` (roles alternating from player0), without a policy. */
function trajectoryOf(actions: string[], invalidAt = -1): Trajectory {
  const turns = actions.map((action, index) => ({
    index,
    role: index % 2 === 0 ? 'player0' : 'player1',
    observation: '',
    action,
    rewards: {},
    invalidAction: index === invalidAt,
  }))
  return {
    id: 't',
    environmentId: 'simple-negotiation-v1',
    seed: 0,
    groupId: 'g',
    roles: ['player0', 'player1'],
    turns,
    returns: {},
    done: true,
    truncated: false,
  }
}

describe('selfplay-negotiation', () => {
  it('reads the state tersely and replays an episode into value changes and deals', () => {
    const environment = createSimpleNegotiation({ turns: 6 })
    environment.reset(0)
    const next = environment.step('[Offer: 1 Wood -> 2 Gold]').next!
    expect(terseObservation(next.observation)).toBe('P1 turn 2/6 Wood 10 Gold 10\noffer 1 Wood -> 2 Gold')
    // player1 accepts: player0 gives 1 Wood (−5) and gets 2 Gold (+30); player1 gets 1 Wood (+15), gives 2 Gold (−10).
    expect(negotiationOutcome(trajectoryOf(['I offer [Offer: 1 Wood -> 2 Gold]', '[Accept]', '[Deny]']))).toEqual({ valueChange: [25, 5], deals: 1 })
    // An accept with no offer open is invalid: the game ends there, nothing traded.
    expect(negotiationOutcome(trajectoryOf(['[Accept]', '[Offer: 1 Gold -> 1 Wood]', '[Accept]'], 0))).toEqual({ valueChange: [0, 0], deals: 0 })
    // A denied offer trades nothing; a counter-offer replaces it.
    expect(negotiationOutcome(trajectoryOf(['[Offer: 1 Wood -> 2 Gold]', '[Offer: 1 Gold -> 3 Wood]', '[Accept]']))).toEqual({ valueChange: [0, 40], deals: 1 })
  })

  it('runs with tiny settings and writes the report, the metrics and the chart', async () => {
    const runDirectory = await mkdtemp(join(tmpdir(), 'ludic-selfplay-negotiation-'))
    directories.push(runDirectory)
    const lines: string[] = []
    const report = await main({
      steps: 2,
      sftSteps: 5,
      warmupGames: 4,
      turns: 4,
      episodesPerStep: 4,
      miniBatchSize: 16,
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
      for (const figures of [evaluation.heuristic, evaluation.random]) {
        for (const rate of [figures.winRate, figures.dealRate, figures.invalidRate]) {
          expect(rate).toBeGreaterThanOrEqual(0)
          expect(rate).toBeLessThanOrEqual(1)
        }
        expect(Math.abs(figures.meanValueChange)).toBeLessThanOrEqual(400)
        expect(figures.meanReward).toBeGreaterThanOrEqual(-1)
        expect(figures.meanReward).toBeLessThanOrEqual(1)
      }
    }
    const saved = JSON.parse(await readFile(join(runDirectory, 'report.json'), 'utf8')) as { after: { step: number }; backend: string }
    expect(saved.after.step).toBe(2)
    expect(saved.backend).toBe('wasm')
    const metrics = (await readFile(join(runDirectory, 'metrics.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, number>)
    expect(metrics.map((record) => record.step)).toEqual([1, 2])
    expect(metrics[0]!['reward/simple-negotiation-v1/player0']).toBeTypeOf('number')
    expect(metrics[0]!['eval/heuristic/dealRate']).toBeTypeOf('number')
    const chart = await readFile(join(runDirectory, 'chart.svg'), 'utf8')
    expect(chart).toMatch(/^<svg[^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/)
    expect(chart).toContain('value change per game vs heuristic')
    expect(lines.at(-2)).toMatch(/^after 2 self-play steps: vs heuristic: value [-+][\d.]+/)
  })
})
