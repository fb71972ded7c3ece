import { readFile, stat } from 'node:fs/promises'
import { resolve } from 'node:path'
import { InvalidArgumentError } from '@ludic/core'
import { createLocalPolicy, loadModel, type CausalLanguageModel, type LocalPolicy, type LocalPolicyOptions } from '@ludic/model'
import { serveOpenAICompatible, type OpenAICompatibleServer } from '@ludic/rollout'
import { initTensors, type InitTensorsOptions } from '@ludic/tensors'
import { loadTokenizer } from '@ludic/tokenizer'
import * as tf from '@tensorflow/tfjs-core'
import { type CommandContext, commandContext, log } from '../context.js'
import { createLocalLoraAdapters, type LocalLoraAdapters } from '@ludic/trainer'
import { CliError, exitCodes } from '../errors.js'
import { listenProblem } from '../listen-problem.js'
import { checkModelFolder, localModelDirectory } from '../sources.js'

export interface ServeOptions {
  /** Default 8000; 0 picks a free port. */
  port?: number
  /** Default `127.0.0.1` (this machine only). */
  host?: string
  /** `max_tokens` of a request that gives none. Default 256. */
  maxTokens?: number
  /** The model name clients send. Default: the directory's or repo's name. */
  modelId?: string
  /** Clients must send `Authorization: Bearer <key>`. Default: `LUDIC_API_KEY`, else none. */
  apiKey?: string
  /** A file with a Jinja chat template, used instead of the tokenizer's. */
  chatTemplate?: string
  /** Requests generated together (with `engine`: the engine's rows). Default 16. */
  maxBatch?: number
  /**
   * Generate on `@ludic/model`'s `GenerationEngine` (continuous batching: a request joins the running ones as soon as
   * its prompt is computed and leaves the step it ends, so a long request does not hold short ones back; prompts share
   * computed prefixes, so `n` samples compute their prompt once). Every architecture, GPT-2 included. With `enableLora`
   * the requests of one adapter (or the base) run together, adapters taking turns (see `createLocalLoraAdapters`).
   * Default false.
   */
  engine?: boolean
  /**
   * Take LoRA adapters at run time through vLLM's API (`POST /v1/load_lora_adapter`, `/v1/unload_lora_adapter`;
   * PEFT directories, see `createLocalLoraAdapters`), from the `loraRoots` directories only. Default false.
   */
  enableLora?: boolean
  /**
   * The directories adapters may be loaded from (relative to the working directory), required with `enableLora`: a
   * client's `lora_path` must resolve inside one of them, symbolic links followed (a relative one: inside the first).
   */
  loraRoots?: readonly string[]
  /** Adapters held at once with `enableLora`. Default 8. */
  maxLoras?: number
  /** Host names a request's `Host` header may carry besides IP addresses and localhost (`'*'`: any). Default: none. */
  allowedHosts?: readonly string[]
}

/** A running `ludic serve`: its server and a `close` that stops it and frees the model. */
export interface RunningServer {
  server: OpenAICompatibleServer
  model: CausalLanguageModel
  /** The adapters, with `enableLora`. */
  lora: LocalLoraAdapters | undefined
  /** Stops listening and disposes of the model. */
  close(): Promise<void>
}

/**
 * `ludic serve <checkpoint|repo>`: loads the model and its tokenizer (a local directory, or a Hugging Face repo id,
 * downloaded into the Hub cache) and serves them over the OpenAI API (`/v1/chat/completions`, `/v1/completions`,
 * streaming with `stream: true`, `/v1/models`, `/health`, `/metrics`) with `@ludic/rollout`'s server. Returns once listening;
 * `close()` (the command line calls it at Ctrl+C or SIGTERM) stops it. A fatal policy fault (a broken backend) calls
 * `onFatalError`; the command line then exits 1 for a supervisor to restart it.
 */
