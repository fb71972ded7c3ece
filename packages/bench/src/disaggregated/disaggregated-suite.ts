import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import { createRae } from '@ludic/advantages'
import { InvalidArgumentError, LudicError } from '@ludic/core'
import { applyLora, createLocalPolicy, createModel, saveModel, type CausalLanguageModel, type LoraAdapters } from '@ludic/model'
import { createPolicyLoss } from '@ludic/objectives'
import { initTensors, type InitTensorsOptions } from '@ludic/tensors'
import type { Tokenizer } from '@ludic/tokenizer'
import { createDisaggregatedRolloutSource, createRlTrainer, type DisaggregatedRolloutSource, type StepMetrics } from '@ludic/trainer'
import * as tf from '@tensorflow/tfjs-core'
import { z } from 'zod'
import { numberCell, ratioCell, type BenchCell, type BenchReport } from '../bench-report.js'
import { defineBenchSuite, startClock, type BenchContext } from '../bench-suite.js'
import { backendThreadOptions, describeMachine, processCpuSeconds } from '../machine.js'
import { builtEntryPath } from '../perf/package-paths.js'
import { copyModel, gameChatTemplate, warmUp } from '../selfplay/game-selfplay.js'
import {
  evaluateNegotiation,
  negotiationExamples,
  negotiationPrompt,
  negotiationTokenizer,
  timedNegotiation,
  type EnvironmentClock,
  type NegotiationWorkload,
} from './negotiation-workload.js'
import { negotiationGame } from './negotiation-workload.js'
import type { ServerChildSettings } from './server-child.js'

export const disaggregatedOptionsSchema = z.strictObject({
  /** A smoke run that finishes in well under a minute (tiny settings; the figures mean nothing). Default false. */
  quick: z.boolean().default(false),
  /** RL steps per configuration. Default 30. */
  steps: z.number().int().positive().max(10_000).default(30),
  /** Games per step. Default 32. */
  episodesPerStep: z.number().int().positive().max(10_000).default(32),
  /** Actions per game. Default 4. */
  turns: z.number().int().min(2).max(50).default(4),
  /** The LoRA adapters' snapshot is evaluated every k steps (after the run, the same way for both). Default 2. */
  evaluateEvery: z.number().int().positive().default(2),
  /** Games against the random player per evaluation (a fixed held-out set of seeds). Default 128. */
  evaluationEpisodes: z.number().int().positive().max(100_000).default(128),
  /**
   * Mean reward against the random player (an invalid move is a loss, −1; no trade a draw, 0) whose first reach is the
   * time to target. Default −0.1 (the warmed-up model starts near −0.3, mostly from invalid moves).
   */
  target: z.number().min(-2).max(2).default(-0.1),
  /** Generation servers of configuration B (processes on loopback). Default 1. */
  servers: z.number().int().min(1).max(8).default(1),
  /** B's staleness bound (`createDisaggregatedRolloutSource`'s `maxStaleness`): batches played with adapters at most this many updates old. Default 1. */
  maxStaleness: z.number().int().min(0).max(8).default(1),
  /**
   * B plays its episodes in a collection thread (`createDisaggregatedRolloutSource`'s `setupModule`), so that they
   * step while the trainer computes an update; false: on the trainer's thread, between its mini-batches. Default true.
   */
  collectionThread: z.boolean().default(true),
  /**
   * The generation servers' batching window in ms (`serveOpenAICompatible`'s `batching.windowMs`): how long a request
   * waits for company. Longer windows re-form larger batches from the episodes' separate requests (less server time)
   * at the cost of that wait on every turn. Default 2.
   */
  serverBatchWindowMs: z.number().min(0).max(1000).default(2),
  /**
   * B's servers generate on a `GenerationEngine` (`createLocalPolicy({ engine })`, as `ludic serve --engine
   * --enable-lora`): each request joins the running decode as soon as its prompt is computed (no batching window:
   * `serverBatchWindowMs` does not apply), one adapter's requests decode together and adapters take turns
   * (`createLocalLoraAdapters`). Its rows: `concurrency`. Default false (the window's requests batched, run to their end).
   */
  engine: z.boolean().default(false),
  /**
   * Threads of each server process's backend: the native intra-op pool (`initTensors`' `nativeThreads.intraOp`;
   * `TF_NUM_INTRAOP_THREADS` wins where set) or WebAssembly's (`wasmThreads`, up to 8). Where the trainer and the
   * servers share the cores, fewer keep a generating server from stalling the trainer's multi-threaded kernels.
   * Default: the backend's (native: one a core; WebAssembly: 1).
   */
  serverThreads: z.number().int().min(1).max(256).optional(),
  /**
   * Threads of the trainer's backend (this process; A's and B's trainer alike): the native intra-op pool or
   * WebAssembly's, as `serverThreads`. With fewer threads than cores, A leaves capacity free for B's servers to use.
   * Default: the backend's (native: one a core; WebAssembly: 1).
   */
  trainerThreads: z.number().int().min(1).max(256).optional(),
  /**
   * B's partial rollouts (`createDisaggregatedRolloutSource`'s `partialRollouts`): each turn goes to the newest adapter
   * loaded when it is issued, its tokens carrying that version. Default false.
   */
  partialRollouts: z.boolean().default(false),
  /** Episodes in flight against the servers. Default: episodesPerStep. */
  concurrency: z.number().int().positive().max(100_000).optional(),
  /** Configurations to run, in this order: `sync` (A, the single-process loop) and `disaggregated` (B). Default both, A first. */
  configurations: z
    .array(z.enum(['sync', 'disaggregated']))
    .min(1)
    .default(['sync', 'disaggregated']),
  /** Supervised warm-up steps on random legal play (before either run; shared). Default 60. */
  sftSteps: z.number().int().min(0).max(100_000).default(60),
  /** Random games for the warm-up states and the tokenizer. Default 64. */
  warmupGames: z.number().int().positive().max(100_000).default(64),
  /** LoRA rank (q and v projections). Default 8. */
  loraRank: z.number().int().positive().max(256).default(8),
  /** Self-play learning rate of the adapters. Default 3e-3. */
  learningRate: z.number().positive().max(1).default(3e-3),
  /** PPO epochs per step. Default 2. */
  ppoEpochs: z.number().int().positive().max(64).default(2),
  /** Samples per gradient update. Default 64. */
  miniBatchSize: z.number().int().positive().max(100_000).default(64),
  /** Training reward of an invalid move. Default −1.5. */
  invalidPenalty: z.number().max(0).default(-1.5),
  /** Most tokens per move. Default 16. */
  maxTokens: z.number().int().positive().max(1024).default(16),
  vocabSize: z.number().int().min(257).max(65_536).default(384),
  seed: z.number().int().default(0),
  /** Backend of the trainer and of each server. Default `wasm`. */
  backend: z.string().default('wasm'),
})
export type DisaggregatedOptions = z.input<typeof disaggregatedOptionsSchema>
type Settings = z.output<typeof disaggregatedOptionsSchema>

