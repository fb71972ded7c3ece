import { createModel } from '@ludic/model'
import { initTensors, type InitTensorsOptions } from '@ludic/tensors'
import type { StepMetrics } from '@ludic/trainer'
import { z } from 'zod'
import { numberCell, ratioCell, type BenchCell, type BenchReport } from '../bench-report.js'
import { defineBenchSuite, startClock, type BenchContext } from '../bench-suite.js'
import { modelKuhnPolicy } from '../evaluation/kuhn-evaluation.js'
import { describeMachine } from '../machine.js'
import { gameChatTemplate, kuhnExamples, kuhnTokenizer, selfPlay, selfPlayKuhnOptions, terseGameText, warmUp } from '../selfplay/game-selfplay.js'
import { kuhnExploitability } from '@ludic/games'

export const collectionOptionsSchema = z.strictObject({
  /** Self-play steps per mode. Default 100. */
  steps: z.number().int().positive().max(100_000).default(100),
  /** Exact exploitability every k steps (for the time to the target). Default 5. */
  evaluateEvery: z.number().int().positive().default(5),
  /** Exploitability whose first reach is the time to target. Default 0.1. */
  target: z.number().positive().default(0.1),
  /** Collection modes, run one after the other: `sync` (collect, then train) and `async` (a worker thread collects while training). Default both. */
  modes: z
    .array(z.enum(['sync', 'async']))
    .min(1)
    .default(['sync', 'async']),
  /** Episodes per step. Default 128. */
  episodesPerStep: z.number().int().positive().max(100_000).default(128),
  /** Warm-up updates on random legal play. Default 40. */
  sftSteps: z.number().int().min(0).max(100_000).default(40),
  /** β of the KL to the warmed-up model. Default 0.2. */
  klCoefficient: z.number().min(0).default(0.2),
  /** Self-play learning rate. Default 5e-4. */
  learningRate: z.number().positive().max(1).default(5e-4),
  /** Training reward of an invalid move. Default −3. */
  invalidPenalty: z.number().max(0).default(-3),
  /** Ids of the byte-level BPE. Default 320. */
  vocabSize: z.number().int().min(257).max(65_536).default(320),
  seed: z.number().int().default(0),
  /** The backend of the main thread (and of the rollout worker). Default `wasm`. */
  backend: z.string().default('wasm'),
})
export type CollectionOptions = z.input<typeof collectionOptionsSchema>

interface ModeResult {
  mode: 'sync' | 'async'
  steps: number
  episodes: number
  trainingSeconds: number
  episodesPerSecond: number
  secondsPerStep: number
  meanWaitSeconds: number
  meanUpdateSeconds: number
  meanStaleness: number | undefined
  timeToTargetSeconds: number | undefined
  stepsToTarget: number | undefined
  exploitabilityBefore: number
  exploitabilityAfter: number
  wallSeconds: number
}

const mean = (history: readonly StepMetrics[], name: string): number | undefined =>
  history.some((record) => record[name] !== undefined) ? history.reduce((total, record) => total + (record[name] ?? 0), 0) / history.length : undefined

/**
 * `collection`: Kuhn Poker self-play of a tiny model from scratch with synchronous collection against asynchronous
 * collection (one rollout worker thread generating the next step's episodes while the main thread trains), same
 * settings and seed, one after the other in this process. Per mode: episodes per second of training (episodes ÷
 * Σ (wait for a batch + update)), seconds per step, and the training time until the exact exploitability first
 * reaches the target; the ratio is async / sync.
 */
