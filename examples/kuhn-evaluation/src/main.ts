/**
 * Kuhn Poker with scripted opponents: a uniformly random player against a Nash-equilibrium player for a
 * few seeded 5-round episodes (net chips), then the exact exploitability of the uniform random policy.
 *
 *   npm start
 */
import { pathToFileURL } from 'node:url'
import {
  createKuhnNashPolicy,
  createKuhnPoker,
  createRandomPolicy,
  kuhnConstantPolicy,
  kuhnExploitability,
  playEpisode,
  type KuhnExploitability,
} from '@ludic/games'

export interface KuhnEvaluationOptions {
  seeds?: readonly number[]
  log?: (line: string) => void
}

export interface KuhnEvaluationResult {
  episodes: { seed: number; rewards: Record<string, number> }[]
  uniform: KuhnExploitability
}

export async function main(options: KuhnEvaluationOptions = {}): Promise<KuhnEvaluationResult> {
  const log = options.log ?? console.log
  const environment = createKuhnPoker({ reward: 'chips' }) // 5 rounds, OpenSpiel's payoffs
  const players = { player0: createRandomPolicy({ seed: 1 }), player1: createKuhnNashPolicy({ alpha: 1 / 6, seed: 2 }) }
  const episodes: KuhnEvaluationResult['episodes'] = []
  for (const seed of options.seeds ?? [1, 2, 3]) {
    const { rewards } = await playEpisode(environment, players, { seed })
    episodes.push({ seed, rewards })
    log(`episode ${seed}: random ${signed(rewards.player0!)} chips, Nash ${signed(rewards.player1!)} chips`)
  }
  const uniform = kuhnExploitability(kuhnConstantPolicy(0.5)) // P(bet or call) = 1/2 everywhere
  log(`uniform random policy: exploitability ${uniform.exploitability.toFixed(4)}, NashConv ${uniform.nashConv.toFixed(4)}`)
  return { episodes, uniform }
}

function signed(value: number): string {
  return value > 0 ? `+${value}` : String(value)
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main()