/** Where one configuration's time went, in seconds. */
interface Breakdown {
  /** Generating (critical path in A; on the servers, overlapped, in B). */
  generation: number
  /** In `reset`/`step` of the games (on the trainer's thread; B with a collection thread: there, not measured, in generation). */
  environment: number | undefined
  /** Advantages, PPO epochs (with the old log-probs recomputed). */
  update: number
  /** B: the trainer waiting for a batch; A: 0 (it generates itself). */
  waiting: number
  /** B: copying each adapter's weights (on the trainer's path), writing and loading it on the servers (background). */
  publish: number
  push: number
  /** B: the servers' own time in `generate` (summed over servers), their calls and rows (`GET /stats`). */
  server:
    | {
        generateSeconds: number
        generateCalls: number
        generateRows: number
        /** With `engine`: the servers' decode steps and the tokens they generated (summed). */
        decodeSteps: number
        generatedTokens: number
        threads: number | undefined
        /** The servers' processes' CPU time during the run (every thread), summed over servers. */
        cpuSeconds: number
      }
    | undefined
  /** This process's CPU time during the run (every thread: the backend's pool, B's collection thread). */
  trainerCpuSeconds: number
}

interface ConfigurationResult {
  configuration: 'sync' | 'disaggregated'
  steps: number
  /** Training wall time, evaluations excluded (they run after the run on snapshots). */
  trainingSeconds: number
  tokens: number
  tokensPerSecond: number
  timeToTargetSeconds: number | undefined
  stepsToTarget: number | undefined
  evaluations: { step: number; seconds: number; meanReward: number; winRate: number; invalidRate: number }[]
  breakdown: Breakdown
  /** B: the trained tokens' staleness (steps behind the weights they train): each step's mean (`tokenStalenessMean`), averaged over the steps; A: 0. */
  tokenStalenessStepMean: number
  serverStartSeconds: number | undefined
}

