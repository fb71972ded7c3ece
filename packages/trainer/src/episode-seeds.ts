import { deriveSeed } from '@ludic/core'

/** The reset seeds of step `stepIndex`'s episodes: consecutive from one derived from the run's seed (every source alike). */
export function episodeSeeds(seed: number, stepIndex: number, count: number): number[] {
  const first = deriveSeed('ludic.episodes', seed, stepIndex) % 2 ** 30
  return Array.from({ length: count }, (_, index) => first + index)
}
