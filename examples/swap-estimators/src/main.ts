/**
 * Swap advantage estimators in one line each. One small batch (2 prompts × 3 sampled responses, the
 * outcome reward on each response's last token) goes through GRPO, RLOO and REINFORCE++; then a custom
 * estimator is registered and created by name, as a trainer config would name it.
 *
 *   npm start
 */
import { pathToFileURL } from 'node:url'
import type { AdvantageBatch, AdvantageEstimatorV1 } from '@ludic/core'
import { advantageEstimators, createGrpo, createReinforcePlusPlus, createRloo, parseAdvantageBatch, registerAdvantageEstimator } from '@ludic/advantages'

export interface SwapOptions {
  log?: (line: string) => void
}

/** Per estimator name, each sample's per-token advantages. */
export type SwapResult = Record<string, Float32Array[]>

/** A custom estimator: each sample's reward minus the mean reward of the whole batch, times `scale`. */
export function createBatchMeanBaseline(options: { scale?: number } = {}): AdvantageEstimatorV1 {
  const scale = options.scale ?? 1
  return {
    specificationVersion: 'v1',
    name: 'batch-mean-baseline',
    estimate(input) {
      const batch = parseAdvantageBatch(input) // the same checks as the built-in estimators
      const rewards = batch.tokenRewards.map((tokens) => tokens.reduce((sum, reward) => sum + reward, 0))
      const mean = rewards.reduce((sum, reward) => sum + reward, 0) / rewards.length
      const advantages = batch.tokenRewards.map((tokens, sample) => new Float32Array(tokens.length).fill(scale * (rewards[sample]! - mean)))
      return { advantages, returns: advantages.map((row) => row.slice()) }
    },
  }
}

/** Builds a ragged batch: one Float32Array of token rewards per response, the outcome on its last token. */
function outcomeBatch(groupIds: string[], lengths: number[], outcomes: number[]): AdvantageBatch {
  const tokenRewards = lengths.map((length, sample) => {
    const rewards = new Float32Array(length)
    rewards[length - 1] = outcomes[sample]!
    return rewards
  })
  return { tokenRewards, groupIds }
}

export function main(options: SwapOptions = {}): SwapResult {
  const log = options.log ?? console.log
  const batch = outcomeBatch(['prompt-a', 'prompt-a', 'prompt-a', 'prompt-b', 'prompt-b', 'prompt-b'], [3, 5, 2, 4, 4, 6], [1, 0, 1, 0, 0, 1])
  log(`6 responses to 2 prompts, outcome rewards ${batch.tokenRewards.map((rewards) => rewards.at(-1)).join(', ')}`)
  const result: SwapResult = {}
  const show = (estimator: AdvantageEstimatorV1) => {
    const { advantages } = estimator.estimate(batch)
    result[estimator.name] = advantages
    log(`${estimator.name.padEnd(20)} ${advantages.map((row) => format(row[row.length - 1]!)).join(' ')}   (advantage on each last token)`)
  }

  show(createGrpo()) // (r − group mean) / (group std + ε)
  show(createRloo()) // r − mean of the other responses to the same prompt
  show(createReinforcePlusPlus()) // discounted return-to-go, whitened over the batch's tokens

  registerAdvantageEstimator('batch-mean-baseline', createBatchMeanBaseline)
  show(advantageEstimators.create('batch-mean-baseline', { scale: 2 }))
  return result
}

function format(value: number): string {
  return `${value >= 0 ? '+' : '−'}${Math.abs(value).toFixed(3)}`
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) main()
