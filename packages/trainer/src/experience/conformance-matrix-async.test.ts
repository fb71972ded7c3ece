import { fileURLToPath } from 'node:url'
import { applyLora } from '@ludic/model'
import { describe, expect, it } from 'vitest'
import { createRlTrainer } from '../rl-trainer.js'
import { configFor, estimators, expectRunsOrRefusedForANeed, losses, oneStep } from '../test/conformance-matrix.js'
import { createTestModel, useBackendAndDirectory } from '../test/support.js'

// The conformance matrix's asynchronous workers (test/conformance-matrix.ts says what the matrix is; the other sources
// are in conformance-matrix.test.ts and conformance-matrix-disaggregated.test.ts: three files, so two workers share them).
useBackendAndDirectory('ludic-matrix-async-')
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
})
