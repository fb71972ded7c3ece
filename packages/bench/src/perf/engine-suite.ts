import { createRandom, deriveSeed, type EnvironmentV1, type PolicyV1 } from '@ludic/core'
import { createGame } from '@ludic/games'
import { createLocalPolicy, createModel, generate, GenerationEngine, type CausalLanguageModel, type EngineStats, type GenerationRow } from '@ludic/model'
import { collect, serveOpenAICompatible } from '@ludic/rollout'
import { initTensors, type InitTensorsOptions } from '@ludic/tensors'
import type { Tokenizer } from '@ludic/tokenizer'
import { z } from 'zod'
import { numberCell, type BenchCell, type BenchReport } from '../bench-report.js'
import { defineBenchSuite, startClock, type BenchContext } from '../bench-suite.js'
import { negotiationExamples, negotiationGame, negotiationOptions, negotiationPrompt, negotiationTokenizer } from '../disaggregated/negotiation-workload.js'
import { describeMachine } from '../machine.js'
import { gameChatTemplate, gameOptionsFor, randomPlayExamples, tersePrompt, trainGamesTokenizer, warmUp } from '../selfplay/game-selfplay.js'

const presetSchema = z.enum(['tiny', 'small'])

export const engineOptionsSchema = z.strictObject({
  /** What to measure: multi-turn self-play collection, GRPO-shaped sampling, large batches. Default: all three. */
  parts: z
    .array(z.enum(['selfplay', 'grpo', 'batch', 'server']))
    .min(1)
    .default(['selfplay', 'grpo', 'batch', 'server']),
  /** Self-play games. Default: TicTacToe and Simple Negotiation (4 actions). */
  games: z
    .array(z.enum(['tictactoe-v0', 'simple-negotiation-v1']))
    .min(1)
    .default(['tictactoe-v0', 'simple-negotiation-v1']),
  /** Model presets of the self-play part. Default: tiny and small. */
  presets: z.array(presetSchema).min(1).default(['tiny', 'small']),
  /** Games a collection (one self-play step). Default: 128. */
  episodes: z.number().int().positive().max(4096).default(128),
  /** Collections per mode and cell, alternating between the modes; the median is reported. Default: 3. */
  repeats: z.number().int().positive().max(50).default(3),
  /** Supervised warm-up steps on random legal play before measuring (so that the model plays legal moves). Default: 30. */
  sftSteps: z.number().int().min(0).max(10_000).default(30),
  /** Most tokens a move. Default: 8 (TicTacToe), 16 (negotiation). */
  maxTokens: z.number().int().positive().max(256).optional(),
  /** GRPO part: group size, prompts, prompt length, new tokens. Defaults: 8, 4, 256, 64. */
  groupSize: z.number().int().positive().max(64).default(8),
  groups: z.number().int().positive().max(64).default(4),
  promptTokens: z.number().int().positive().max(2048).default(256),
  newTokens: z.number().int().positive().max(1024).default(64),
  /** Batch part (`small` preset): completions of `batchTokens` tokens at these batch sizes. Default: 32, 64, 128 of 32. */
  batchSizes: z.array(z.number().int().positive().max(1024)).min(1).default([32, 64, 128]),
  batchTokens: z.number().int().positive().max(1024).default(32),
  /** Server part (tiny preset): short requests (`shortTokens` each) from `clients` clients, and one in `longEvery` asking for `longTokens`. Defaults: 60, 16, 4, 10, 1024. */
  shortRequests: z.number().int().positive().max(10_000).default(60),
  shortTokens: z.number().int().positive().max(1024).default(16),
  clients: z.number().int().positive().max(256).default(4),
  longEvery: z.number().int().min(2).max(1000).default(10),
  longTokens: z.number().int().positive().max(1900).default(1024),
  /** The engine's `prefill` (where prompt tokens are computed). Default: the engine's (`'host'`). */
  prefill: z.enum(['host', 'backend']).default('host'),
  /** The engine's `products` (where the weight products run). Default: the engine's (`'host'`). */
  products: z.enum(['host', 'backend']).default('host'),
  /** The engine's `prefillChunkTokens`. Default: the engine's (256). */
  prefillChunkTokens: z.number().int().min(1).max(8192).optional(),
  /** The engine's `threads` (the host's products and each step's attention rows shared with worker threads). Default: the engine's (1). */
  threads: z.number().int().min(1).max(64).default(1),
  /** The engine's `pageTokens` (positions a page of keys and values holds). Default: the engine's (32). */
  pageTokens: z.number().int().min(4).max(1024).optional(),
  seed: z.number().int().default(0),
  /** Default: `wasm`. */
  backend: z.string().default('wasm'),
})
export type EngineBenchOptions = z.input<typeof engineOptionsSchema>
type Options = z.output<typeof engineOptionsSchema>

