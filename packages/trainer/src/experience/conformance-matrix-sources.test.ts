import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { applyLora, CausalLanguageModel, createLocalPolicy } from '@ludic/model'
import { serveOpenAICompatible } from '@ludic/rollout'
import { describe, expect, it } from 'vitest'
import { createDisaggregatedRolloutSource } from '../disaggregated-rollout.js'
import { createLocalLoraAdapters } from '../local-lora-adapters.js'
import { createRlTrainer, type RlTrainerHooks } from '../rl-trainer.js'
import { configFor, estimators, expectRunsOrRefusedForANeed, losses, oneStep } from '../test/conformance-matrix.js'
import { createPickEnvironment, createTestModel, tokenizer, useBackendAndDirectory } from '../test/support.js'

// The conformance matrix's other sources: asynchronous workers and disaggregated servers (test/conformance-matrix.ts
// says what the matrix is; the synchronous source is in conformance-matrix.test.ts).
const temporaryDirectory = useBackendAndDirectory('ludic-matrix-sources-')
const setupModule = fileURLToPath(new URL('../test/async-setup.ts', import.meta.url))

describe('conformance matrix: estimators × policy losses × sources × LoRA/full', () => {
  for (const fineTuning of ['full', 'lora'] as const) {
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
