/**
 * The held-out measurements: N trajectories per problem sampled from the model restricted to the valid steps
 * (temperature 1, no ε), pass@k by the unbiased estimator, and the distinct correct solutions among the N
 * (canonical expressions); then means with intervals, over seeds and over problems (a seeded bootstrap).
 */
import { createRandom, deriveSeed, type TokenizerV1 } from '@ludic/core'
import { game24ExpressionOfSteps } from '@ludic/games'
import type { CausalLanguageModel } from '@ludic/model'
import { createStepwiseEnvironments, sampleStepwiseTrajectories } from '@ludic/trainer'
import { game24Task, game24Tasks, type Game24Problem } from './game24-setup.js'

/** One problem's N samples. */
export interface ProblemResult {
  problem: string
  /** Samples that reached 24 (c of n). */
  correct: number
  /** Distinct canonical expressions among the correct samples (commutative/associative rewrites count once). */
  distinctSolutions: number
  /** Distinct step sequences among the correct samples (FoR's released test code counts these). */
  distinctTrajectories: number
}

/**
 * pass@k: the chance that at least one of k samples drawn without replacement from n, c of them correct, is
 * correct, 1 − C(n−c, k)/C(n, k) (Chen et al. 2021), computed as a product to stay exact.
 */
export function passAtK(n: number, c: number, k: number): number {
  if (n - c < k) return 1
  let allWrong = 1
  for (let index = n - c + 1; index <= n; index++) allWrong *= 1 - k / index
  return 1 - allWrong
}

/** N samples per problem from the model (valid steps only, temperature 1), seeded. */
export async function evaluateDiversity(
  model: CausalLanguageModel,
  tokenizer: TokenizerV1,
  problems: readonly Game24Problem[],
  settings: { samples: number; seed: number },
): Promise<ProblemResult[]> {
  const random = createRandom(deriveSeed('ludic.game24-evaluation', settings.seed))
  const { environments, seeds: _, ...prompt } = game24Tasks(problems)
  const states = createStepwiseEnvironments(tokenizer, environments, prompt)
  const results: ProblemResult[] = []
  for (const [seed, problem] of problems.entries()) {
    const episodes = await sampleStepwiseTrajectories(
      model,
      tokenizer,
      states,
      { environment: 0, seed },
      { temperatures: Array(settings.samples).fill(1), random },
    )
    const correct = episodes.map((episode) => episode.actions).filter((steps) => game24Task.solved(problem, steps))
    const expressions = correct.map((steps) => {
      const replayed = game24ExpressionOfSteps(problem, steps)
      return replayed.ok ? replayed.expression : ''
    })
    results.push({
      problem: problem.join(' '),
      correct: correct.length,
      distinctSolutions: new Set(expressions).size,
      distinctTrajectories: new Set(correct.map((steps) => steps.join('\n'))).size,
    })
  }
  return results
}

/** The figures of one evaluated model: pass@k for k = 1, 2, 4, … up to N, and mean distinct correct solutions per problem. */
export interface Summary {
  passAtK: Record<string, number>
  distinctSolutions: number
  distinctTrajectories: number
}

export const kValues = (samples: number): number[] => {
  const values: number[] = []
  for (let k = 1; k <= samples; k *= 2) values.push(k)
  if (values.at(-1) !== samples) values.push(samples)
  return values
}

export function summarise(results: readonly ProblemResult[], samples: number): Summary {
  const mean = (values: number[]) => values.reduce((total, value) => total + value, 0) / Math.max(1, values.length)
  return {
    passAtK: Object.fromEntries(kValues(samples).map((k) => [k, mean(results.map((result) => passAtK(samples, result.correct, k)))])),
    distinctSolutions: mean(results.map((result) => result.distinctSolutions)),
    distinctTrajectories: mean(results.map((result) => result.distinctTrajectories)),
  }
}

/** A mean and its 95% interval. */
export interface Interval {
  mean: number
  low: number
  high: number
}

/** Student's t quantile t_{0.975, df} for small df (normal beyond 30). */
function tQuantile(degreesOfFreedom: number): number {
  const table = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228]
  if (degreesOfFreedom <= 10) return table[degreesOfFreedom - 1]!
  return degreesOfFreedom <= 30 ? 2.042 + (2.228 - 2.042) * ((30 - degreesOfFreedom) / 20) : 1.96
}

/** Mean ± t·s/√n over the seeds' values (one value: no interval, low = high = the value). */
export function seedInterval(values: readonly number[]): Interval {
  const mean = values.reduce((total, value) => total + value, 0) / values.length
  if (values.length < 2) return { mean, low: mean, high: mean }
  const variance = values.reduce((total, value) => total + (value - mean) ** 2, 0) / (values.length - 1)
  const half = tQuantile(values.length - 1) * Math.sqrt(variance / values.length)
  return { mean, low: mean - half, high: mean + half }
}

/** Percentile bootstrap over problems (each problem's value already averaged over seeds): the 2.5% and 97.5% points. */
export function bootstrapInterval(values: readonly number[], seed: number, resamples = 2000): Interval {
  const random = createRandom(deriveSeed('ludic.game24-bootstrap', seed))
  const mean = values.reduce((total, value) => total + value, 0) / values.length
  const means = Array.from({ length: resamples }, () => {
    let total = 0
    for (let index = 0; index < values.length; index++) total += values[random.nextInt(values.length)]!
    return total / values.length
  }).sort((a, b) => a - b)
  return { mean, low: means[Math.floor(0.025 * resamples)]!, high: means[Math.min(resamples - 1, Math.ceil(0.975 * resamples) - 1)]! }
}
