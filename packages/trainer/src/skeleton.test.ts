import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { createFlowOfReasoningTrainer, type FlowOfReasoningStepMetrics } from './flow-of-reasoning-trainer.js'
import { createSftTrainer } from './sft-trainer.js'
import { planEnvironment, plainChatTemplate } from './test/plan-environment.js'
import { createTestModel, tokenizer, useBackendAndDirectory } from './test/support.js'

const directory = useBackendAndDirectory('ludic-skeleton-')

/** One step of three actions; `a` is rewarded (R = 4, else 1). */
const oneStepTask = {
  environments: [planEnvironment({ length: 1, reward: (plan) => (plan === 'a' ? 4 : 1) })],
  chatTemplate: plainChatTemplate,
  solved: 4,
}

describe('the trainer skeleton', () => {
  it("gives Flow of Reasoning run's signal, onStep and progress bar: stopped after the step that aborts, each step told, a bar with its label", async () => {
    const model = createTestModel(11)
    const trainer = createFlowOfReasoningTrainer({ model, tokenizer, ...oneStepTask, seeds: [0], steps: 5, samplesPerProblem: 2 })
    const controller = new AbortController()
    const told: FlowOfReasoningStepMetrics[] = []
    const writes: string[] = []
    const taken = await trainer.run({
      signal: controller.signal,
      onStep: (metrics) => {
        told.push(metrics)
        if (metrics.step === 2) controller.abort()
      },
      progress: { isTTY: false, write: (text: string) => writes.push(text) },
    })
    expect(taken.map((metrics) => metrics.step)).toEqual([1, 2])
    expect(told).toEqual(taken)
    expect(trainer.stepCount).toBe(2)
    expect(writes.join('')).toContain('flow-of-reasoning')
    // The rest of the planned total, on the next call.
    expect((await trainer.run()).map((metrics) => metrics.step)).toEqual([3, 4, 5])
    trainer.dispose()
    model.dispose()
  })

  it('refuses a fresh run into a directory that holds another run, and a resume without a run directory, before anything is made', async () => {
    const model = createTestModel(12)
    const examples = [{ prompt: 'x', response: 'y' }]
    const runDirectory = join(directory(), 'held')
    await mkdir(join(runDirectory, 'checkpoint-2'), { recursive: true })
    await writeFile(join(runDirectory, 'checkpoint-2', 'state.json'), '{}')
    expect(() => createSftTrainer({ model, tokenizer, examples, runDirectory })).toThrow(/config\.runDirectory.*holds another run/)
    expect(() => createFlowOfReasoningTrainer({ model, tokenizer, ...oneStepTask, seeds: [0], resume: true })).toThrow(
      /config\.runDirectory.*is needed with config\.resume/,
    )
    const resumed = createSftTrainer({ model, tokenizer, examples, runDirectory: join(directory(), 'empty'), resume: true })
    expect(await resumed.resume()).toBeUndefined() // nothing to resume: a fresh start
    resumed.dispose()
    model.dispose()
  })
})
