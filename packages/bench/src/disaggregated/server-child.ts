/**
 * One generation server of the `disaggregated` suite, in its own process (`dist/disaggregated-server.js`): what
 * `ludic serve <model> --enable-lora` (with `engine`: `--engine --enable-lora`) does, with the workload's tokenizer and
 * terse chat template. Argument: a JSON object `{ modelDirectory, adapterDirectory, workload, backend, maxBatch,
 * batchWindowMs, seed, threads?, engine? }`. Prints `{"url": …}` once listening; stops at SIGTERM,
 * SIGINT or when its standard input ends (the parent is gone).
 */
import { mkdir } from 'node:fs/promises'
import type { PolicyV1 } from '@ludic/core'
import { createLocalPolicy, loadModel } from '@ludic/model'
import { serveOpenAICompatible } from '@ludic/rollout'
import { initTensors, type InitTensorsOptions } from '@ludic/tensors'
import { createLocalLoraAdapters } from '@ludic/trainer'
import { backendThreadOptions, processCpuSeconds } from '../machine.js'
import { gameChatTemplate } from '../selfplay/game-selfplay.js'
import { negotiationTokenizer, type NegotiationWorkload } from './negotiation-workload.js'

export interface ServerChildSettings {
  modelDirectory: string
  /** Where the trainer writes its adapters: the only directory the server loads them from (`ludic serve --lora-root`). */
  adapterDirectory: string
  workload: NegotiationWorkload
  backend: string
  maxBatch: number
  /** The server's batching window (`serveOpenAICompatible`'s `batching.windowMs`), in ms. */
  batchWindowMs: number
  seed: number
  /** Threads of the backend: the native intra-op pool's, or WebAssembly's (undefined: the backend's default). */
  threads?: number | undefined
  /**
   * Generate on a `GenerationEngine` of `maxBatch` rows (`createLocalPolicy({ engine })`, as `ludic serve --engine`):
   * each request goes to it at once (no batching window), an adapter's requests decode together, adapters taking turns
   * (`createLocalLoraAdapters`). Default false: batches of the window's requests, one generation at a time.
   */
  engine?: boolean | undefined
}

export async function runServerChild(settings: ServerChildSettings): Promise<void> {
  const backend = settings.backend as InitTensorsOptions['backend']
  const runtime = await initTensors({ backend, verbose: false, ...backendThreadOptions(backend, settings.threads) })
  const tokenizer = negotiationTokenizer(settings.workload)
  const model = await loadModel(settings.modelDirectory)
  const engine = settings.engine === true
  const local = createLocalPolicy({
    model,
    tokenizer,
    chatTemplate: gameChatTemplate,
    maxBatch: settings.maxBatch,
    seed: settings.seed,
    id: 'base',
    ...(engine ? { engine: { maxRows: settings.maxBatch } } : {}),
  })
  /**
   * The server's own generation time (wall time with at least one `generate` running: the model busy), its calls and
   * rows, its process's CPU time and its backend's threads, for `GET /stats`; with the engine, its decode steps and
   * generated tokens.
   */
  const busy = { generateSeconds: 0, generateCalls: 0, generateRows: 0 }
  let active = 0
  let busySince = 0
  const policy: PolicyV1 = {
    ...local,
    generate: async (requests, options) => {
      if (active++ === 0) busySince = performance.now()
      try {
        return await local.generate(requests, options)
      } finally {
        if (--active === 0) busy.generateSeconds += (performance.now() - busySince) / 1000
        busy.generateCalls++
        busy.generateRows += requests.length
      }
    },
  }
  await mkdir(settings.adapterDirectory, { recursive: true })
  const lora = createLocalLoraAdapters(model, policy, { roots: [settings.adapterDirectory] })
  const server = await serveOpenAICompatible(lora.base, {
    modelId: 'base',
    tokenizer,
    // The engine batches requests as they come: each goes to it at once (as `ludic serve --engine`).
    batching: engine
      ? { windowMs: 0, maxBatchSize: 1, maxConcurrentBatches: 1_000_000 }
      : { windowMs: settings.batchWindowMs, maxBatchSize: settings.maxBatch },
    lora: { loader: lora.loader, maxAdapters: 8 },
    extraStats: () => {
      const stats = local.engineStats()
      return {
        ...busy,
        // The process's CPU time so far (every thread: the backend's pool included), for the suite's accounting.
        cpuSeconds: processCpuSeconds(),
        threads: runtime.threads,
        ...(stats === undefined ? {} : { decodeSteps: stats.decodeSteps, generatedTokens: stats.generatedTokens }),
      }
    },
  })
  process.stdout.write(`${JSON.stringify({ url: server.url })}\n`)
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve)
    process.once('SIGINT', resolve)
    process.stdin.once('end', resolve).resume()
  })
  await server.close()
  lora.dispose()
  model.dispose()
}

const argument = process.argv[2]
if (argument !== undefined && process.argv[1]?.endsWith('disaggregated-server.js')) {
  runServerChild(JSON.parse(argument) as ServerChildSettings).then(
    () => process.exit(0),
    (error: unknown) => {
      process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
      process.exit(1)
    },
  )
}