/** The engine settings the options give (where and how much prompt is computed per iteration). */
const engineSettings = (options: Options) => ({
  prefill: options.prefill,
  products: options.products,
  threads: options.threads,
  ...(options.prefillChunkTokens === undefined ? {} : { prefillChunkTokens: options.prefillChunkTokens }),
  ...(options.pageTokens === undefined ? {} : { pageTokens: options.pageTokens }),
})

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

interface SelfPlayCell {
  game: string
  preset: string
  batchSeconds: number
  engineSeconds: number
  batchEpisodesPerSecond: number
  engineEpisodesPerSecond: number
  turns: number
  generatedTokens: number
  promptTokens: number
  reusedPromptTokens: number
  sameTrajectories: boolean
}

/** A game's environments, tokenizer, prompt and warm-up examples, as the bench's self-play trains it. */
function selfPlayGame(
  game: string,
  seed: number,
): { environment: () => EnvironmentV1; tokenizer: Tokenizer; prompt: typeof tersePrompt; examples: { prompt: string; response: string }[]; maxTokens: number } {
  if (game === negotiationGame) {
    const workload = { turns: 4, warmupGames: 64, vocabSize: 320, invalidPenalty: -3, seed }
    return {
      environment: () => createGame(negotiationGame, negotiationOptions(workload)),
      tokenizer: negotiationTokenizer(workload),
      prompt: (view) => negotiationPrompt(view),
      examples: negotiationExamples(workload),
      maxTokens: 16,
    }
  }
  const examples = randomPlayExamples([game], 200, 400, seed)
  return {
    environment: () => createGame(game, gameOptionsFor(game, { invalidPenalty: -3 })),
    tokenizer: trainGamesTokenizer(examples, 320),
    prompt: tersePrompt,
    examples: examples[game]!,
    maxTokens: 8,
  }
}

/** Plays `episodes` games with one policy in every seat; seconds and the trajectories' turns and tokens. */
async function collectOnce(
  policy: PolicyV1,
  environment: () => EnvironmentV1,
  prompt: typeof tersePrompt,
  options: Options,
  maxTokens: number,
  engine: boolean,
) {
  const started = performance.now()
  const result = await collect({
    environments: [environment],
    policies: policy,
    seeds: Array.from({ length: options.episodes }, (_, index) => options.seed * 1_000_003 + index),
    concurrency: options.episodes,
    prompt,
    generation: { maxTokens, temperature: 1 },
    stepping: engine ? 'per-trajectory' : 'batched',
  })
  const seconds = (performance.now() - started) / 1000
  const turns = result.trajectories.reduce((total, trajectory) => total + trajectory.turns.length, 0)
  const tokens = result.trajectories.reduce(
    (total, trajectory) => total + trajectory.turns.reduce((sum, turn) => sum + (turn.completion?.tokenIds.length ?? 0), 0),
    0,
  )
  const signature = JSON.stringify(result.trajectories.map((trajectory) => trajectory.turns.map((turn) => turn.action)))
  return { seconds, turns, tokens, signature }
}