export const collectionSuite = defineBenchSuite({
  name: 'collection',
  description: 'Kuhn Poker self-play: synchronous against asynchronous collection, episodes/s and time to a target exploitability.',
  optionsSchema: collectionOptionsSchema,
  async run(options, context: BenchContext): Promise<BenchReport> {
    const clock = startClock()
    const log = context.log ?? (() => {})
    const runtime = await initTensors({ backend: options.backend as InitTensorsOptions['backend'], verbose: false })
    const tokenizer = kuhnTokenizer(options.vocabSize)
    const decisionsMessages = (observation: string) => [{ role: 'user' as const, content: terseGameText('kuhn-poker-v1', { role: '', observation }) }]
    const results: ModeResult[] = []
    for (const [index, mode] of options.modes.entries()) {
      context.signal?.throwIfAborted()
      const started = performance.now()
      const model = createModel('tiny', { vocabSize: tokenizer.vocabSize, seed: options.seed })
      try {
        const exploitability = async () =>
          kuhnExploitability(await modelKuhnPolicy(model, tokenizer, gameChatTemplate, decisionsMessages, selfPlayKuhnOptions)).exploitability
        await warmUp(model, tokenizer, kuhnExamples(), { steps: options.sftSteps, batchSize: 24, learningRate: 2e-3, seed: options.seed })
        const before = await exploitability()
        const history = await selfPlay(model, tokenizer, ['kuhn-poker-v1'], {
          seed: options.seed,
          steps: options.steps,
          episodesPerStep: options.episodesPerStep,
          ppoEpochs: 2,
          miniBatchSize: 64,
          learningRate: options.learningRate,
          klCoefficient: options.klCoefficient,
          invalidPenalty: options.invalidPenalty,
          asyncWorkers: mode === 'async' ? 1 : 0,
          vocabSize: options.vocabSize,
          evaluate: async () => ({ exploitability: await exploitability() }),
          evaluateEvery: options.evaluateEvery,
          onStep: (metrics) => log(`[${mode}] step ${metrics.step}: ${((metrics.rolloutSeconds ?? 0) + (metrics.updateSeconds ?? 0)).toFixed(2)} s`),
          ...(context.signal === undefined ? {} : { signal: context.signal }),
        })
        const after = await exploitability()
        let elapsed = 0
        let timeToTarget: number | undefined
        let stepsToTarget: number | undefined
        for (const record of history) {
          elapsed += (record.rolloutSeconds ?? 0) + (record.updateSeconds ?? 0)
          const value = record['eval/exploitability']
          if (timeToTarget === undefined && value !== undefined && value <= options.target) {
            timeToTarget = elapsed
            stepsToTarget = record.step
          }
        }
        const episodes = history.reduce((total, record) => total + (record.episodes ?? 0), 0)
        results.push({
          mode,
          steps: history.length,
          episodes,
          trainingSeconds: elapsed,
          episodesPerSecond: episodes / Math.max(elapsed, 1e-9),
          secondsPerStep: elapsed / Math.max(1, history.length),
          meanWaitSeconds: mean(history, 'rolloutSeconds') ?? 0,
          meanUpdateSeconds: mean(history, 'updateSeconds') ?? 0,
          meanStaleness: mean(history, 'staleness'),
          timeToTargetSeconds: timeToTarget,
          stepsToTarget,
          exploitabilityBefore: before,
          exploitabilityAfter: after,
          wallSeconds: (performance.now() - started) / 1000,
        })
      } finally {
        model.dispose()
      }
      context.onProgress?.(index + 1, options.modes.length, mode)
    }
    const sync = results.find((result) => result.mode === 'sync')
    const syncMissing = sync === undefined ? 'sync mode not run' : undefined
    const rows: BenchCell[][] = results.map((result) => [
      result.mode,
      numberCell(result.episodesPerSecond, 1),
      result === sync ? 1 : ratioCell(result.episodesPerSecond, sync?.episodesPerSecond, syncMissing),
      numberCell(result.secondsPerStep, 3),
      numberCell(result.meanWaitSeconds, 3),
      numberCell(result.meanUpdateSeconds, 3),
      numberCell(result.meanStaleness, 2),
      numberCell(result.timeToTargetSeconds, 1) ?? `not reached in ${result.steps} steps`,
      result.stepsToTarget ?? null,
      numberCell(result.exploitabilityBefore, 4),
      numberCell(result.exploitabilityAfter, 4),
    ])
    return {
      suite: 'collection',
      title: 'Collection: synchronous against asynchronous self-play (Kuhn Poker)',
      startedAt: clock.startedAt,
      durationSeconds: clock.seconds(),
      machine: describeMachine(runtime.backend),
      peers: {
        'synchronous collection':
          sync === undefined ? { available: false, reason: 'the sync mode was not run' } : { available: true, reason: 'the baseline of the ratio, same run' },
      },
      tables: [
        {
          title: `Kuhn Poker self-play, ${options.steps} steps of ${options.episodesPerStep} episodes, seed ${options.seed}, ${runtime.backend}`,
          columns: [
            'mode',
            'episodes/s',
            'episodes/s vs sync',
            's/step',
            'wait s/step',
            'update s/step',
            'staleness',
            `time to exploitability ≤ ${options.target} (s)`,
            'steps to target',
            'exploitability before',
            'exploitability after',
          ],
          rows,
          notes: [
            'Episodes/s of training: episodes ÷ Σ (time waiting for a batch + update time), evaluations excluded. The modes run one after the other in one process with the same settings and seed.',
          ],
        },
      ],
      chart: {
        $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
        title: { text: 'Collection: episodes per second of training', subtitle: 'Kuhn Poker self-play, same settings and seed' },
        background: 'white',
        width: 320,
        height: { step: 30 },
        data: { values: results.map((result) => ({ mode: result.mode, value: result.episodesPerSecond })) },
        mark: { type: 'bar', color: '#4c78a8' },
        encoding: { y: { field: 'mode', type: 'nominal', title: null }, x: { field: 'value', type: 'quantitative', title: 'episodes/s' } },
      },
      raw: { options, results },
    }
  },
})