const sum = (history: readonly StepMetrics[], name: string) => history.reduce((total, record) => total + (record[name] ?? 0), 0)

/** A running generation server: its URL and how to stop it. */
interface ServerProcess {
  url: string
  child: ChildProcess
}

function startServer(settings: ServerChildSettings, signal: AbortSignal | undefined): Promise<ServerProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [builtEntryPath('disaggregated-server'), JSON.stringify(settings)], { stdio: ['pipe', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    const timer = setTimeout(() => fail(new LudicError('a generation server did not start within 120 s')), 120_000)
    const fail = (error: Error) => {
      clearTimeout(timer)
      child.kill('SIGKILL')
      reject(error)
    }
    signal?.addEventListener('abort', () => fail(new LudicError('aborted')), { once: true })
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-4000)
    })
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk
      const line = stdout.split('\n').find((text) => text.startsWith('{"url"'))
      if (line === undefined) return
      clearTimeout(timer)
      resolve({ url: (JSON.parse(line) as { url: string }).url, child })
    })
    child.once('exit', (code) => fail(new LudicError(`a generation server exited (${code}) before listening: ${stderr.trim()}`)))
  })
}

async function stopServer(server: ServerProcess): Promise<void> {
  if (server.child.exitCode !== null) return
  const exited = new Promise<void>((resolve) => server.child.once('exit', () => resolve()))
  server.child.stdin?.end()
  server.child.kill('SIGTERM')
  await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))])
  if (server.child.exitCode === null) server.child.kill('SIGKILL')
}

/** The servers' generation figures (`GET /stats`, from `server-child`), summed; the first one's backend threads. */
async function serverGeneration(servers: readonly ServerProcess[]): Promise<NonNullable<Breakdown['server']>> {
  const total = { generateSeconds: 0, generateCalls: 0, generateRows: 0, decodeSteps: 0, generatedTokens: 0, cpuSeconds: 0 }
  let threads: number | undefined
  for (const server of servers) {
    const response = await fetch(new URL('/stats', server.url))
    const figures = (await response.json()) as Partial<typeof total> & { threads?: number }
    for (const key of Object.keys(total) as (keyof typeof total)[]) total[key] += figures[key] ?? 0
    threads ??= figures.threads
  }
  return { ...total, threads }
}

/** How well the servers batched: rows per `generate` call, or with the engine, rows (tokens) per decode step. */
function serverRows(server: Breakdown['server'], engine: boolean): number | undefined {
  if (server === undefined) return undefined
  return engine ? server.generatedTokens / Math.max(server.decodeSteps, 1) : server.generateRows / Math.max(server.generateCalls, 1)
}

/** The values of the adapters' parameters now (a snapshot to evaluate later). */
function snapshot(adapters: LoraAdapters): Map<string, Float32Array> {
  return new Map([...adapters.parameters()].map(([name, variable]) => [name, variable.dataSync() as Float32Array]))
}

function restore(adapters: LoraAdapters, values: ReadonlyMap<string, Float32Array>): void {
  for (const [name, variable] of adapters.parameters()) tf.tidy(() => variable.assign(tf.tensor(values.get(name)!, variable.shape)))
}

/**
 * One configuration from the warmed-up weights: LoRA adapters trained by self-play (RAE, PPO clip), the same seeds
 * and settings; snapshots of the adapters every `evaluateEvery` steps, evaluated after the run.
 */
