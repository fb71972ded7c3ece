import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { CausalLanguageModel } from '@ludic/model'
import { expect } from 'vitest'
import type { StepMetrics } from '../metrics-log.js'
import type { TrainerControls } from '../skeleton.js'
import { createTestModel } from './support.js'

/** A trainer as the resume check drives it: the skeleton's controls and `run({ steps })` to a total. */
type Resumable = TrainerControls<StepMetrics> & { run(options: { steps: number }): Promise<unknown> }

export interface ResumeCheck<Trainer extends Resumable> {
  /** Makes the trainer on `model`, writing into `runDirectory`, with `checkpointEvery: 2` and `resume` as given. */
  make(model: CausalLanguageModel, runDirectory: string, resume: boolean): Trainer
  /** The test model's seed (the uninterrupted and the killed run start from it). */
  seed: number
  /** A temporary directory of the test file. */
  directory: string
  /** N: the total both runs reach. Default 5. */
  steps?: number
  /** Steps the killed run takes before it dies (after its checkpoint at step 2, so step 3 is lost). Default 3. */
  killedAfter?: number
  /** Metrics measured in wall time, left out of the comparison. */
  timed?: readonly string[]
  /** Weights beside the model's that the trainer learns (Flow of Reasoning's log Z), read for the comparison. */
  ownWeights?: (trainer: Trainer) => unknown
}

const weightsOf = (model: CausalLanguageModel) => new Map([...model.parameters()].map(([name, variable]) => [name, Array.from(variable.dataSync())]))

/**
 * The acceptance check of every trainer's checkpoints: N steps uninterrupted; then a run killed after `killedAfter`
 * steps (its trainer disposed, its model dropped), resumed by a new trainer from the same config with `resume: true` on
 * a model of other weights (everything must come from the checkpoint), and run to N. The weights, every step's
 * metrics (but the timed ones) and `metrics.jsonl`'s steps must be equal, bit for bit.
 */
export async function expectResumeBitForBit<Trainer extends Resumable>(check: ResumeCheck<Trainer>): Promise<void> {
  const { make, seed, directory, steps = 5, killedAfter = 3, timed = [], ownWeights } = check
  const plain = (history: readonly StepMetrics[]) =>
    history.map((metrics) => Object.fromEntries(Object.entries(metrics).filter(([name]) => !timed.includes(name))))

  const straightModel = createTestModel(seed)
  const straight = make(straightModel, join(directory, 'straight'), false)
  await straight.run({ steps })
  expect(straight.stepCount).toBe(steps)

  const killedModel = createTestModel(seed)
  const killed = make(killedModel, join(directory, 'resumed'), false)
  for (let step = 0; step < killedAfter; step++) await killed.step()
  killed.dispose()
  killedModel.dispose()

  const resumedModel = createTestModel(seed + 1000) // other weights: the checkpoint gives them
  const resumed = make(resumedModel, join(directory, 'resumed'), true)
  await resumed.run({ steps })
  expect(resumed.stepCount).toBe(steps)
  const expected = weightsOf(straightModel)
  for (const [name, values] of weightsOf(resumedModel)) expect(values, name).toEqual(expected.get(name))
  if (ownWeights !== undefined) expect(ownWeights(resumed)).toEqual(ownWeights(straight))
  expect(plain(resumed.history)).toEqual(plain(straight.history))
  const logged = (await readFile(join(directory, 'resumed', 'metrics.jsonl'), 'utf8'))
    .trim()
    .split('\n')
    .map((line) => (JSON.parse(line) as StepMetrics).step)
  expect(logged).toEqual(Array.from({ length: steps }, (_, index) => index + 1))
  for (const trainer of [straight, resumed]) trainer.dispose()
  straightModel.dispose()
  resumedModel.dispose()
}
