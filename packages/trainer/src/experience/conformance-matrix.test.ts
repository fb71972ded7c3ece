import { applyLora } from '@ludic/model'
import { describe, expect, it } from 'vitest'
import { createRlTrainer } from '../rl-trainer.js'
import { configFor, estimators, expectRunsOrRefusedForANeed, losses, oneStep } from '../test/conformance-matrix.js'
import { createPickEnvironment, createTestModel, useBackendAndDirectory } from '../test/support.js'

// The conformance matrix's synchronous source (test/conformance-matrix.ts says what the matrix is; the other sources
// are in conformance-matrix-async.test.ts and conformance-matrix-disaggregated.test.ts).
useBackendAndDirectory('ludic-matrix-')

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
  }
})