async function runConfiguration(
  configuration: 'sync' | 'disaggregated',
  base: CausalLanguageModel,
  tokenizer: Tokenizer,
  baseDirectory: string,
  workDirectory: string,
  settings: Settings,
  workload: NegotiationWorkload,
  context: BenchContext,
): Promise<ConfigurationResult> {
  const log = context.log ?? (() => {})
  const model = copyModel(base, settings.seed)
  const adapters = applyLora(model, { rank: settings.loraRank, alpha: 2 * settings.loraRank, seed: settings.seed })
  const clock: EnvironmentClock = { seconds: 0 }
  const servers: ServerProcess[] = []
  let source: DisaggregatedRolloutSource | undefined
  let serverStartSeconds: number | undefined
  try {
    if (configuration === 'disaggregated') {
      const started = performance.now()
      const childSettings: ServerChildSettings = {
        modelDirectory: baseDirectory,
        adapterDirectory: join(workDirectory, 'adapters'),
        workload,
        backend: settings.backend,
        maxBatch: Math.max(settings.concurrency ?? settings.episodesPerStep, 1),
        batchWindowMs: settings.serverBatchWindowMs,
        seed: settings.seed,
        threads: settings.serverThreads,
        engine: settings.engine,
      }
      servers.push(...(await Promise.all(Array.from({ length: settings.servers }, () => startServer(childSettings, context.signal)))))
      serverStartSeconds = (performance.now() - started) / 1000
      log(`[disaggregated] ${servers.length} server(s) up in ${serverStartSeconds.toFixed(1)} s: ${servers.map((server) => server.url).join(', ')}`)
    }
    const trainer = createRlTrainer(
      {
        model,
        tokenizer,
        environments: [timedNegotiation(workload, clock)],
        prompt: negotiationPrompt,
        chatTemplate: gameChatTemplate,
        policyLoss: createPolicyLoss('ppo-clip', { clipLow: 0.2, clipHigh: 0.2 }),
        optimizer: { learningRate: settings.learningRate },
        batch: {
          episodesPerStep: settings.episodesPerStep,
          ppoEpochs: settings.ppoEpochs,
          miniBatchSize: settings.miniBatchSize,
          maxTokens: settings.maxTokens,
          concurrency: settings.concurrency ?? settings.episodesPerStep,
          maxGenerationBatch: 256,
        },
        advantage: createRae(),
        seed: settings.seed,
        notify: () => {},
      },
      configuration === 'sync'
        ? {}
        : {
            rolloutSource: (sourceContext) =>
              (source = createDisaggregatedRolloutSource(sourceContext, adapters, {
                endpoints: servers.map((server) => server.url),
                adapterDirectory: join(workDirectory, 'adapters'),
                maxStaleness: settings.maxStaleness,
                partialRollouts: settings.partialRollouts,
                ...(settings.concurrency === undefined ? {} : { concurrency: settings.concurrency }),
                ...(settings.collectionThread ? { setupModule: builtEntryPath('negotiation-rollout-setup'), setupData: workload } : {}),
              })),
          },
    )
    const snapshots: { step: number; seconds: number; values: Map<string, Float32Array> }[] = [{ step: 0, seconds: 0, values: snapshot(adapters) }]
    // CPU time over the training, as its wall time: the servers' (idle until now) and this process's.
    const serverCpuBefore = servers.length === 0 ? 0 : (await serverGeneration(servers)).cpuSeconds
    const cpuBefore = processCpuSeconds()
    const started = performance.now()
    const history = await trainer.run({
      steps: settings.steps,
      ...(context.signal === undefined ? {} : { signal: context.signal }),
      onStep: (metrics) => {
        const seconds = (performance.now() - started) / 1000
        if (metrics.step % settings.evaluateEvery === 0 || metrics.step === settings.steps)
          snapshots.push({ step: metrics.step, seconds, values: snapshot(adapters) })
        log(`[${configuration}] step ${metrics.step}: ${seconds.toFixed(1)} s, reward ${(metrics[`reward/${negotiationGame}/player0`] ?? 0).toFixed(2)}`)
      },
    })
    const trainingSeconds = (performance.now() - started) / 1000
    const trainerCpuSeconds = processCpuSeconds() - cpuBefore
    // The servers' figures as the run ends (the source closed: no batch is played ahead any more), before anything else.
    const serverTotals = servers.length === 0 ? undefined : await serverGeneration(servers)
    trainer.dispose()
    const server = serverTotals === undefined ? undefined : { ...serverTotals, cpuSeconds: serverTotals.cpuSeconds - serverCpuBefore }
    // Evaluations: every snapshot the same way, after the run (their time is in neither configuration's).
    const evaluations: ConfigurationResult['evaluations'] = []
    for (const taken of snapshots) {
      context.signal?.throwIfAborted()
      restore(adapters, taken.values)
      const learner = createLocalPolicy({ model, tokenizer, chatTemplate: gameChatTemplate, maxBatch: 128, seed: settings.seed, id: 'learner' })
      const figures = await evaluateNegotiation(learner, workload, settings.evaluationEpisodes, 1_000_003 + settings.seed, settings.maxTokens)
      evaluations.push({ step: taken.step, seconds: taken.seconds, meanReward: figures.meanReward, winRate: figures.winRate, invalidRate: figures.invalidRate })
      log(`[${configuration}] eval step ${taken.step}: mean reward ${figures.meanReward.toFixed(3)}, win ${figures.winRate.toFixed(2)}`)
    }
    const reached = evaluations.find((evaluation) => evaluation.meanReward >= settings.target)
    const stats = source?.stats
    const rollout = sum(history, 'rolloutSeconds')
    const breakdown: Breakdown =
      configuration === 'sync'
        ? {
            generation: rollout - clock.seconds,
            environment: clock.seconds,
            update: sum(history, 'updateSeconds'),
            waiting: 0,
            publish: 0,
            push: 0,
            server: undefined,
            trainerCpuSeconds,
          }
        : {
            generation: (stats?.collectSeconds ?? 0) - clock.seconds,
            environment: settings.collectionThread ? undefined : clock.seconds,
            update: sum(history, 'updateSeconds'),
            waiting: stats?.waitSeconds ?? rollout,
            publish: stats?.saveSeconds ?? 0,
            push: stats?.pushSeconds ?? 0,
            server,
            trainerCpuSeconds,
          }
    const tokens = countTokens(history)
    return {
      configuration,
      steps: history.length,
      trainingSeconds,
      tokens,
      tokensPerSecond: tokens / Math.max(trainingSeconds, 1e-9),
      timeToTargetSeconds: reached?.seconds,
      stepsToTarget: reached?.step,
      evaluations,
      breakdown,
      tokenStalenessStepMean: sum(history, 'tokenStalenessMean') / Math.max(history.length, 1),
      serverStartSeconds,
    }
  } finally {
    await Promise.all(servers.map(stopServer))
    adapters.remove()
    model.dispose()
  }
}

