import { advantageEstimators } from '@ludic/advantages'
import type { CausalLanguageModel } from '@ludic/model'
import { policyLosses } from '@ludic/objectives'
import { expect } from 'vitest'
import type { RlTrainerConfig } from '../rl-config.js'
import type { createRlTrainer } from '../rl-trainer.js'
import { tokenizer } from './support.js'

// Issue 27's conformance matrix (experience/conformance-matrix*.test.ts, two files so that two workers share it):
// every registered estimator × every registered policy loss × the rollout sources (synchronous, asynchronous workers,
// disaggregated servers) × LoRA and full fine-tuning. Each combination either runs a step with finite metrics or is
// refused when the trainer is built, with a message naming what is missing; none fails after a rollout. An estimator
// that needs a critic gets one; the games give state keys.

export const estimators = advantageEstimators.names()

/** Each loss with the options it cannot do without. */
export const losses = policyLosses.names().map((name) => ({ name, options: name === 'truncated-ppo' ? { generationBudget: 2 } : undefined }))

/** The outcome of building a trainer and taking one step: refused (with its message) or run (with its metrics). */
export async function oneStep(build: () => ReturnType<typeof createRlTrainer>): Promise<{ refused: string } | { metrics: Record<string, number> }> {
  let trainer: ReturnType<typeof createRlTrainer>
  try {
    trainer = build()
  } catch (error) {
    return { refused: (error as Error).message }
  }
  try {
    return { metrics: await trainer.step() }
  } finally {
    await trainer.close()
    trainer.dispose()
  }
}

export function expectRunsOrRefusedForANeed(outcome: Awaited<ReturnType<typeof oneStep>>, label: string): void {
  if ('refused' in outcome) {
    // Only a need no stage of this source provides may refuse a combination.
    expect(outcome.refused, label).toMatch(/config\.advantage.*needs /)
    return
  }
  for (const [name, value] of Object.entries(outcome.metrics)) expect(Number.isFinite(value), `${label}: ${name}`).toBe(true)
}

export const configFor = (model: CausalLanguageModel, estimator: string, loss: (typeof losses)[number]): RlTrainerConfig => {
  const advantage = advantageEstimators.create(estimator)
  return {
    model,
    tokenizer,
    advantage,
    policyLoss: policyLosses.create(loss.name, loss.options),
    ...((advantage.requires ?? []).includes('values') ? { critic: { model: 'separate' as const } } : {}),
    batch: { episodesPerStep: 2, groupSize: 2, maxTokens: 2, miniBatchSize: 8, ppoEpochs: 1 },
    seed: 1,
  }
}
