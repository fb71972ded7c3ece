/**
 * How well the model can represent good play at all, apart from reinforcement learning: supervised training from
 * scratch on the best reply to the random player at every position (`bestRepliesToRandom`: 4,520 positions, each
 * best move once, 8,130 examples), then games against the random player. With the preset's 4 heads the fit stalls
 * (greedy ≈ 72–75 % after 1,500–6,000 updates, also with the 4-layer `small` model); with the width split into 32
 * heads the same parameters fit it (the README's "Why 32 heads" has the figures).
 *
 *   npx tsx src/fit-probe.ts --backend tensorflow --attention-heads 32 --steps 3000
 */
import { parseArgument } from '@ludic/core'
import { createRandomPolicy } from '@ludic/games'
import { createLocalPolicy, createModel } from '@ludic/model'
import { runExampleMain } from '@ludic/report'
import { initTensors } from '@ludic/tensors'
import { createSftTrainer } from '@ludic/trainer'
import { z } from 'zod'
import { attentionHeadsOverrides, bestRepliesToRandom, chatTemplate, moveText, playAgainst, promptOfBoard, trainTicTacToeTokenizer } from './tictactoe-setup.js'

export const fitProbeOptionsSchema = z.strictObject({
  /** Supervised updates. Default 3,000. */
  steps: z.number().int().positive().default(3000),
  /** Examples per update. Default 64. */
  batchSize: z.number().int().positive().default(64),
  /** Peak learning rate (warm-up of 20 updates, then a cosine to a tenth). Default 1e-3. */
  learningRate: z.number().positive().default(1e-3),
  /** Attention heads (keys and values as many; the preset's width split among them). Default: the preset's. */
  attentionHeads: z.number().int().positive().optional(),
  /** `tiny` (d 128, 2 layers) or `small` (d 256, 4 layers). Default `tiny`. */
  modelSize: z.enum(['tiny', 'small']).default('tiny'),
  /** Games against the random player after every `evaluateEvery` updates, and after the last. Default 1,000. */
  evaluateEvery: z.number().int().positive().default(1000),
  /** Games of each evaluation, seats alternating, sampled (T = 1) and again greedy. Default 400. */
  evaluationEpisodes: z.number().int().positive().default(400),
  /** Seeds the model, the order of examples, sampling and the random player. Default 0. */
  seed: z.number().int().min(0).default(0),
  /** The TensorFlow.js backend (`initTensors`: `auto` tries the native ones, then WebAssembly; `LUDIC_BACKEND` overrides). */
  backend: z.enum(['auto', 'tensorflow', 'wasm', 'cpu']).default('auto'),
  /** Where each evaluation's line goes. Default `console.log`. */
  log: z.custom<(line: string) => void>((value) => typeof value === 'function').default(() => console.log),
})
export type FitProbeOptions = z.input<typeof fitProbeOptionsSchema>

export interface FitProbePoint {
  step: number
  /** The last update's token-mean NLL. */
  loss: number
  /** Against the random player, seats alternating: sampled at T = 1, and greedy. */
  sampledWinRate: number
  greedyWinRate: number
  greedyLossRate: number
}

export async function fitProbe(options: FitProbeOptions = {}): Promise<FitProbePoint[]> {
  const parsed = parseArgument(fitProbeOptionsSchema, options, 'options')
  const heads = attentionHeadsOverrides(parsed.modelSize, parsed.attentionHeads)
  await initTensors({ backend: parsed.backend })
  const tokenizer = trainTicTacToeTokenizer(300)
  const model = createModel(parsed.modelSize, {
    vocabSize: tokenizer.vocabSize,
    seed: parsed.seed,
    ...heads,
  })
  try {
    const examples = bestRepliesToRandom().flatMap(({ board, moves }) => moves.map((cell) => ({ prompt: promptOfBoard(board), response: moveText(cell) })))
    const schedule = { type: 'warmup-cosine', warmupSteps: Math.min(20, parsed.steps), totalSteps: parsed.steps, minRatio: 0.1 } as const
    const learner = createLocalPolicy({ model, tokenizer, chatTemplate, maxBatch: 256, seed: parsed.seed, id: 'learner' })
    const trainer = createSftTrainer({
      model,
      tokenizer,
      examples,
      batchSize: parsed.batchSize,
      optimizer: { learningRate: parsed.learningRate },
      schedule,
      seed: parsed.seed,
    })
    try {
      const points: FitProbePoint[] = []
      for (let step = 0; step < parsed.steps; ) {
        step = Math.min(parsed.steps, step + parsed.evaluateEvery)
        const metrics = await trainer.run({ steps: step, progress: false })
        const play = (temperature: number) =>
          playAgainst(learner, createRandomPolicy({ seed: parsed.seed + 5 }), parsed.evaluationEpisodes, parsed.seed + 5, temperature)
        const [sampled, greedy] = [await play(1), await play(0)]
        const point = { step, loss: metrics.at(-1)!.loss, sampledWinRate: sampled.winRate, greedyWinRate: greedy.winRate, greedyLossRate: greedy.lossRate }
        points.push(point)
        parsed.log(
          `step ${step}: loss ${point.loss.toFixed(3)}, vs random sampled ${(100 * point.sampledWinRate).toFixed(1)} %, greedy ${(100 * point.greedyWinRate).toFixed(1)} % (lost ${(100 * point.greedyLossRate).toFixed(1)} %)`,
        )
      }
      return points
    } finally {
      trainer.dispose()
    }
  } finally {
    model.dispose()
  }
}

runExampleMain(import.meta.url, fitProbe)