/**
 * What overlapping generation with the update can give B at most, from A's own figures, and how close B came.
 * Two bounds, the lower binding: the pipeline's (B's step is at least the longer of A's collection — generation and
 * environments — and the rest, each undisturbed: A / max(collection, A − collection)), and the machine's (doing A's
 * work, B would need at least A's CPU time over the cores: A / (CPU_A / cores); approximate, since B's work differs
 * from A's — `disaggregatedCapacityBound` is the same bound from B's own CPU time).
 */
export function overlapAccounting(
  sync: { trainingSeconds: number; generation: number; environment: number; cpuSeconds: number },
  disaggregated: { trainingSeconds: number; cpuSeconds: number },
  cores: number,
): {
  collection: number
  syncCoresBusy: number
  pipelineBound: number
  capacityBound: number
  bound: number
  speedup: number
  shareOfBound: number
  cpuRatio: number
  disaggregatedCoresBusy: number
  disaggregatedCapacityBound: number
} {
  const collection = sync.generation + sync.environment
  const pipelineBound = sync.trainingSeconds / Math.max(collection, sync.trainingSeconds - collection)
  const capacityBound = (cores * sync.trainingSeconds) / sync.cpuSeconds
  const bound = Math.min(pipelineBound, capacityBound)
  const speedup = sync.trainingSeconds / disaggregated.trainingSeconds
  return {
    collection,
    syncCoresBusy: sync.cpuSeconds / sync.trainingSeconds,
    pipelineBound,
    capacityBound,
    bound,
    speedup,
    shareOfBound: speedup / bound,
    cpuRatio: disaggregated.cpuSeconds / sync.cpuSeconds,
    disaggregatedCoresBusy: disaggregated.cpuSeconds / disaggregated.trainingSeconds,
    disaggregatedCapacityBound: (cores * sync.trainingSeconds) / disaggregated.cpuSeconds,
  }
}

/** Response tokens trained on, from the steps' metrics (samples × mean response length). */
function countTokens(history: readonly StepMetrics[]): number {
  return history.reduce((total, record) => total + (record.samples ?? 0) * (record.responseLength ?? 0), 0)
}

/** `--quick`: tiny settings for a smoke run. */
function quickSettings(settings: Settings): Settings {
  return {
    ...settings,
    steps: 2,
    episodesPerStep: 4,
    turns: 2,
    evaluateEvery: 1,
    evaluationEpisodes: 4,
    sftSteps: 2,
    warmupGames: 4,
    maxTokens: 8,
    vocabSize: 300,
  }
}