async function measureSelfPlay(options: Options, log: (line: string) => void, signal: AbortSignal | undefined): Promise<SelfPlayCell[]> {
  const cells: SelfPlayCell[] = []
  for (const preset of options.presets) {
    for (const game of options.games) {
      signal?.throwIfAborted()
      const setup = selfPlayGame(game, options.seed)
      const maxTokens = options.maxTokens ?? setup.maxTokens
      const model = createModel(preset, { vocabSize: setup.tokenizer.vocabSize, seed: options.seed })
      try {
        await warmUp(model, setup.tokenizer, setup.examples, { steps: options.sftSteps, batchSize: 32, learningRate: 3e-3, seed: options.seed })
        const common = { model, tokenizer: setup.tokenizer, chatTemplate: gameChatTemplate }
        const batch = createLocalPolicy({ ...common, maxBatch: options.episodes })
        const times = { batch: [] as number[], engine: [] as number[] }
        let last: { turns: number; tokens: number; batchSignature: string; engineSignature: string; stats: EngineStats } | undefined
        for (let repeat = 0; repeat < options.repeats; repeat++) {
          const a = await collectOnce(batch, setup.environment, setup.prompt, options, maxTokens, false)
          // A new engine each collection: its prefix cache starts empty, as after a training step's new weights (an engine
          // kept between collections of the same weights and seeds would find the last collection's conversations).
          const generationEngine = new GenerationEngine(model, {
            maxSequenceLength: 256,
            maxRows: options.episodes,
            tokenizer: setup.tokenizer,
            ...engineSettings(options),
          })
          try {
            const engine = createLocalPolicy({ ...common, engine: generationEngine })
            const b = await collectOnce(engine, setup.environment, setup.prompt, options, maxTokens, true)
            times.batch.push(a.seconds)
            times.engine.push(b.seconds)
            last = { turns: b.turns, tokens: b.tokens, batchSignature: a.signature, engineSignature: b.signature, stats: generationEngine.stats() }
            log(`[selfplay] ${game} ${preset} #${repeat + 1}: batch ${a.seconds.toFixed(2)} s, engine ${b.seconds.toFixed(2)} s`)
          } finally {
            generationEngine.dispose()
          }
        }
        const { stats } = last!
        const batchSeconds = median(times.batch)
        const engineSeconds = median(times.engine)
        cells.push({
          game,
          preset,
          batchSeconds,
          engineSeconds,
          batchEpisodesPerSecond: options.episodes / batchSeconds,
          engineEpisodesPerSecond: options.episodes / engineSeconds,
          turns: last!.turns,
          generatedTokens: last!.tokens,
          promptTokens: stats.promptTokens,
          reusedPromptTokens: stats.reusedPromptTokens,
          sameTrajectories: last!.batchSignature === last!.engineSignature,
        })
      } finally {
        model.dispose()
      }
    }
  }
  return cells
}

function rows(prompts: readonly Int32Array[], newTokens: number, seed: number): GenerationRow[] {
  return prompts.map((promptIds, index) => ({
    promptIds,
    sampling: { temperature: 1, topK: 0, topP: 1, minP: 0 },
    maxNewTokens: newTokens,
    stopTokenIds: new Set<number>(),
    stopStrings: [],
    random: createRandom(deriveSeed(seed, index)),
  }))
}

interface SamplingCell {
  shape: string
  rows: number
  batchSeconds: number
  engineSeconds: number
  batchPrefillTokens: number
  enginePrefillTokens: number
}