export async function serve(
  source: string,
  options: ServeOptions = {},
  partialContext: Partial<CommandContext> = {},
  onFatalError?: (error: unknown) => void,
): Promise<RunningServer> {
  const context = commandContext(partialContext)
  if (options.enableLora === true && (options.loraRoots === undefined || options.loraRoots.length === 0)) {
    throw new CliError(
      '--enable-lora needs --lora-root <dir>: the directories clients may load adapters from (a client names files on this machine)',
      exitCodes.usage,
    )
  }
  const loraRoots = (options.loraRoots ?? []).map((root) => resolve(context.cwd, root))
  for (const root of loraRoots) {
    const isDirectory = await stat(root).then(
      (stats) => stats.isDirectory(),
      () => false,
    )
    if (!isDirectory)
      throw new CliError(`--lora-root ${root} is not a directory (create it, or name the one the trainer writes adapters to)`, exitCodes.notFound)
  }
  const runtime = await initTensors({ ...(context.backend === undefined ? {} : { backend: context.backend as InitTensorsOptions['backend'] }), verbose: false })
  const directory = await localModelDirectory(source, { base: context.cwd, signal: context.signal })
  checkModelFolder(directory, source)
  log(context, `backend ${runtime.backend}; loading ${directory}`)
  const tokenizer = await loadTokenizer(directory)
  const model = await loadModel(directory)
  try {
    const chatTemplate = options.chatTemplate === undefined ? undefined : await readFile(resolve(context.cwd, options.chatTemplate), 'utf8')
    const modelId = options.modelId ?? source.replace(/\/+$/, '').split(/[\\/]/).slice(-2).join('/')
    const policy = createServedPolicy(options, {
      model,
      tokenizer,
      id: modelId,
      maxBatch: options.maxBatch ?? 16,
      ...(context.seed === undefined ? {} : { seed: context.seed }),
      ...(chatTemplate === undefined ? {} : { chatTemplate }),
    })
    if (options.engine === true)
      log(
        context,
        `generation engine: ${policy.engineStats()!.rows} rows of up to ${policy.engineStats()!.rowLength} positions, ${policy.engineStats()!.pages} pages of ${policy.engineStats()!.pageTokens}`,
      )
    const apiKey = options.apiKey ?? process.env.LUDIC_API_KEY
    // On the engine an adapter's requests run together, adapters taking turns; without it one generation at a time.
    const lora = options.enableLora === true ? createLocalLoraAdapters(model, policy, { roots: loraRoots, concurrent: options.engine === true }) : undefined
    const port = options.port ?? 8000
    const host = options.host ?? '127.0.0.1'
    const server = await serveOpenAICompatible(lora?.base ?? policy, {
      port,
      host,
      modelId,
      tokenizer,
      defaultMaxTokens: options.maxTokens ?? 256,
      maxContextTokens: model.maxContextTokens,
      // The engine batches requests as they come: each goes to it at once.
      batching:
        options.engine === true ? { windowMs: 0, maxBatchSize: 1, maxConcurrentBatches: 1_000_000 } : { windowMs: 5, maxBatchSize: options.maxBatch ?? 16 },
      extraStats: () => ({ tensors: tf.memory().numTensors }),
      ...(apiKey === undefined || apiKey === '' ? {} : { apiKey }),
      ...(onFatalError === undefined ? {} : { onFatalError }),
      ...(lora === undefined ? {} : { lora: { loader: lora.loader, maxAdapters: options.maxLoras ?? 8 } }),
      ...(options.allowedHosts === undefined ? {} : { allowedHosts: [...options.allowedHosts] }),
    }).catch((error: unknown) => {
      throw listenProblem(error, host, port) ?? error
    })
    return {
      server,
      model,
      lora,
      async close() {
        await server.close()
        lora?.dispose()
        model.dispose()
      },
    }
  } catch (error) {
    model.dispose()
    throw error
  }
}

/** The served policy: on the generation engine with `--engine` (its rows `--max-batch`), a model it cannot run refused naming the flag. */
function createServedPolicy(options: ServeOptions, settings: LocalPolicyOptions): LocalPolicy {
  if (options.engine !== true) return createLocalPolicy(settings)
  try {
    return createLocalPolicy({ ...settings, engine: { maxRows: options.maxBatch ?? 16 } })
  } catch (error) {
    if (InvalidArgumentError.isInstance(error) && error.argument.startsWith('options.engine'))
      throw new CliError(`--engine: ${error.message.slice(error.message.indexOf('): ') + 3)}`, exitCodes.usage)
    throw error
  }
}
