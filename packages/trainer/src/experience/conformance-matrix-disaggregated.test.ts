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

// The conformance matrix's disaggregated servers (test/conformance-matrix.ts says what the matrix is; the other sources
// are in conformance-matrix.test.ts and conformance-matrix-async.test.ts).
const temporaryDirectory = useBackendAndDirectory('ludic-matrix-disaggregated-')
const _setupModule = fileURLToPath(new URL('../test/async-setup.ts', import.meta.url))

describe('conformance matrix: estimators × policy losses × sources × LoRA/full', () => {
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
