import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { InvalidArgumentError, type Trajectory } from '@ludic/core'
import { afterAll, describe, expect, it } from 'vitest'
import { describeEvaluation, main, type Evaluation, type MainOptions } from './main.js'
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
    expect(lines.at(-2)).toMatch(/win [\d.]+% \[[\d.]+%, [\d.]+%\]/) // the win rate's Wilson interval
    // Pure self-play by default: no opponent, no league.
    expect(report.leagueRatings).toBeUndefined()
    expect(metrics[0]!['league/members']).toBeUndefined()
  })

  it('trains against the heuristic and the league when asked: both play, the ratings are reported and charted', async () => {
    const runDirectory = await mkdtemp(join(tmpdir(), 'ludic-selfplay-negotiation-'))
    directories.push(runDirectory)
    const report = await main({
      steps: 2,
      sftSteps: 2,
      warmupGames: 4,
      turns: 4,
      episodesPerStep: 8,
      miniBatchSize: 16,
      evaluationEpisodes: 4,
      checkpointEvery: 0,
      heuristicOpponentShare: 0.5,
      leagueShare: 0.5,
      leagueEvery: 1,
      runDirectory,
      backend: 'wasm',
      progress: false,
      log: () => {},
    })
    expect(report.options).toMatchObject({ heuristicOpponentShare: 0.5, randomOpponentShare: 0, leagueShare: 0.5, leagueEvery: 1 })
    // The win rate before and after against each opponent, with its 95% Wilson interval around it.
    for (const evaluation of [report.before, report.after]) {
      for (const figures of [evaluation.heuristic, evaluation.random]) {
        expect(figures.winRateInterval.low).toBeLessThanOrEqual(figures.winRate)
        expect(figures.winRateInterval.high).toBeGreaterThanOrEqual(figures.winRate)
        expect(figures.winRateInterval.high - figures.winRateInterval.low).toBeGreaterThan(0)
      }
    }
    const games = (await readFile(join(runDirectory, 'trajectories.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { turns: { policyId: string }[] })
    const players = new Set(games.flatMap((game) => game.turns.map((turn) => turn.policyId)))
    // Every game has an opponent in one seat: the heuristic, or a snapshot of the league (the learner's own moves are 'learner').
    expect(players).toContain('learner')
    expect([...players].filter((id) => id !== 'learner').every((id) => id === 'heuristic-opponent' || /^snapshot-\d+$/.test(id))).toBe(true)
    const metrics = (await readFile(join(runDirectory, 'metrics.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, number>)
    expect(metrics.map((record) => record['league/members'])).toEqual([1, 2]) // a snapshot at the start and after step 1
    const last = metrics.at(-1)!
    // The heuristic's games are rated beside the pool's: both opponents played.
    expect(last['league/rating/heuristic-opponent']).toBeTypeOf('number')
    expect(Object.keys(last).some((key) => /^league\/rating\/snapshot-\d+$/.test(key))).toBe(true)
    expect(report.leagueRatings!.learner).toBe(last['league/rating/learner'])
    expect(report.leagueRatings!.opponents).toEqual([{ id: 'heuristic-opponent', rating: last['league/rating/heuristic-opponent'] }])
    expect(report.leagueRatings!.snapshots.map((snapshot) => snapshot.rating)).toEqual(
      report.leagueRatings!.snapshots.map((snapshot) => last[`league/rating/snapshot-${snapshot.step}`]),
    )
    const ratingsChart = await readFile(join(runDirectory, 'league-ratings.svg'), 'utf8')
    expect(ratingsChart).toMatch(/^<svg/)
    expect(ratingsChart).toContain('heuristic-opponent')
  })

  it("refuses opponents' shares adding up to more than 1 by name, before anything is made", async () => {
    const lines: string[] = []
    const refused: [Record<string, unknown>, string][] = [
      [{ heuristicOpponentShare: 0.6, leagueShare: 0.5 }, 'options.leagueShare'],
      [{ heuristicOpponentShare: 0.7, randomOpponentShare: 0.4 }, 'options.randomOpponentShare'],
      [{ heuristicOpponentShare: 1.5 }, 'options.heuristicOpponentShare'],
      [{ leagueSampling: 'elo' }, 'options.leagueSampling'],
    ]
    for (const [options, argument] of refused) {
      const error = await main({ ...(options as MainOptions), backend: 'wasm', progress: false, log: (line) => lines.push(line) }).catch(
        (caught: unknown) => caught,
      )
      expect(error).toBeInstanceOf(InvalidArgumentError)
      expect((error as InvalidArgumentError).argument).toBe(argument)
    }
    const error = await main({ heuristicOpponentShare: 0.6, randomOpponentShare: 0.2, leagueShare: 0.3, log: () => {} }).catch((caught: unknown) => caught)
    expect((error as Error).message).toContain('heuristicOpponentShare + randomOpponentShare + leagueShare add up to 1.1')
    expect(lines).toEqual([]) // refused when parsed: no backend started, no run directory made
  })

  it('logs an evaluation with its win-rate interval, and one from a before.json written before intervals without it', () => {
    const figures = { meanValueChange: 2, opponentValueChange: 1, winRate: 0.5, winRateInterval: { low: 0.4, high: 0.6 }, dealRate: 0.7, invalidRate: 0 }
    const evaluation = { step: 0, heuristic: figures, random: figures } as unknown as Evaluation
    expect(describeEvaluation(evaluation)).toContain('win 50.0% [40.0%, 60.0%]')
    const { winRateInterval: _, ...older } = figures
    const resumed = { step: 0, heuristic: older, random: older } as unknown as Evaluation
    expect(describeEvaluation(resumed)).toContain('win 50.0%, deals 70.0%')
  })
})