/**
 * `disaggregated`: RL on Simple Negotiation (multi-turn) with a tiny model and LoRA adapters, the synchronous
 * single-process loop (A: generate, then update, on one thread) against disaggregated rollouts (B: generation served
 * by `servers` processes on loopback, the adapter pushed through vLLM's runtime LoRA API after each update, episodes
 * stepping per trajectory, staleness ≤ 1). Same warmed-up weights, seeds and settings; adapter snapshots evaluated
 * after each run against the random player on a fixed set of seeds. Per configuration: time and steps to the target,
 * tokens/s, and where the time went.
 */
export const disaggregatedSuite = defineBenchSuite({
  name: 'disaggregated',
  description: 'Simple Negotiation RL with LoRA: the synchronous loop against disaggregated generation servers, time to a target reward.',
  optionsSchema: disaggregatedOptionsSchema,
  async run(options, context: BenchContext): Promise<BenchReport> {
    const clockStarted = startClock()
    const settings = options.quick ? quickSettings(options) : options
    if (settings.partialRollouts && !settings.configurations.includes('disaggregated'))
      throw new InvalidArgumentError({
        argument: 'options.partialRollouts',
        value: true,
        message: "is B's option: configurations must include 'disaggregated'",
      })
    const log = context.log ?? (() => {})
    const backend = settings.backend as InitTensorsOptions['backend']
    const threads = settings.trainerThreads
    if (threads !== undefined && !['wasm', 'tensorflow', 'tensorflow-gpu'].includes(settings.backend))
      throw new InvalidArgumentError({
        argument: 'options.trainerThreads',
        value: threads,
        message: `needs backend wasm or tensorflow (this is ${backend}, whose threads are not set)`,
      })
    if (threads !== undefined && backend === 'wasm' && threads > 8)
      throw new InvalidArgumentError({ argument: 'options.trainerThreads', value: threads, message: "is at most 8 on WebAssembly (the backend's thread pool)" })
    const runtime = await initTensors({ backend, verbose: false, ...backendThreadOptions(backend, threads) })
    // A backend started earlier in this process (or TF_NUM_INTRAOP_THREADS) keeps its threads: say so rather than run on them.
    if (threads !== undefined && runtime.threads !== threads) {
      throw new InvalidArgumentError({
        argument: 'options.trainerThreads',
        value: threads,
        message: `cannot be had: this process's ${runtime.backend} backend computes with ${runtime.threads} thread(s) (${backend === 'wasm' ? 'started earlier in this process, or threads unavailable here (no SharedArrayBuffer)' : 'started earlier in this process, or TF_NUM_INTRAOP_THREADS set'}); run the suite in a process of its own`,
      })
    }
    const workload: NegotiationWorkload = {
      turns: settings.turns,
      warmupGames: settings.warmupGames,
      vocabSize: settings.vocabSize,
      invalidPenalty: settings.invalidPenalty,
      seed: settings.seed,
    }
    const workDirectory = await mkdtemp(join(tmpdir(), 'ludic-bench-disaggregated-'))
    const results: ConfigurationResult[] = []
    const tokenizer = negotiationTokenizer(workload)
    const base = createModel('tiny', { vocabSize: tokenizer.vocabSize, seed: settings.seed })
    try {
      const nll = await warmUp(base, tokenizer, negotiationExamples(workload), {
        steps: settings.sftSteps,
        batchSize: 32,
        learningRate: 2e-3,
        seed: settings.seed,
      })
      log(`warm-up: ${settings.sftSteps} steps, nll ${nll?.toFixed(3) ?? '—'}`)
      const baseDirectory = join(workDirectory, 'base')
      await saveModel(base, baseDirectory)
      for (const [index, configuration] of settings.configurations.entries()) {
        context.signal?.throwIfAborted()
        results.push(await runConfiguration(configuration, base, tokenizer, baseDirectory, join(workDirectory, configuration), settings, workload, context))
        context.onProgress?.(index + 1, settings.configurations.length, configuration)
      }
    } finally {
      base.dispose()
      await rm(workDirectory, { recursive: true, force: true })
    }
    const sync = results.find((result) => result.configuration === 'sync')
    const missing = sync === undefined ? 'the sync configuration was not run' : undefined
    const rows: BenchCell[][] = results.map((result) => [
      result.configuration === 'sync'
        ? 'A: synchronous, one process'
        : `B: disaggregated, ${settings.servers} server(s)${settings.engine ? ' on the generation engine' : ''}${settings.partialRollouts ? ', partial rollouts' : ''}, episodes on ${settings.collectionThread ? 'a collection thread' : "the trainer's thread"}`,
      numberCell(result.timeToTargetSeconds, 1) ?? `not reached in ${result.steps} steps`,
      result.stepsToTarget ?? null,
      result === sync
        ? 1
        : sync?.timeToTargetSeconds === undefined || result.timeToTargetSeconds === undefined
          ? 'target not reached by both'
          : ratioCell(sync.timeToTargetSeconds, result.timeToTargetSeconds, missing),
      numberCell(result.trainingSeconds, 1),
      result === sync ? 1 : ratioCell(sync?.trainingSeconds, result.trainingSeconds, missing),
      numberCell(result.tokensPerSecond, 1),
      numberCell(result.breakdown.generation, 1),
      numberCell(result.breakdown.environment, 2),
      numberCell(result.breakdown.update, 1),
      numberCell(result.breakdown.waiting, 1),
      numberCell(result.breakdown.publish, 2),
      numberCell(result.breakdown.push, 1),
      numberCell(result.breakdown.server?.generateSeconds, 1),
      numberCell(serverRows(result.breakdown.server, settings.engine), 1),
      numberCell(result.breakdown.trainerCpuSeconds, 1),
      numberCell(result.breakdown.server?.cpuSeconds, 1),
      numberCell(result.tokenStalenessStepMean, 2),
      numberCell(result.evaluations.at(-1)?.meanReward, 3),
    ])
    const cores = availableParallelism()
    const accountingRows: BenchCell[][] =
      sync === undefined
        ? []
        : results
            .filter((result) => result !== sync)
            .map((result) => {
              const cpuSeconds = result.breakdown.trainerCpuSeconds + (result.breakdown.server?.cpuSeconds ?? 0)
              const figures = overlapAccounting(
                {
                  trainingSeconds: sync.trainingSeconds,
                  generation: sync.breakdown.generation,
                  environment: sync.breakdown.environment ?? 0,
                  cpuSeconds: sync.breakdown.trainerCpuSeconds,
                },
                { trainingSeconds: result.trainingSeconds, cpuSeconds },
                cores,
              )
              return [
                numberCell(sync.trainingSeconds, 1),
                numberCell(figures.collection, 1),
                numberCell(sync.breakdown.trainerCpuSeconds, 1),
                numberCell(figures.syncCoresBusy, 2),
                numberCell(figures.pipelineBound, 2),
                numberCell(figures.capacityBound, 2),
                numberCell(figures.bound, 2),
                numberCell(result.trainingSeconds, 1),
                numberCell(figures.speedup, 2),
                numberCell(figures.shareOfBound, 2),
                numberCell(cpuSeconds, 1),
                numberCell(figures.cpuRatio, 2),
                numberCell(figures.disaggregatedCoresBusy, 2),
                numberCell(figures.disaggregatedCapacityBound, 2),
              ]
            })
    return {
      suite: 'disaggregated',
      title: 'Disaggregated rollouts against the synchronous loop (Simple Negotiation, LoRA)',
      startedAt: clockStarted.startedAt,
      durationSeconds: clockStarted.seconds(),
      machine: describeMachine(runtime.backend),
      peers: {
        'synchronous loop':
          sync === undefined ? { available: false, reason: 'not run' } : { available: true, reason: 'configuration A, the baseline of the ratios, same run' },
      },
      tables: [
        {
          title: `Simple Negotiation (${settings.turns} actions), ${settings.steps} steps of ${settings.episodesPerStep} games, LoRA r=${settings.loraRank}, seed ${settings.seed}, ${runtime.backend}${options.quick ? ' (quick: figures meaningless)' : ''}`,
          columns: [
            'configuration',
            `time to mean reward ≥ ${settings.target} vs random (s)`,
            'steps to target',
            'speed-up to target (A / B)',
            'training time (s)',
            'speed-up per step (A / B)',
            'tokens/s',
            'generation (s)',
            'environment (s)',
            'update (s)',
            'waiting (s)',
            'adapter write, on the path (s)',
            'adapter load, background (s)',
            'server busy generating (s)',
            settings.engine ? 'rows per server decode step' : 'rows per server call',
            'CPU, trainer process (s)',
            'CPU, servers (s)',
            'token staleness (mean of the steps)',
            'final mean reward',
          ],
          rows,
          notes: [
            'Time to target: training wall time (evaluations excluded: adapter snapshots taken every evaluateEvery steps are evaluated after the run, the same way for both) until the evaluated mean reward against the random player (fixed held-out seeds) first reaches the target.',
            "A generates, steps the games and updates on one thread: its time is generation + environment + update (+ small overheads). B generates on the servers while the trainer updates: generation is off the trainer's path (overlapped), and the trainer's time is waiting + update + writing the adapter's files. Loading it on the servers runs in the background (in the collection thread when there is one; its time as the trainer saw it).",
            `B's generation is the collection's wall time less the environments' (requests in flight included; ${settings.collectionThread ? 'the episodes run in a collection thread, whose environment time is not measured apart and is counted here' : "answers waiting for the trainer's thread between its mini-batches included"}); server busy generating is the servers' wall time with a generation running (summed over servers), and ${settings.engine ? "rows per server decode step how many sequences the servers' engines decoded together (one adapter's, adapters taking turns)" : "rows per server call how well the servers' batching window re-formed batches from the episodes' separate requests"}.`,
            `B plays with adapters at most ${settings.maxStaleness} update(s) old (staleness ≤ ${settings.maxStaleness}), importance-corrected as the asynchronous collector is; it may need more steps than A to reach the same target. Token staleness: how many updates behind the trained weights each trained token's adapter was, averaged over a step's tokens, then over the steps${settings.partialRollouts ? ' (partial rollouts: each turn on the newest adapter loaded when it was issued)' : ' (each batch on the adapter it started with)'}.`,
            "CPU: each process's CPU time (user + system, every thread) over the training, as its wall time; the trainer process's includes B's collection thread.",
            `Server start-up (not counted): ${results.map((result) => (result.serverStartSeconds === undefined ? '' : `${result.serverStartSeconds.toFixed(1)} s`)).join('')}; the trainer's backend computes with ${runtime.threads} thread(s), each server's with ${results.find((result) => result.breakdown.server !== undefined)?.breakdown.server?.threads ?? '—'} thread(s).`,
          ],
        },
        ...(accountingRows.length === 0
          ? []
          : [
              {
                title: `Overlap accounting: what B can gain over A at most on this machine (${cores} cores), and how close it came`,
                columns: [
                  'A: training time (s)',
                  'A: generation + environment (s)',
                  'A: CPU (s)',
                  'A: cores busy (average)',
                  'pipeline bound (×)',
                  'capacity bound (×)',
                  'overlap bound (×)',
                  'B: training time (s)',
                  'B: per step (A / B)',
                  'B: share of the bound',
                  'B: CPU, trainer + servers (s)',
                  "B's work against A's (CPU B / CPU A)",
                  'B: cores busy (average)',
                  "B's own capacity bound (×)",
                ],
                rows: accountingRows,
                notes: [
                  "Pipeline bound: B's step is at least the longer of A's collection (generation and environments) and the rest of A's step (the update), each as fast as in A: A / max(collection, A − collection) — the gain of overlapping them perfectly with free capacity.",
                  "Capacity bound: if B did A's work, the machine's cores could do it in no less than CPU_A / cores: A / (CPU_A / cores). A that keeps every core busy leaves nothing for the overlap (bound 1). Approximate: B's work is not A's (its server may generate with less CPU than A, or more).",
                  "Overlap bound: the lower of the two. B's share of it: its per-step speed-up over the bound. B's work against A's: what disaggregating costs in CPU (a second copy of the model generating in smaller batches, HTTP, adapter files). B's own capacity bound: A / (CPU_B / cores), what B could reach with its own work spread over every core all the time; B's cores busy (CPU_B / B's time) says how much of the machine it kept busy.",
                ],
              },
            ]),
        {
          title: 'Evaluations (mean reward against the random player)',
          columns: ['configuration', 'step', 'training time (s)', 'mean reward', 'win rate', 'invalid rate'],
          rows: results.flatMap((result) =>
            result.evaluations.map((evaluation) => [
              result.configuration,
              evaluation.step,
              numberCell(evaluation.seconds, 1),
              numberCell(evaluation.meanReward, 3),
              numberCell(evaluation.winRate, 3),
              numberCell(evaluation.invalidRate, 3),
            ]),
          ),
        },
      ],
      raw: { options: settings, results },
    }
  },
})