/** The same rows through today's `generate` (one batch, run to its end) and through the engine; medians of `repeats`. */
async function compareSampling(
  model: CausalLanguageModel,
  prompts: Int32Array<ArrayBuffer>[],
  newTokens: number,
  options: Options,
  shape: string,
  log: (line: string) => void,
): Promise<SamplingCell> {
  const times = { batch: [] as number[], engine: [] as number[] }
  let enginePrefill = 0
  for (let repeat = 0; repeat < options.repeats; repeat++) {
    let started = performance.now()
    await generate(model, { inputIds: prompts, maxNewTokens: newTokens, temperature: 1, stopTokenIds: [], seed: options.seed })
    times.batch.push((performance.now() - started) / 1000)
    const engine = new GenerationEngine(model, {
      maxRows: prompts.length,
      maxSequenceLength: Math.max(...prompts.map((ids) => ids.length)) + newTokens,
      ...engineSettings(options),
    })
    try {
      started = performance.now()
      await Promise.all(rows(prompts, newTokens, options.seed).map((row) => engine.submit(row)))
      times.engine.push((performance.now() - started) / 1000)
      const stats = engine.stats()
      enginePrefill = stats.computedTokens - stats.generatedTokens
    } finally {
      engine.dispose()
    }
    log(`[${shape}] #${repeat + 1}: generate ${times.batch.at(-1)!.toFixed(2)} s, engine ${times.engine.at(-1)!.toFixed(2)} s`)
  }
  return {
    shape,
    rows: prompts.length,
    batchSeconds: median(times.batch),
    engineSeconds: median(times.engine),
    batchPrefillTokens: prompts.reduce((total, ids) => total + ids.length, 0),
    enginePrefillTokens: enginePrefill,
  }
}

interface ServerCell {
  mode: 'batch' | 'engine'
  /** p50 and p95 of the short requests' latencies, alone and beside the long ones, in seconds. */
  aloneP50: number
  aloneP95: number
  mixedP50: number
  mixedP95: number
  longRequests: number
  /** Whether the long requests were still running when the last short one ended (so every short one ran beside them). */
  longsOutlasted: boolean
  errors: number
}

const percentile = (values: readonly number[], fraction: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)]!
}

/**
 * The served tiny model under `clients` clients sending short requests, alone and then with one request in
 * `longEvery` asking for `longTokens` tokens (sent beside the short ones, each by its own client); the short ones'
 * latencies. No stop token, so every request runs to its `max_tokens`.
 */
