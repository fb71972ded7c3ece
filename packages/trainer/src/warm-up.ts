import { parseArgument } from '@ludic/core'
import { z } from 'zod'
import { createSftTrainer, type SftStepMetrics, type SftTrainerConfig } from './sft-trainer.js'
import type { TrainerRunOptions } from './skeleton.js'

const warmUpSettingsSchema = z.object({
  /** Supervised updates to take. */
  steps: z.number().int().min(0),
  /** AdamW's learning rate (the optimizer's other settings at their defaults). */
  learningRate: z.number().positive(),
})

/**
 * `warmUp`'s config: an SFT trainer's (`createSftTrainer`), its optimizer AdamW at `learningRate`, the updates to take,
 * and `run`'s `onStep`, `progress` (the Node entry's) and `signal`.
 */
export type WarmUpConfig = Omit<SftTrainerConfig, 'optimizer'> &
  z.input<typeof warmUpSettingsSchema> &
  Pick<TrainerRunOptions<SftStepMetrics>, 'onStep' | 'progress' | 'signal'>

export interface WarmUpResult {
  /** The last update's NLL (undefined when no update was taken). */
  nll: number | undefined
  /** Seconds taken, the trainer's making included. */
  seconds: number
  /** Every update's metrics. */
  history: SftStepMetrics[]
}

/**
 * The warm-up of the self-play recipes (`npm start`, the playground): `steps` supervised updates on `examples` (random
 * legal play, so a model made from scratch moves legally), AdamW at `learningRate`, the examples' order seeded by
 * `seed`; the trainer is disposed after (the model keeps its weights).
 */
export async function warmUp(config: WarmUpConfig): Promise<WarmUpResult> {
  const started = performance.now()
  const { steps, learningRate, onStep, progress, signal, ...sftConfig } = config
  parseArgument(warmUpSettingsSchema, { steps, learningRate }, 'config')
  const sft = createSftTrainer({ ...sftConfig, optimizer: { learningRate } })
  try {
    const history = await sft.run({
      steps,
      ...(onStep === undefined ? {} : { onStep }),
      ...(progress === undefined ? {} : { progress }),
      ...(signal === undefined ? {} : { signal }),
    })
    return { nll: history.at(-1)?.loss, seconds: (performance.now() - started) / 1000, history }
  } finally {
    sft.dispose()
  }
}
