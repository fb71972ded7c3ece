import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { advantageEstimators } from '@ludic/advantages'
import { applyLora, CausalLanguageModel, createLocalPolicy } from '@ludic/model'
import { policyLosses } from '@ludic/objectives'
import { serveOpenAICompatible } from '@ludic/rollout'
import { describe, expect, it } from 'vitest'
import { createDisaggregatedRolloutSource } from '../disaggregated-rollout.js'
import { createLocalLoraAdapters } from '../local-lora-adapters.js'
import type { RlTrainerConfig } from '../rl-config.js'
import { createRlTrainer, type RlTrainerHooks } from '../rl-trainer.js'
import { createPickEnvironment, createTestModel, tokenizer, useBackendAndDirectory } from '../test/support.js'

// Issue 27's conformance matrix: every registered estimator × every registered policy loss × the rollout sources
// (synchronous, asynchronous workers, disaggregated servers) × LoRA and full fine-tuning. Each combination either runs
// a step with finite metrics or is refused when the trainer is built, with a message naming what is missing; none
// fails after a rollout. An estimator that needs a critic gets one; the games give state keys.
const temporaryDirectory = useBackendAndDirectory('ludic-matrix-')
const setupModule = fileURLToPath(new URL('../test/async-setup.ts', import.meta.url))

const estimators = advantageEstimators.names()
/** Each loss with the options it cannot do without. */
const losses = policyLosses.names().map((name) => ({ name, options: name === 'truncated-ppo' ? { generationBudget: 2 } : undefined }))

/** The outcome of building a trainer and taking one step: refused (with its message) or run (with its metrics). */
async function oneStep(build: () => ReturnType<typeof createRlTrainer>): Promise<{ refused: string } | { metrics: Record<string, number> }> {
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

function expectRunsOrRefusedForANeed(outcome: Awaited<ReturnType<typeof oneStep>>, label: string): void {
  if ('refused' in outcome) {
    // Only a need no stage of this source provides may refuse a combination.
    expect(outcome.refused, label).toMatch(/config\.advantage.*needs /)
    return
  }
  for (const [name, value] of Object.entries(outcome.metrics)) expect(Number.isFinite(value), `${label}: ${name}`).toBe(true)
}

const configFor = (model: CausalLanguageModel, estimator: string, loss: (typeof losses)[number]): RlTrainerConfig => {
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

describe('conformance matrix: estimators × policy losses × sources × LoRA/full', () => {
  for (const fineTuning of ['full', 'lora'] as const) {
    it(`synchronous source, ${fineTuning} fine-tuning: every estimator with every policy loss`, { timeout: 600_000 }, async () => {
      for (const estimator of estimators) {
        for (const loss of losses) {
          const model = createTestModel(3)
          if (fineTuning === 'lora') applyLora(model, { rank: 2 })
          const outcome = await oneStep(() =>
            createRlTrainer({ ...configFor(model, estimator, loss), environments: [() => createPickEnvironment(['player0', 'player1'], { stateKeys: true })] }),
          )
          expectRunsOrRefusedForANeed(outcome, `${estimator} × ${loss.name} × sync × ${fineTuning}`)
          // The synchronous source provides every need: nothing is refused.
          expect('metrics' in outcome, `${estimator} × ${loss.name}: ${'refused' in outcome ? outcome.refused : ''}`).toBe(true)
          model.dispose()
        }
      }
    })

    it(`asynchronous workers, ${fineTuning} fine-tuning: every estimator`, { timeout: 600_000 }, async () => {
      for (const estimator of estimators) {
        const model = createTestModel(4)
        if (fineTuning === 'lora') applyLora(model, { rank: 2 })
        const outcome = await oneStep(() =>
          createRlTrainer({
            ...configFor(model, estimator, losses[0]!),
            asyncRollout: { setupModule, setupData: { roles: ['player0', 'player1'], stateKeys: true }, backend: 'wasm' },
          }),
        )
        expectRunsOrRefusedForANeed(outcome, `${estimator} × async × ${fineTuning}`)
        if ('refused' in outcome) expect(estimator).toBe('remax') // its greedy baselines: workers do not play them yet
        model.dispose()
      }
    })
  }

  it('disaggregated servers (LoRA adapters published to them): every estimator', { timeout: 600_000 }, async () => {
    const base = createTestModel(5)
    for (const [index, estimator] of estimators.entries()) {
      // A server of its own per trainer: each publishes its adapters as step-<n>.
      const directory = join(temporaryDirectory(), `adapters-${index}`)
      await mkdir(directory, { recursive: true })
      const serverModel = new CausalLanguageModel(base.config, base.parameters())
      const local = createLocalLoraAdapters(serverModel, createLocalPolicy({ model: serverModel, tokenizer, maxBatch: 16 }), { roots: [directory] })
      const server = await serveOpenAICompatible(local.base, { modelId: 'base', tokenizer, lora: { loader: local.loader } })
      const model = new CausalLanguageModel(base.config, base.parameters())
      const adapters = applyLora(model, { rank: 2 })
      const hooks: RlTrainerHooks = {
        rolloutSource: (context) => createDisaggregatedRolloutSource(context, adapters, { endpoints: [server.url], adapterDirectory: directory }),
      }
      const outcome = await oneStep(() =>
        createRlTrainer(
          { ...configFor(model, estimator, losses[0]!), environments: [() => createPickEnvironment(['player0', 'player1'], { stateKeys: true })] },
          hooks,
        ),
      )
      expectRunsOrRefusedForANeed(outcome, `${estimator} × disaggregated × lora`)
      if ('refused' in outcome) expect(estimator).toBe('remax')
      await server.close()
      local.dispose()
      serverModel.dispose()
      model.dispose()
    }
    base.dispose()
  })
})