async function measureServer(options: Options, log: (line: string) => void): Promise<ServerCell[]> {
  const examples = randomPlayExamples(['tictactoe-v0'], 50, 100, options.seed)
  const tokenizer = trainGamesTokenizer(examples, 320)
  const model = createModel('tiny', { vocabSize: tokenizer.vocabSize, seed: options.seed })
  const cells: ServerCell[] = []
  try {
    for (const mode of ['batch', 'engine'] as const) {
      const policy = createLocalPolicy({
        model,
        tokenizer,
        chatTemplate: gameChatTemplate,
        stopTokenIds: [],
        maxBatch: 16,
        ...(mode === 'engine' ? { engine: { maxRows: 16, ...engineSettings(options) } } : {}),
      })
      const server = await serveOpenAICompatible(policy, {
        modelId: 'tiny',
        tokenizer,
        batching: mode === 'engine' ? { windowMs: 0, maxBatchSize: 1, maxConcurrentBatches: 1_000_000 } : { windowMs: 5, maxBatchSize: 16 },
      })
      let errors = 0
      const ask = async (maxTokens: number, index: number): Promise<number> => {
        const started = performance.now()
        const response = await fetch(`${server.url}/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'tiny', prompt: `tictactoe X\n${index % 9}`, max_tokens: maxTokens, temperature: 1, seed: index }),
        })
        if (!response.ok) {
          errors++
          if (errors === 1) log(`[server] ${mode}: HTTP ${response.status}: ${(await response.clone().text()).slice(0, 300)}`)
        }
        await response.arrayBuffer()
        return (performance.now() - started) / 1000
      }
      const shorts = async (): Promise<number[]> => {
        const latencies: number[] = []
        let next = 0
        await Promise.all(
          Array.from({ length: options.clients }, async () => {
            while (next < options.shortRequests) latencies.push(await ask(options.shortTokens, next++))
          }),
        )
        return latencies
      }
      try {
        await ask(options.shortTokens, 0) // weights to the host
        const alone = await shorts()
        const longCount = Math.max(1, Math.round(options.shortRequests / (options.longEvery - 1)))
        let longsDone = 0
        const longs = Array.from({ length: longCount }, async (_, index) => {
          await ask(options.longTokens, 10_000 + index)
          longsDone++
        })
        await new Promise((resolve) => setTimeout(resolve, 100)) // the long requests are running
        const mixed = await shorts()
        const longsRunning = longsDone < longCount
        await Promise.all(longs)
        log(
          `[server] ${mode}: short p95 ${percentile(alone, 0.95).toFixed(3)} s alone, ${percentile(mixed, 0.95).toFixed(3)} s with ${longCount} long requests${longsRunning ? ' (still running after the last short one)' : ' (they ended before the short ones)'}`,
        )
        cells.push({
          mode,
          aloneP50: percentile(alone, 0.5),
          aloneP95: percentile(alone, 0.95),
          mixedP50: percentile(mixed, 0.5),
          mixedP95: percentile(mixed, 0.95),
          longRequests: longCount,
          longsOutlasted: longsRunning,
          errors,
        })
      } finally {
        await server.close()
      }
    }
  } finally {
    model.dispose()
  }
  return cells
}

/**
 * `engine`: the generation engine (`GenerationEngine`: continuous batching, shared prefixes) against today's batch
 * generation, side by side in one process, same model, weights and seeds: multi-turn self-play collection (128 games,
 * TicTacToe and Simple Negotiation, tiny and small presets; the engine's policy stepped per trajectory), GRPO-shaped
 * sampling (G samples of a prompt), and large batches on the small preset.
 */
export const engineSuite = defineBenchSuite({
  name: 'engine',
  description: 'The generation engine against batch generation: self-play episodes/s, GRPO prefill work, large batches.',
  optionsSchema: engineOptionsSchema,
  async run(options, context: BenchContext): Promise<BenchReport> {
    const clock = startClock()
    const log = context.log ?? (() => {})
    const runtime = await initTensors({ backend: options.backend as InitTensorsOptions['backend'], verbose: false })
    const tables: BenchReport['tables'] = []
    const raw: Record<string, unknown> = { options }
    if (options.parts.includes('selfplay')) {
      const cells = await measureSelfPlay(options, log, context.signal)
      raw.selfplay = cells
      tables.push({
        title: `Self-play collection: ${options.episodes} games a step, one policy in every seat, T = 1, median of ${options.repeats}, ${runtime.backend}`,
        columns: ['game', 'preset', 'batch episodes/s', 'engine episodes/s', 'engine ÷ batch', 'turns', 'tokens', 'prompt tokens reused', 'same moves'],
        rows: cells.map((cell): BenchCell[] => [
          cell.game,
          cell.preset,
          numberCell(cell.batchEpisodesPerSecond, 1),
          numberCell(cell.engineEpisodesPerSecond, 1),
          numberCell(cell.engineEpisodesPerSecond / cell.batchEpisodesPerSecond, 2),
          cell.turns,
          cell.generatedTokens,
          numberCell(cell.reusedPromptTokens / Math.max(1, cell.promptTokens), 3),
          cell.sameTrajectories ? 'yes' : 'no',
        ]),
        notes: [
          "batch: today's createLocalPolicy (each turn's requests of every game in flight as one left-padded batch run to its longest) with batched stepping; engine: createLocalPolicy({ engine }) stepped per trajectory (each game's request joins the running rows as it comes), a new engine each collection (its prefix cache empty, as after a training step; 'prompt tokens reused' is one collection's). Same warmed-up weights and seeds; 'same moves' compares the two modes' actions (the engine's logits differ from the batch path's by float32 rounding, so a sampled move may differ).",
        ],
      })
    }
    const samplingCells: SamplingCell[] = []
    if (options.parts.includes('grpo')) {
      for (const preset of options.presets) {
        const model = createModel(preset, { vocabSize: 320, seed: options.seed })
        try {
          const random = createRandom(options.seed)
          const prompts = Array.from({ length: options.groups }, () => Int32Array.from({ length: options.promptTokens }, () => random.nextInt(320)))
          const grouped = prompts.flatMap((ids) => Array.from({ length: options.groupSize }, () => ids))
          samplingCells.push(
            await compareSampling(
              model,
              grouped,
              options.newTokens,
              options,
              `grpo ${preset}: ${options.groups} prompts × G ${options.groupSize}, ${options.promptTokens} → +${options.newTokens}`,
              log,
            ),
          )
        } finally {
          model.dispose()
        }
      }
    }
    if (options.parts.includes('batch')) {
      const model = createModel('small', { vocabSize: 320, seed: options.seed })
      try {
        for (const size of options.batchSizes) {
          const random = createRandom(options.seed + size)
          const prompts = Array.from({ length: size }, () => Int32Array.from({ length: 16 }, () => random.nextInt(320)))
          samplingCells.push(await compareSampling(model, prompts, options.batchTokens, options, `batch small: ${size} × (16 → +${options.batchTokens})`, log))
        }
      } finally {
        model.dispose()
      }
    }
    if (samplingCells.length > 0) {
      raw.sampling = samplingCells
      tables.push({
        title: `Sampling: today's generate against the engine, T = 1, no stop token, median of ${options.repeats}, ${runtime.backend}`,
        columns: [
          'shape',
          'rows',
          'generate s',
          'engine s',
          'engine ÷ generate (time)',
          'prompt tokens computed: generate',
          'engine',
          'engine ÷ generate (prefill work)',
        ],
        rows: samplingCells.map((cell): BenchCell[] => [
          cell.shape,
          cell.rows,
          numberCell(cell.batchSeconds, 3),
          numberCell(cell.engineSeconds, 3),
          numberCell(cell.engineSeconds / cell.batchSeconds, 2),
          cell.batchPrefillTokens,
          cell.enginePrefillTokens,
          numberCell(cell.enginePrefillTokens / cell.batchPrefillTokens, 3),
        ]),
        notes: [
          "generate: one call with every row (decodePath 'auto'), run to the end; engine: every row submitted at once to a fresh GenerationEngine (weights copied inside the timing, as generate's host path does on its first call). Prompt tokens computed by the engine: its computed tokens less the fed sampled tokens (a group's shared prompt is computed once and copied).",
        ],
      })
    }
    if (options.parts.includes('server')) {
      const cells = await measureServer(options, log)
      raw.server = cells
      tables.push({
        title: `Server under a mix: ${options.clients} clients, ${options.shortRequests} requests of ${options.shortTokens} tokens, then the same beside long requests of ${options.longTokens} tokens (one in ${options.longEvery}, all sent 100 ms before the short ones), tiny preset, ${runtime.backend}`,
        columns: [
          'mode',
          'short p50 alone (s)',
          'short p95 alone (s)',
          'short p50 mixed (s)',
          'short p95 mixed (s)',
          'p95 mixed ÷ alone',
          'long requests',
          'longs outlasted the shorts',
          'errors',
        ],
        rows: cells.map((cell): BenchCell[] => [
          cell.mode,
          numberCell(cell.aloneP50, 3),
          numberCell(cell.aloneP95, 3),
          numberCell(cell.mixedP50, 3),
          numberCell(cell.mixedP95, 3),
          numberCell(cell.mixedP95 / cell.aloneP95, 2),
          cell.longRequests,
          cell.longsOutlasted ? 'yes' : 'no',
          cell.errors,
        ]),
        notes: [
          "batch: serveOpenAICompatible over today's createLocalPolicy (5 ms batching window, 16 a batch, one batch at a time); engine: over createLocalPolicy({ engine: { maxRows: 16 } }), each request straight to the engine (as `ludic serve --engine`). No stop token: every request runs to its max_tokens.",
        ],
      })
    }
    return {
      suite: 'engine',
      title: 'Generation engine: continuous batching and shared prefixes against batch generation',
      startedAt: clock.startedAt,
      durationSeconds: clock.seconds(),
      machine: describeMachine(runtime.backend),
      peers: { 'batch generation': { available: true, reason: "today's generate / createLocalPolicy, same run, same weights and seeds" } },
      tables,
      raw,
    }
  },
})
