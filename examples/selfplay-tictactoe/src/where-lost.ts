/**
 * Where a trained policy's win chance against the random player goes, from a run's checkpoint: the exact evaluation
 * (`lostByConfidence`) by seat, by kind of decision (could win at once, must block, other) and by the probability the
 * policy gives the best moves there, and the decisions that lose the most. A loss at decisions whose best moves get
 * < 1 % is a wrong move held near probability 1 — the README's "Moves held at probability ≈ 1".
 *
 *   npx tsx src/where-lost.ts --backend tensorflow --run-directory runs/<timestamp> --step 600
 */
import { InvalidArgumentError, parseArgument } from '@ludic/core'
import { createModel, listCheckpoints, loadTrainingCheckpoint } from '@ludic/model'
import { runExampleMain } from '@ludic/report'
import { initTensors } from '@ludic/tensors'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { z } from 'zod'
import { bestMassBins, lostByConfidence, modelMoveProbabilities, type LostByConfidence } from './exact-play.js'
import { attentionHeadsOverrides, boardKey, runModelShapeSchema, trainTicTacToeTokenizer } from './tictactoe-setup.js'

export const whereLostOptionsSchema = z.strictObject({
  /** A run directory of `src/main.ts` (its `model.json` and `checkpoint-<step>` directories). */
  runDirectory: z.string().min(1),
  /** The checkpoint's step. Default: the latest. */
  step: z.number().int().min(0).optional(),
  /** Decisions listed per seat, the most lost first. Default 8. */
  top: z.number().int().min(0).max(100).default(8),
  /** The TensorFlow.js backend (`initTensors`: `auto` tries the native ones, then WebAssembly; `LUDIC_BACKEND` overrides). */
  backend: z.enum(['auto', 'tensorflow', 'wasm', 'cpu']).default('auto'),
  /** Where each line goes. Default `console.log`. */
  log: z.custom<(line: string) => void>((value) => typeof value === 'function').default(() => console.log),
})
export type WhereLostOptions = z.input<typeof whereLostOptionsSchema>

export async function whereLost(options: WhereLostOptions): Promise<ReturnType<typeof lostByConfidence> & { step: number }> {
  const parsed = parseArgument(whereLostOptionsSchema, options, 'options')
  const checkpoints = await listCheckpoints(parsed.runDirectory)
  const checkpoint = parsed.step === undefined ? checkpoints.at(-1) : checkpoints.find((entry) => entry.step === parsed.step)
  if (checkpoint === undefined) {
    throw new InvalidArgumentError({
      argument: parsed.step === undefined ? 'options.runDirectory' : 'options.step',
      value: parsed.step ?? parsed.runDirectory,
      message: `has no checkpoint (the run's: ${checkpoints.map((entry) => entry.step).join(', ') || 'none'})`,
    })
  }
  const shape = parseArgument(runModelShapeSchema, JSON.parse(await readFile(join(parsed.runDirectory, 'model.json'), 'utf8')), 'model.json')
  await initTensors({ backend: parsed.backend })
  const tokenizer = trainTicTacToeTokenizer(shape.vocabSize)
  const model = createModel(shape.modelSize, { vocabSize: tokenizer.vocabSize, seed: 0, ...attentionHeadsOverrides(shape.modelSize, shape.attentionHeads) })
  try {
    await loadTrainingCheckpoint(checkpoint.path, { parameters: model.parameters() })
    const result = lostByConfidence((await modelMoveProbabilities(model, tokenizer)).sampled, parsed.top)
    const points = (value: number) => (100 * value).toFixed(2)
    const bounds = bestMassBins.map((bound, index) => `[${bound}, ${bestMassBins[index + 1] ?? 1}${index + 1 < bestMassBins.length ? ')' : ']'}`).join(' ')
    parsed.log(
      `checkpoint ${checkpoint.step}: exactly ${(100 * result.play.winRate).toFixed(1)} % against random (as O ${(100 * result.play.asO.win).toFixed(1)} %, as X ${(100 * result.play.asX.win).toFixed(1)} %)`,
    )
    for (const [mark, seat] of [
      ['O', result.asO],
      ['X', result.asX],
    ] as [string, LostByConfidence][]) {
      const total = Object.values(seat.bins)
        .flat()
        .reduce((sum, value) => sum + value, 0)
      parsed.log(`as ${mark}: ${points(total)} points of win chance lost; by the best moves' probability ${bounds}:`)
      for (const [category, bins] of Object.entries(seat.bins)) parsed.log(`  ${category}: ${bins.map(points).join(' ')}`)
      for (const decision of seat.worst) {
        const moves = decision.cells
          .map((cell, index) => `${cell}: ${decision.probabilities[index]!.toFixed(3)} → ${decision.chances[index]!.toFixed(2)}`)
          .join(', ')
        parsed.log(
          `  ${boardKey(decision.board)} ${decision.category}, reached ${(100 * decision.reach).toFixed(2)} %, lost ${points(decision.lost)} (best moves ${decision.bestMass.toFixed(3)}; cell: probability → win chance: ${moves})`,
        )
      }
    }
    return { ...result, step: checkpoint.step }
  } finally {
    model.dispose()
  }
}

runExampleMain(import.meta.url, whereLost)
