import { createHash, randomUUID, timingSafeEqual } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { type AddressInfo, isIP } from 'node:net'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import {
  BackendError,
  deriveSeed,
  formatPath,
  generationRequestSchema,
  InvalidArgumentError,
  isPolicy,
  parseArgument,
  tokenizerSchema,
  type ChatMessage,
  type Completion,
  type GenerationRequest,
  type PolicyV1,
} from '@ludic/core'
import { z } from 'zod'
import { batchingPolicyOptionsSchema, createBatchingPolicy, type BatchingPolicy, type BatchingStats } from './batching-policy.js'
import { GenerationBatchError } from './generation-batch-error.js'
import {
  chatCompletionRequestSchema,
  chatLogprobs,
  completionLogprobs,
  completionRequestSchema,
  toChatMessages,
  type ChatCompletionRequest,
  type CompletionRequest,
  type OpenAIErrorBody,
} from './openai-protocol.js'
import { isAdapterNotFound, loadLoraAdapterRequestSchema, loraAdapterServeOptionsSchema, unloadLoraAdapterRequestSchema } from './lora-adapters.js'
import { createServerMetrics, policyMetricsSource } from './openai-server-metrics.js'

export const serveOptionsSchema = z
  .strictObject({
    /** Port to listen on; 0 picks a free one (read it from `url`). Default: 0. */
    port: z.number().int().min(0).max(65535).default(0),
    /** Interface to listen on. Default: '127.0.0.1' (loopback only). */
    host: z.string().min(1).default('127.0.0.1'),
    /** The model name clients must send as `model`. Default: the policy's id. */
    modelId: z.string().min(1).optional(),
    /**
     * Renders token strings in log-probability answers (`decode([id])`). Without it a token's string is
     * `token_id:<id>`, which a client can read the id back from.
     */
    tokenizer: tokenizerSchema.optional(),
    /** How concurrent requests become batched `generate` calls. Default: 5 ms window, 64 per batch, 1 call at a time. */
    batching: batchingPolicyOptionsSchema.default({ windowMs: 5, maxBatchSize: 64, maxConcurrentBatches: 1 }),
    /** Largest request body, in bytes; larger ones get 413. Default: 8 MiB. */
    maxBodyBytes: z
      .number()
      .int()
      .positive()
      .default(8 * 1024 * 1024),
    /** `max_tokens` when a request gives none. Default: 256. */
    defaultMaxTokens: z.number().int().positive().default(256),
    /**
     * Clients must send `Authorization: Bearer <apiKey>` on every route but `/health` and `/metrics` (401 otherwise;
     * compared in constant time; vLLM's `--api-key` leaves those two open too). Default: none (no key asked).
     */
    apiKey: z.string().min(1).optional(),
    /**
     * Generations one request may ask for: prompts × `n` on `/v1/completions`, `n` on `/v1/chat/completions`;
     * more is a 400 naming this limit. Default: 128.
     */
    maxGenerationsPerRequest: z.number().int().positive().default(128),
    /** A request's headers must arrive within this many ms of its start (Node's `headersTimeout`), else 408 and the connection closes. Default: 10 000. */
    headersTimeoutMs: z.number().int().positive().default(10_000),
    /**
     * The whole request, body included, must arrive within this many ms (Node's `requestTimeout`), else 408 and
     * the connection closes. Generating the answer is not counted. Default: 30 000.
     */
    requestTimeoutMs: z.number().int().positive().default(30_000),
    /** Open connections at most; more are dropped as they arrive (Node's `maxConnections`). Default: 256. */
    maxConnections: z.number().int().positive().default(256),
    /**
     * The model's context, in tokens: a request whose prompt plus `max_tokens` exceeds it is a 400
     * (`context_length_exceeded`) before the policy is called. The prompt is counted with `tokenizer` as a local policy
     * encodes it (a chat through the chat template, the messages' special-token text kept plain; a raw prompt as it is;
     * the messages' contents alone when the tokenizer has no template); without a tokenizer only `max_tokens` is.
     * Default: none (the policy's own check, such as a local model's `ContextLengthError`, also answers 400).
     */
    maxContextTokens: z.number().int().positive().optional(),
    /**
     * A generation still running this many ms after it started is aborted (through `generate`'s signal) and
     * answered 504 (`x-should-retry: false`). Default: 300 000.
     */
    generationTimeoutMs: z.number().int().positive().default(300_000),
    /**
     * Called once when the policy fails in a way the process cannot recover from (a `BackendError`, a
     * WebAssembly `RuntimeError` such as "memory access out of bounds", or an error with `fatal: true`): the
     * server is unhealthy from then on (`/health` 503, generation requests 503), and a supervisor should
     * restart the process — `ludic serve` exits non-zero here.
     */
    onFatalError: z.custom<(error: unknown) => void>((value) => typeof value === 'function', 'must be a function').optional(),
    /**
     * Extra figures for `GET /stats`, e.g. `() => ({ tensors: tf.memory().numTensors })` for a local model (this
     * package knows no tensors). Default: none.
     */
    extraStats: z.custom<() => Record<string, unknown>>((value) => typeof value === 'function', 'must be a function').optional(),
    /**
     * Runtime LoRA adapters, as vLLM serves them with `VLLM_ALLOW_RUNTIME_LORA_UPDATING=True`: `POST
     * /v1/load_lora_adapter` and `POST /v1/unload_lora_adapter`, a request whose `model` is an adapter's name served
     * with it, `/v1/models` listing the adapters (with `parent`). See `loraAdapterServeOptionsSchema` for the loader and
     * the limits. Default: none (both routes answer 404, as vLLM's do without the variable).
     */
    lora: loraAdapterServeOptionsSchema.optional(),
    /**
     * Host names a request's `Host` header may carry besides IP addresses and `localhost` (which always may): a web page
     * that rebinds its own DNS name to this machine (DNS rebinding) then gets 403 instead of the model. A name with a
     * leading dot allows its subdomains too (`.example.com`); `'*'` allows any Host. Default: none.
     */
    allowedHosts: z.array(z.string().min(1).max(253)).max(256).default([]),
    /**
     * Bytes a streaming answer may have waiting for its client to read: a client that stops reading while keeping its
     * connection open is cut (its generation aborted) once this much is buffered, instead of the server holding the
     * rest in memory. Default: 1 MiB.
     */
    maxStreamBufferBytes: z
      .number()
      .int()
      .positive()
      .default(1 << 20),
    /**
     * `/health` answers 503 `stalled` while a `generate` call or an adapter load has run longer than this many ms (it
     * should have ended at `generationTimeoutMs`: its policy is stuck, e.g. on a lock), and 200 again once it ends.
     * Default: `generationTimeoutMs` + 10 000.
     */
    stalledAfterMs: z.number().int().positive().optional(),
  })
  .refine((options) => options.headersTimeoutMs <= options.requestTimeoutMs, {
    path: ['headersTimeoutMs'],
    message: 'must not exceed requestTimeoutMs (the headers are part of the request)',
  })
export type ServeOptions = z.input<typeof serveOptionsSchema>

export interface OpenAICompatibleServer {
  /** The base URL to give an OpenAI client, e.g. `http://127.0.0.1:41234/v1`. */
  readonly url: string
  readonly port: number
  readonly modelId: string
  /** Batching counters (requests, `generate` calls, largest batch, queued now), answers by status, open connections. */
  stats(): ServerStats
  /**
   * Unhealthy after a fatal policy error (see `onFatalError`), with that error's message; `stalled` while a call runs
   * past `stalledAfterMs` (healthy again when it ends).
   */
  health(): { healthy: true } | { healthy: false; stalled?: true; error: string }
  /** Stops listening and drops open connections (requests in flight get no answer). */
  close(): Promise<void>
}

export interface ServerStats extends BatchingStats {
  /** LoRA adapters loaded now (see the `lora` option). */
  loraAdapters: number
  /** Answers sent, by HTTP status (those the server wrote; not Node's own 408s for slow requests). */
  answers: Record<string, number>
  /** Connections open now. */
  connections: number
  /** Streaming clients cut since the start for not reading (see `maxStreamBufferBytes`). */
  slowClientsCut: number
  /** Requests refused since the start for their `Host` header (see `allowedHosts`). */
  hostsRefused: number
}

/** A request failed in a way the client should hear about: an OpenAI-style error answer. */
class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type: string,
    readonly code: string | null = null,
    readonly param: string | null = null,
    readonly headers: Record<string, string> = {},
  ) {
    super(message)
  }
}

const routes: Record<string, readonly string[]> = {
  '/v1/models': ['GET'],
  '/v1/chat/completions': ['POST'],
  '/v1/completions': ['POST'],
  '/health': ['GET'],
  '/metrics': ['GET'],
  '/stats': ['GET'],
  '/v1/load_lora_adapter': ['POST'],
  '/v1/unload_lora_adapter': ['POST'],
}

/** A model a request may name: the base policy or a loaded adapter. */
interface ServedModel {
  readonly name: string
  readonly batching: BatchingPolicy
  readonly policy: PolicyV1
  /** The adapter's path (undefined: the base). */
  readonly path: string | undefined
  readonly created: number
  /** Requests being answered with it now. */
  inFlight: number
  /** Unloaded (or replaced in place): freed once `inFlight` is 0. */
  retired: boolean
}

/**
 * Serves any `PolicyV1` over the OpenAI HTTP API (node:http; JSON, or server-sent events with `stream: true`):
 *
 * - `GET /v1/models`, `GET /v1/models/<id>`, `GET /health`;
 * - `GET /metrics`: Prometheus' text format (0.0.4) in vLLM's metric names where vLLM has the metric, Ludic's under
 *   `ludic_` (see `createServerMetrics`); the policy's engine adds its own through an optional `metrics` method
 *   (`PolicyWithMetrics`). Like `/health`, open without the API key, as vLLM serves it;
 * - `POST /v1/chat/completions`: `messages`, `max_tokens` / `max_completion_tokens`, `temperature`,
 *   `top_p`, `stop`, `seed`, `n`, `logprobs`, `top_logprobs`, and vLLM's `top_k`, `min_p`, `min_tokens` and
 *   `ignore_eos` (`GenerationRequest.minTokens` / `ignoreEos`: `min_tokens` above `max_tokens`, or above
 *   `defaultMaxTokens` without one, is a 400 naming it; a policy that cannot honour them refuses them, 400) and
 *   `return_token_ids` (answers with `prompt_token_ids` and per-choice `token_ids`); `usage` always;
 * - `POST /v1/completions`: `prompt` (a string or a list) is raw text to continue, as vLLM serves it: each
 *   goes to the policy as a `GenerationRequest` `prompt`, with no chat template (a local model reads special
 *   tokens in it and adds its BOS, as vLLM's default `add_special_tokens`), so a model whose tokenizer has no
 *   chat template serves it; a policy that continues chats only refuses it (400); `logprobs` is the legacy
 *   integer form.
 *
 * Only the sampled token's log-probability is known, so `top_logprobs` lists at most that token. With
 * `n` > 1 and a `seed`, choice i samples with `seed` for i = 0 and `deriveSeed(seed, i)` after, so the
 * choices differ yet repeat. Concurrent requests are batched into one `generate` call (`batching`).
 * Errors are OpenAI-shaped (`{ error: { message, type, param, code } }`): 400 with the offending
 * `param` (and for a request the policy refuses with an `InvalidArgumentError`, such as a chat to a local model
 * with no chat template, or a raw prompt to a policy that continues chats only), 401 without `apiKey`,
 * 403 for a `Host` header that is not allowed (`allowedHosts`), 404 for an unknown route or model, 405, 413 above
 * `maxBodyBytes`, 415 for a body that is not JSON,
 * 500 when the policy fails (only the requests it failed, when it throws a `GenerationBatchError`), 503
 * once a fatal fault made the server unhealthy, 504 past `generationTimeoutMs`. Each generation is
 * aborted (through `generate`'s signal) when its client leaves or at its deadline. See the options for
 * the limits: context, generations per request, header and body timeouts, connections.
 *
 * With the `lora` option the server takes vLLM's runtime adapter API: `POST /v1/load_lora_adapter` (`{ lora_name,
 * lora_path, load_inplace? }`: 200 with a plain-text success line; 400 when a field is missing or too long, the name is
 * taken without `load_inplace`, `maxAdapters` are loaded, or the loader refuses the files; 404 when nothing is at the
 * path) and `POST /v1/unload_lora_adapter` (`{ lora_name }`: 200; 400 without a name; 404 for an unknown one). An
 * adapter serves requests only once its load resolved; unloading or replacing one stops new requests at once, and
 * the old policy is freed after its last request in flight was answered.
 */
export async function serveOpenAICompatible(policy: PolicyV1, options: ServeOptions = {}): Promise<OpenAICompatibleServer> {
  if (!isPolicy(policy))
    throw new InvalidArgumentError({ argument: 'policy', value: policy, message: "must be a PolicyV1 (specificationVersion 'v1', id, generate)" })
  const settings = parseArgument(serveOptionsSchema, options, 'options')
  const modelId = settings.modelId ?? policy.id
  const batching = createBatchingPolicy(policy, settings.batching)
  const created = Math.floor(Date.now() / 1000)
  const model = { id: modelId, object: 'model', created, owned_by: 'ludic' }
  const base: ServedModel = { name: modelId, batching, policy, path: undefined, created, inFlight: 0, retired: false }
  /** Loaded adapters by name, and the names being loaded (which count against `maxAdapters`). */
  const adapters = new Map<string, ServedModel>()
  const loading = new Set<string>()
  const lifetime = new AbortController()
  // `root` is the adapter's name, not its path: the server's file system is not its clients' business.
  const adapterCard = (served: ServedModel) => ({
    id: served.name,
    object: 'model',
    created: served.created,
    owned_by: 'ludic',
    root: served.name,
    parent: modelId,
  })
  /** The model a request names: the base or a loaded adapter (404 otherwise), held until `release`. */
  const acquire = (name: string): ServedModel => {
    const served = name === modelId ? base : adapters.get(name)
    if (served === undefined) throw modelNotFound(name)
    served.inFlight++
    return served
  }
  const release = (served: ServedModel) => {
    served.inFlight--
    if (served.retired && served.inFlight === 0) freeAdapter(served)
  }
  const freeAdapter = (served: ServedModel) => {
    const loader = settings.lora?.loader
    Promise.resolve()
      .then(() => loader?.unload?.(served.name, served.policy))
      .catch(() => {}) // an unload failure leaves memory behind, nothing a client can act on
  }
  const retire = (served: ServedModel) => {
    served.retired = true
    if (served.inFlight === 0) freeAdapter(served)
  }

  const expectedKey = settings.apiKey === undefined ? undefined : digest(settings.apiKey)
  let fatal: { error: unknown; message: string } | undefined
  const answers: Record<string, number> = {}
  let connections = 0
  let slowClientsCut = 0
  let hostsRefused = 0
  const stats = (): ServerStats => ({
    ...batching.stats(),
    loraAdapters: adapters.size,
    answers: { ...answers },
    connections,
    slowClientsCut,
    hostsRefused,
  })
  const stalledAfterMs = settings.stalledAfterMs ?? settings.generationTimeoutMs + 10_000
  /** Generation sequences (prompts × n) being answered now, waiting for a batch or in one (`/metrics`). */
  let sequencesInFlight = 0
  const metrics = createServerMetrics(
    modelId,
    {
      sequences: () => ({
        inFlight: sequencesInFlight,
        waiting: [base, ...adapters.values()].reduce((sum, served) => sum + served.batching.stats().queued, 0),
      }),
      answers: () => answers,
      connections: () => connections,
      slowClientsCut: () => slowClientsCut,
      hostsRefused: () => hostsRefused,
      loraAdapters: () => adapters.size,
      healthy: () => fatal === undefined && stalled() === undefined,
      policy: policyMetricsSource(policy),
    },
    settings.maxContextTokens === undefined ? {} : { maxModelLength: settings.maxContextTokens },
  )
  /** A generation request's answer for `/metrics`: tokens, finish reasons, time to first text and latency. */
  const recordFinished = (timing: RequestTiming, completions: readonly Completion[], choicesPerPrompt: number) => {
    const now = performance.now()
    metrics.requestFinished({
      promptTokens: usage(completions, choicesPerPrompt).prompt_tokens,
      choices: completions.map((completion) => ({
        promptTokens: completion.promptTokenIds.length,
        tokens: completion.tokenIds.length,
        finishReason: completion.finishReason,
      })),
      timeToFirstTokenSeconds: ((timing.firstText ?? now) - timing.arrived) / 1000,
      latencySeconds: (now - timing.arrived) / 1000,
    })
  }
  /** When each adapter load under way started (`performance.now()`). */
  const loadsStarted = new Set<{ startedAt: number }>()
  /** What is stuck now, if anything: a generate call or an adapter load past `stalledAfterMs`. */
  const stalled = (): string | undefined => {
    const longest = Math.max(0, ...[base, ...adapters.values()].map((served) => served.batching.stats().longestRunningBatchMs))
    if (longest > stalledAfterMs) {
      return `a generate call has run for ${Math.round(longest / 1000)} s, past the generation timeout (${settings.generationTimeoutMs} ms): the policy does not answer`
    }
    const now = performance.now()
    for (const load of loadsStarted) {
      if (now - load.startedAt > stalledAfterMs) return `an adapter load has run for ${Math.round((now - load.startedAt) / 1000)} s: the loader does not answer`
    }
    return undefined
  }
  const hostAllowed = allowedHostRule(settings.allowedHosts)
  // How long the event loop was held (a policy that computes without yielding stalls every client).
  const eventLoopDelay = monitorEventLoopDelay({ resolution: 10 })
  eventLoopDelay.enable()

  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const timing: RequestTiming = { arrived: performance.now(), firstText: undefined }
    const path = (request.url ?? '/').split('?')[0]!
    const method = request.method ?? 'GET'
    if (!hostAllowed(request.headers.host)) {
      hostsRefused++
      discardBody(request)
      throw new HttpError(
        403,
        `Blocked request: the Host ${JSON.stringify((request.headers.host ?? '').slice(0, 100))} is not allowed (only IP addresses, localhost and the allowedHosts option of serveOpenAICompatible; ludic serve --allowed-host).`,
        'invalid_request_error',
        'host_not_allowed',
      )
    }
    if (expectedKey !== undefined && path !== '/health' && path !== '/metrics') checkApiKey(request, expectedKey)
    if (path.startsWith('/v1/models/') && method === 'GET') {
      const id = decodePathPart(path.slice('/v1/models/'.length))
      if (id === modelId) return sendJson(response, 200, model)
      const adapter = adapters.get(id)
      if (adapter === undefined) throw modelNotFound(id)
      return sendJson(response, 200, adapterCard(adapter))
    }
    const allowed = routes[path]
    if (allowed === undefined) throw new HttpError(404, `Unknown request URL: ${method} ${path}.`, 'invalid_request_error', 'unknown_url')
    if (!allowed.includes(method)) {
      throw new HttpError(
        405,
        `Method ${method} is not allowed on ${path} (allowed: ${allowed.join(', ')}).`,
        'invalid_request_error',
        'method_not_allowed',
        null,
        { allow: allowed.join(', ') },
      )
    }
    if (path === '/health') {
      if (fatal !== undefined) return sendJson(response, 503, { status: 'unhealthy', error: fatal.message })
      const stuck = stalled()
      return sendJson(response, stuck === undefined ? 200 : 503, stuck === undefined ? { status: 'ok' } : { status: 'stalled', error: stuck })
    }
    if (path === '/v1/models') return sendJson(response, 200, { object: 'list', data: [model, ...[...adapters.values()].map(adapterCard)] })
    if (path === '/metrics') {
      const text = await metrics.scrape()
      if (response.headersSent || response.destroyed) return
      response.writeHead(200, { 'content-type': metrics.contentType, 'content-length': Buffer.byteLength(text) })
      return void response.end(text)
    }
    if (path === '/stats') {
      const memory = process.memoryUsage()
      return sendJson(response, 200, {
        status: fatal === undefined ? 'ok' : 'unhealthy',
        uptimeSeconds: Math.round(process.uptime()),
        ...stats(),
        memory: { rssBytes: memory.rss, heapUsedBytes: memory.heapUsed, externalBytes: memory.external, arrayBuffersBytes: memory.arrayBuffers },
        eventLoopDelayMs: readEventLoopDelay(),
        ...settings.extraStats?.(),
      })
    }
    if (path === '/v1/load_lora_adapter' || path === '/v1/unload_lora_adapter') {
      if (settings.lora === undefined) {
        discardBody(request)
        throw new HttpError(
          404,
          `Unknown request URL: ${method} ${path} (this server takes no LoRA adapters: start it with the lora option).`,
          'invalid_request_error',
          'unknown_url',
        )
      }
      const body = await readJson(request, settings.maxBodyBytes)
      checkHealthy()
      const message = path === '/v1/load_lora_adapter' ? await loadAdapter(body) : unloadAdapter(body)
      return sendText(response, 200, message)
    }
    const body = await readJson(request, settings.maxBodyBytes)
    if (path === '/v1/chat/completions') {
      const chat = parseBody(chatCompletionRequestSchema, body)
      const served = acquire(chat.model)
      try {
        await answerChat(chat, served, response, timing)
      } finally {
        release(served)
      }
      return
    }
    const plain = parseBody(completionRequestSchema, body)
    const served = acquire(plain.model)
    try {
      await answerCompletion(plain, served, response, timing)
    } finally {
      release(served)
    }
  }

  const answerChat = async (chat: ChatCompletionRequest, served: ServedModel, response: ServerResponse, timing: RequestTiming) => {
    const n = chat.n ?? 1
    checkGenerationCount(1, n)
    const maxTokens = chat.max_completion_tokens ?? chat.max_tokens ?? settings.defaultMaxTokens
    const maxParam = chat.max_completion_tokens == null ? 'max_tokens' : 'max_completion_tokens'
    checkMinTokens(chat.min_tokens, maxTokens, maxParam, chat.max_completion_tokens == null && chat.max_tokens == null)
    const generation = checkRequest({ messages: toChatMessages(chat.messages), maxTokens, ...sampling(chat) })
    checkContext(generation)
    const requests = repeat(generation, n)
    if (chat.stream === true)
      return streamAnswer(
        served,
        response,
        requests,
        'chat',
        chat.stream_options?.include_usage === true,
        (completions) => chatAnswer(chat, completions),
        timing,
        n,
      )
    const completions = await generate(served, requests, response, timing)
    recordFinished(timing, completions, n)
    return sendJson(response, 200, chatAnswer(chat, completions))
  }

  const answerCompletion = async (plain: CompletionRequest, served: ServedModel, response: ServerResponse, timing: RequestTiming) => {
    const prompts = typeof plain.prompt === 'string' ? [plain.prompt] : plain.prompt
    const n = plain.n ?? 1
    checkGenerationCount(prompts.length, n)
    const maxTokens = plain.max_tokens ?? settings.defaultMaxTokens
    checkMinTokens(plain.min_tokens, maxTokens, 'max_tokens', plain.max_tokens == null)
    const generations = prompts.map((prompt) => checkRequest({ prompt, maxTokens, ...sampling(plain) }))
    generations.forEach(checkContext)
    const requests = generations.flatMap((generation) => repeat(generation, n))
    if (plain.stream === true) {
      return streamAnswer(
        served,
        response,
        requests,
        'text',
        plain.stream_options?.include_usage === true,
        (completions) => completionAnswer(plain, completions, n),
        timing,
        n,
      )
    }
    const completions = await generate(served, requests, response, timing)
    recordFinished(timing, completions, n)
    return sendJson(response, 200, completionAnswer(plain, completions, n))
  }

  /** vLLM's rule: `min_tokens` at most `max_tokens` (the server's default counts when the request gives none). */
  const checkMinTokens = (minTokens: number | null | undefined, maxTokens: number, maxParam: string, defaulted: boolean) => {
    if (minTokens == null || minTokens <= maxTokens) return
    const given = defaulted ? " (the server's default, as the request gives none: the defaultMaxTokens option)" : ''
    throw new HttpError(
      400,
      `Invalid value for 'min_tokens': must be less than or equal to ${maxParam}=${maxTokens}${given}, got ${minTokens}.`,
      'invalid_request_error',
      'invalid_value',
      'min_tokens',
    )
  }

  /** A required, bounded string field of an adapter request (400 naming it otherwise). */
  const adapterField = (value: string | undefined, param: string, limit: number, option: string, missing: string): string => {
    if (value === undefined || value === '') throw new HttpError(400, missing, 'invalid_request_error', 'missing_required_parameter', param)
    if (value.length > limit) {
      throw new HttpError(
        400,
        `'${param}' is ${value.length} characters long; this server's limit is ${limit} (the lora.${option} option of serveOpenAICompatible).`,
        'invalid_request_error',
        'invalid_value',
        param,
      )
    }
    return value
  }

  /** vLLM's `load_lora_adapter`: the adapter serves requests only once the loader resolved. */
  const loadAdapter = async (body: unknown): Promise<string> => {
    const lora = settings.lora!
    const request = parseBody(loadLoraAdapterRequestSchema, body)
    const both = "Both 'lora_name' and 'lora_path' must be provided."
    const name = adapterField(request.lora_name, 'lora_name', lora.maxNameLength, 'maxNameLength', both)
    const path = adapterField(request.lora_path, 'lora_path', lora.maxPathLength, 'maxPathLength', both)
    if (name === modelId)
      throw new HttpError(400, `'${name}' is the base model's name; give the adapter another.`, 'invalid_request_error', 'invalid_value', 'lora_name')
    const existing = adapters.get(name)
    if (loading.has(name) || (existing !== undefined && request.load_inplace !== true)) {
      throw new HttpError(
        400,
        `The lora adapter '${name}' has already been loaded. If you want to load the adapter in place, set 'load_inplace' to True.`,
        'invalid_request_error',
        'lora_adapter_exists',
        'lora_name',
      )
    }
    if (existing === undefined && adapters.size + loading.size >= lora.maxAdapters) {
      throw new HttpError(
        400,
        `This server holds ${lora.maxAdapters} LoRA adapters already (the lora.maxAdapters option of serveOpenAICompatible): unload one first.`,
        'invalid_request_error',
        'too_many_lora_adapters',
        'lora_name',
      )
    }
    loading.add(name)
    const load = { startedAt: performance.now() }
    loadsStarted.add(load)
    let loaded: PolicyV1
    try {
      loaded = await lora.loader.load({ name, path, signal: lifetime.signal })
      if (!isPolicy(loaded)) throw new InvalidArgumentError({ argument: 'lora.loader.load', value: loaded, message: 'must resolve to a PolicyV1' })
    } catch (error) {
      const detail = `Loading lora ${name} failed: ${describeError(error)}`
      if (isAdapterNotFound(error)) throw new HttpError(404, `${detail} (no adapter found at ${path})`, 'NotFoundError', 'lora_adapter_not_found', 'lora_path')
      throw new HttpError(400, detail, 'BadRequestError', 'lora_adapter_invalid', 'lora_path')
    } finally {
      loading.delete(name)
      loadsStarted.delete(load)
    }
    const served: ServedModel = {
      name,
      batching: createBatchingPolicy(loaded, settings.batching),
      policy: loaded,
      path,
      created: Math.floor(Date.now() / 1000),
      inFlight: 0,
      retired: false,
    }
    const replaced = adapters.get(name)
    adapters.set(name, served) // one assignment: a request sees the old adapter or the new one, never a mix
    if (replaced !== undefined) retire(replaced)
    return `Success: LoRA adapter '${name}' added successfully.`
  }

  /** vLLM's `unload_lora_adapter`: new requests for it are 404 at once; it is freed after its last one in flight. */
  const unloadAdapter = (body: unknown): string => {
    const request = parseBody(unloadLoraAdapterRequestSchema, body)
    const name = adapterField(
      request.lora_name,
      'lora_name',
      settings.lora!.maxNameLength,
      'maxNameLength',
      "'lora_name' needs to be provided to unload a LoRA adapter.",
    )
    const served = adapters.get(name)
    if (served === undefined) throw new HttpError(404, `The lora adapter '${name}' cannot be found.`, 'NotFoundError', 'lora_adapter_not_found', 'lora_name')
    adapters.delete(name)
    retire(served)
    return `Success: LoRA adapter '${name}' removed successfully.`
  }

  const checkGenerationCount = (prompts: number, n: number) => {
    const count = prompts * n
    if (count <= settings.maxGenerationsPerRequest) return
    const what = prompts === 1 ? `n ${n}` : `${prompts} prompts × n ${n}`
    throw new HttpError(
      400,
      `This request asks for ${count} generations (${what}); this server's limit is ${settings.maxGenerationsPerRequest} per request ` +
        '(the maxGenerationsPerRequest option of serveOpenAICompatible): send fewer prompts or a smaller n, or raise the limit.',
      'invalid_request_error',
      'too_many_generations',
      'n',
    )
  }

  /** Prompt tokens + max_tokens within `maxContextTokens`, counted as well as the server can (see the option). */
  const checkContext = (request: GenerationRequest) => {
    const limit = settings.maxContextTokens
    if (limit === undefined) return
    const promptTokens = countPromptTokens(request)
    const requested = (promptTokens ?? 0) + request.maxTokens
    if (requested <= limit) return
    const counted =
      promptTokens === undefined
        ? `${request.maxTokens} tokens in the completion (the prompt is not counted: the server has no tokenizer)`
        : `${requested} tokens (${promptTokens} in the ${request.messages === undefined ? 'prompt' : 'messages'}, ${request.maxTokens} in the completion)`
    throw new HttpError(
      400,
      `This model's maximum context length is ${limit} tokens (the maxContextTokens option of serveOpenAICompatible). ` +
        `However, you requested ${counted}. Please reduce the length of the ${request.messages === undefined ? 'prompt' : 'messages'} or completion.`,
      'invalid_request_error',
      'context_length_exceeded',
      request.messages === undefined ? 'prompt' : 'messages',
    )
  }

  /**
   * A request's prompt tokens as a local policy encodes them (`createLocalPolicy`): a raw prompt as it is (special
   * tokens read and added, as vLLM), a chat through the template with the messages' special-token text kept plain
   * (`encodeChat` with `splitSpecialTokens`).
   */
  const countPromptTokens = (request: GenerationRequest): number | undefined => {
    const tokenizer = settings.tokenizer
    if (tokenizer === undefined) return undefined
    const { messages, prompt } = request
    if (messages === undefined) return tokenizer.encode(prompt ?? '').length
    try {
      if (tokenizer.encodeChat !== undefined) return tokenizer.encodeChat(messages, { addGenerationPrompt: true, splitSpecialTokens: true }).length
      if (tokenizer.applyChatTemplate !== undefined)
        return tokenizer.encode(tokenizer.applyChatTemplate(messages, { addGenerationPrompt: true }), { addSpecialTokens: false }).length
    } catch {
      // a template that refuses these messages, or none: count the contents alone
    }
    return messages.reduce((sum: number, message: ChatMessage) => sum + tokenizer.encode(message.content, { addSpecialTokens: false }).length, 0)
  }

  /** Percentiles of the event loop's delay since the previous read (the histogram starts over). */
  const readEventLoopDelay = () => {
    const milliseconds = (nanoseconds: number) => Math.round(nanoseconds / 1e5) / 10
    const figures = {
      p50: milliseconds(eventLoopDelay.percentile(50)),
      p99: milliseconds(eventLoopDelay.percentile(99)),
      max: milliseconds(eventLoopDelay.max),
    }
    eventLoopDelay.reset()
    return figures
  }

  const markUnhealthy = (error: unknown) => {
    if (fatal !== undefined) return
    fatal = { error, message: describeError(error) }
    try {
      settings.onFatalError?.(error)
    } catch {
      // the hook's own failure must not hide the answer
    }
  }

  /**
   * Generates through the batching policy with a signal that aborts at the deadline and when the client
   * leaves; maps failures to answers (400 for a refused request, 500, 503 once unhealthy).
   */
  const generate = async (
    served: ServedModel,
    requests: GenerationRequest[],
    response: ServerResponse,
    timing: RequestTiming,
    onText?: (requestIndex: number, text: string) => void,
  ): Promise<Completion[]> => {
    checkHealthy()
    // Always listened to, for the time to first token (a policy that cannot stream calls it once, at the end).
    const listener = (index: number, text: string) => {
      if (text !== '' && timing.firstText === undefined) timing.firstText = performance.now()
      onText?.(index, text)
    }
    const controller = new AbortController()
    const deadline = setTimeout(() => controller.abort(generationTimedOut()), settings.generationTimeoutMs)
    const onClose = () => {
      if (!response.writableFinished) controller.abort(new Error('the client closed the connection'))
    }
    response.once('close', onClose)
    sequencesInFlight += requests.length
    try {
      return await served.batching.generate(requests, { signal: controller.signal, onText: listener })
    } catch (error) {
      if (controller.signal.aborted) throw controller.signal.reason
      throw toHttpError(error)
    } finally {
      sequencesInFlight -= requests.length
      clearTimeout(deadline)
      response.off('close', onClose)
    }
  }

  /** 504, and no retry: the same request would take as long again. */
  const generationTimedOut = () =>
    new HttpError(
      504,
      `The generation took longer than ${settings.generationTimeoutMs} ms (the generationTimeoutMs option of serveOpenAICompatible).`,
      'server_error',
      'generation_timeout',
      null,
      { 'x-should-retry': 'false' },
    )

  const checkHealthy = () => {
    if (fatal === undefined) return
    throw new HttpError(503, `The server is unhealthy since its policy failed with ${fatal.message}; it must be restarted.`, 'server_error', 'server_unhealthy')
  }

  /**
   * Answers with server-sent events in OpenAI's chunk format: (chat) a role chunk per choice, then text chunks
   * as the policy streams it through `onText` (all at the end for a policy that does not), a last chunk per
   * choice with its `finish_reason` (and what is known only at the end: log-probs, token ids), a usage chunk
   * when asked, and `data: [DONE]`. A failure after the headers went out is an `error` event.
   */
  const streamAnswer = async (
    served: ServedModel,
    response: ServerResponse,
    requests: GenerationRequest[],
    kind: 'chat' | 'text',
    includeUsage: boolean,
    answer: (completions: Completion[]) => { choices: Record<string, unknown>[]; usage: unknown; prompt_token_ids?: number[] },
    timing: RequestTiming,
    choicesPerPrompt: number,
  ) => {
    checkHealthy()
    const base = {
      id: `${kind === 'chat' ? 'chatcmpl' : 'cmpl'}-${randomUUID()}`,
      object: kind === 'chat' ? 'chat.completion.chunk' : 'text_completion',
      created: Math.floor(Date.now() / 1000),
      model: served.name,
    }
    const sendChecked = (data: unknown) => {
      sendEvent(response, data)
      // A client that does not read keeps its socket open while the answer piles up here: cut it (its generation is
      // aborted when the response closes) rather than buffer without limit.
      if (!response.destroyed && response.writableLength > settings.maxStreamBufferBytes) {
        slowClientsCut++
        response.destroy()
      }
    }
    const send = (choices: Record<string, unknown>[], extra: Record<string, unknown> = {}) =>
      sendChecked({ ...base, choices, ...(includeUsage ? { usage: null } : {}), ...extra })
    const textChoice = (index: number, text: string) =>
      kind === 'chat' ? { index, delta: { content: text }, logprobs: null, finish_reason: null } : { index, text, logprobs: null, finish_reason: null }
    response.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', 'x-accel-buffering': 'no' })
    if (kind === 'chat') send(requests.map((_, index) => ({ index, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null })))
    const streamed = requests.map(() => '')
    let completions: Completion[]
    try {
      completions = await generate(served, requests, response, timing, (index, text) => {
        if (text === '' || index < 0 || index >= requests.length) return
        streamed[index] += text
        send([textChoice(index, text)])
      })
    } catch (error) {
      const failure = error instanceof HttpError ? error : new HttpError(500, `Internal error: ${describeError(error)}`, 'server_error')
      sendEvent(response, { error: { message: failure.message, type: failure.type, param: failure.param, code: failure.code } })
      return endEvents(response)
    }
    recordFinished(timing, completions, choicesPerPrompt)
    const whole = answer(completions)
    whole.choices.forEach((choice, index) => {
      const text = String((kind === 'chat' ? (choice.message as { content: string }).content : choice.text) ?? '')
      // What the policy did not stream (all of it, for a policy that cannot stream).
      const rest = text.startsWith(streamed[index]!) ? text.slice(streamed[index]!.length) : ''
      if (rest !== '') send([textChoice(index, rest)])
    })
    whole.choices.forEach((choice, index) => {
      const { message: _, text: __, ...last } = choice
      const ids = index === 0 && whole.prompt_token_ids !== undefined ? { prompt_token_ids: whole.prompt_token_ids } : {}
      send([kind === 'chat' ? { ...last, delta: {} } : { ...last, text: '' }], ids)
    })
    if (includeUsage) sendChecked({ ...base, choices: [], usage: whole.usage })
    endEvents(response)
  }

  const toHttpError = (error: unknown): HttpError => {
    const failure = GenerationBatchError.isInstance(error) ? (error.errors.find((each) => each !== undefined) ?? error) : error
    const detail = describeError(failure)
    if (isFatal(failure) || isFatal(error)) {
      markUnhealthy(failure)
      return new HttpError(500, `The policy failed: ${detail} (a fatal error: the server is unhealthy from now on)`, 'server_error')
    }
    if (isContextLengthError(failure)) return new HttpError(400, detail, 'invalid_request_error', 'context_length_exceeded', 'messages')
    if (InvalidArgumentError.isInstance(failure))
      return new HttpError(400, `The policy refused the request: ${detail}`, 'invalid_request_error', 'invalid_value')
    return new HttpError(500, `The policy failed: ${detail}`, 'server_error')
  }

  const chatAnswer = (chat: ChatCompletionRequest, completions: Completion[]) => {
    const withIds = chat.return_token_ids === true
    return {
      id: `chatcmpl-${randomUUID()}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: chat.model,
      choices: completions.map((completion, index) => ({
        index,
        message: { role: 'assistant', content: completion.text, refusal: null },
        logprobs: chat.logprobs === true ? chatLogprobs(completion, chat.top_logprobs ?? 0, settings.tokenizer) : null,
        finish_reason: completion.finishReason,
        ...(withIds ? { token_ids: Array.from(completion.tokenIds) } : {}),
      })),
      usage: usage(completions, chat.n ?? 1),
      ...(withIds ? { prompt_token_ids: Array.from(completions[0]?.promptTokenIds ?? []) } : {}),
    }
  }

  const completionAnswer = (plain: CompletionRequest, completions: Completion[], n: number) => {
    const withIds = plain.return_token_ids === true
    return {
      id: `cmpl-${randomUUID()}`,
      object: 'text_completion',
      created: Math.floor(Date.now() / 1000),
      model: plain.model,
      choices: completions.map((completion, index) => ({
        index,
        text: completion.text,
        logprobs: plain.logprobs == null ? null : completionLogprobs(completion, plain.logprobs, settings.tokenizer),
        finish_reason: completion.finishReason,
        ...(withIds ? { prompt_token_ids: Array.from(completion.promptTokenIds), token_ids: Array.from(completion.tokenIds) } : {}),
      })),
      usage: usage(completions, n),
    }
  }

  // Node checks the header and request timeouts every connectionsCheckingInterval ms (30 s by default).
  const checkingIntervalMs = Math.max(10, Math.min(1_000, Math.floor(settings.headersTimeoutMs / 4)))
  const server = createServer({ connectionsCheckingInterval: checkingIntervalMs }, (request, response) => {
    response.setHeader('x-request-id', `req-${randomUUID()}`)
    response.once('finish', () => {
      answers[response.statusCode] = (answers[response.statusCode] ?? 0) + 1
    })
    handle(request, response).catch((error: unknown) => {
      if (error instanceof HttpError) {
        const body: OpenAIErrorBody = { error: { message: error.message, type: error.type, param: error.param, code: error.code } }
        return sendJson(response, error.status, body, error.headers)
      }
      const message = error instanceof Error ? error.message : String(error)
      sendJson(response, 500, { error: { message: `Internal error: ${message}`, type: 'server_error', param: null, code: null } })
    })
  })
  server.headersTimeout = settings.headersTimeoutMs
  server.requestTimeout = settings.requestTimeoutMs
  server.maxConnections = settings.maxConnections
  server.on('connection', (socket) => {
    connections++
    socket.once('close', () => connections--)
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(settings.port, settings.host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const { port } = server.address() as AddressInfo
  const host = settings.host.includes(':') ? `[${settings.host}]` : settings.host
  let closing: Promise<void> | undefined
  return {
    url: `http://${host}:${port}/v1`,
    port,
    modelId,
    stats,
    health: () => {
      if (fatal !== undefined) return { healthy: false, error: fatal.message }
      const stuck = stalled()
      return stuck === undefined ? { healthy: true } : { healthy: false, stalled: true, error: stuck }
    },
    close() {
      closing ??= new Promise<void>((resolve) => {
        eventLoopDelay.disable()
        lifetime.abort(new Error('the server closed'))
        server.close(() => resolve())
        server.closeAllConnections()
      })
      return closing
    },
  }
}

/**
 * Whether a `Host` header may reach the server: an IP address (v4, or v6 in brackets) or `localhost` with any port, or
 * a name of `allowed` (`.name` also its subdomains; `'*'` anything). A DNS name an attacker rebinds to this machine is
 * neither, so a page of theirs cannot talk to a server on loopback. `ludic serve` and `ludic view` both check with it.
 */
export function allowedHostRule(allowed: readonly string[]): (host: string | undefined) => boolean {
  if (allowed.includes('*')) return () => true
  const names = allowed.map((name) => name.toLowerCase())
  return (header) => {
    if (header === undefined) return true // HTTP/1.0 without Host: not a browser
    const match = /^(\[[0-9a-f:.]+\]|[^:]+)(?::\d{1,5})?$/i.exec(header.trim())
    if (match === null) return false
    const host = match[1]!.toLowerCase()
    if (host.startsWith('[') || isIP(host) !== 0 || host === 'localhost' || host.endsWith('.localhost')) return true
    return names.some((name) => (name.startsWith('.') ? host === name.slice(1) || host.endsWith(name) : host === name))
  }
}

function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error)
}

/** WebAssembly's trap (no DOM types here): "memory access out of bounds", emscripten's "Aborted()". */
const WebAssemblyRuntimeError = (globalThis as { WebAssembly?: { RuntimeError?: abstract new () => Error } }).WebAssembly?.RuntimeError

/** A fault the process cannot recover from: a `BackendError`, a WebAssembly trap, or an error marked `fatal: true` (causes included). */
function isFatal(error: unknown, depth = 0): boolean {
  if (typeof error !== 'object' || error === null || depth > 4) return false
  if (BackendError.isInstance(error) || (error as { fatal?: unknown }).fatal === true) return true
  if (WebAssemblyRuntimeError !== undefined && error instanceof WebAssemblyRuntimeError) return true
  return isFatal((error as { cause?: unknown }).cause, depth + 1)
}

/** `@ludic/model`'s `ContextLengthError` (an `InvalidArgumentError`), told by its marker: this package does not depend on the model. */
function isContextLengthError(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[Symbol.for('ludic.error.ContextLengthError')] === true
}

function modelNotFound(id: string): HttpError {
  return new HttpError(404, `The model '${id}' does not exist.`, 'invalid_request_error', 'model_not_found', 'model')
}

/** When a generation request arrived, and when its first text came (`/metrics`' latencies), in `performance.now()` ms. */
interface RequestTiming {
  readonly arrived: number
  firstText: number | undefined
}

/** Sampling fields shared by both endpoints, as `GenerationRequest` fields (vLLM's defaults, `min_tokens` 0 and `ignore_eos` false, left out). */
function sampling(body: ChatCompletionRequest | CompletionRequest): Omit<GenerationRequest, 'messages' | 'maxTokens'> {
  return {
    ...(body.min_tokens == null || body.min_tokens === 0 ? {} : { minTokens: body.min_tokens }),
    ...(body.ignore_eos === true ? { ignoreEos: true } : {}),
    ...(body.temperature == null ? {} : { temperature: body.temperature }),
    ...(body.top_p == null ? {} : { topP: body.top_p }),
    ...(body.top_k == null || body.top_k <= 0 ? {} : { topK: body.top_k }),
    ...(body.min_p == null ? {} : { minP: body.min_p }),
    ...(body.stop == null ? {} : { stop: typeof body.stop === 'string' ? [body.stop] : body.stop }),
    ...(body.seed == null ? {} : { seed: body.seed }),
  }
}

/** n copies of a request; with a seed, copy i > 0 gets `deriveSeed(seed, i)` so the choices differ. */
function repeat(request: GenerationRequest, n: number): GenerationRequest[] {
  return Array.from({ length: n }, (_, index) => (index === 0 || request.seed === undefined ? request : { ...request, seed: deriveSeed(request.seed, index) }))
}

function checkRequest(request: GenerationRequest): GenerationRequest {
  const result = generationRequestSchema.safeParse(request)
  if (!result.success) {
    const issue = result.error.issues[0]
    throw new HttpError(
      400,
      `Invalid request: ${issue?.message ?? 'invalid value'} (${formatPath(pathOf(issue?.path))}).`,
      'invalid_request_error',
      'invalid_value',
    )
  }
  return result.data
}

function usage(completions: readonly Completion[], choicesPerPrompt: number) {
  let promptTokens = 0
  let completionTokens = 0
  completions.forEach((completion, index) => {
    if (index % choicesPerPrompt === 0) promptTokens += completion.promptTokenIds.length
    completionTokens += completion.tokenIds.length
  })
  return { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens }
}

function pathOf(path: readonly PropertyKey[] | undefined): (string | number)[] {
  return (path ?? []).map((part) => (typeof part === 'symbol' ? String(part) : part))
}

/** Parses a body, or throws a 400 naming the parameter as OpenAI does (`messages[0].content`). */
function parseBody<Schema extends z.ZodType>(schema: Schema, body: unknown): z.output<Schema> {
  const result = schema.safeParse(body)
  if (result.success) return result.data
  const issue = result.error.issues[0]!
  const path = pathOf(issue.path)
  const param = path.length === 0 ? null : formatPath(path)
  let value: unknown = body
  for (const part of path) value = typeof value === 'object' && value !== null ? (value as Record<string | number, unknown>)[part] : undefined
  if (path.length > 0 && value === undefined && issue.code === 'invalid_type') {
    throw new HttpError(400, `Missing required parameter: '${param}'.`, 'invalid_request_error', 'missing_required_parameter', param)
  }
  const message = param === null ? `Invalid request body: ${issue.message}.` : `Invalid value for '${param}': ${issue.message}.`
  throw new HttpError(400, message, 'invalid_request_error', issue.code === 'invalid_type' ? 'invalid_type' : 'invalid_value', param)
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest()
}

/** 401 unless the request carries `Authorization: Bearer <key>`; compared as SHA-256 digests in constant time. */
function checkApiKey(request: IncomingMessage, expected: Buffer): void {
  const match = /^Bearer\s+(.+)$/i.exec(request.headers.authorization ?? '')
  if (match !== null && timingSafeEqual(digest(match[1]!.trim()), expected)) return
  discardBody(request)
  throw new HttpError(
    401,
    match === null ? 'Missing API key: send it as Authorization: Bearer <key>.' : 'Incorrect API key provided.',
    'invalid_request_error',
    'invalid_api_key',
    null,
    { 'www-authenticate': 'Bearer' },
  )
}

/** A percent-encoded part of the path; malformed encoding is a 400. */
function decodePathPart(part: string): string {
  try {
    return decodeURIComponent(part)
  } catch {
    throw new HttpError(400, `Malformed percent-encoding in the URL: ${JSON.stringify(part.slice(0, 100))}.`, 'invalid_request_error', 'invalid_url')
  }
}

/**
 * Reads and drops a request's body, so that a client still sending gets the answer rather than a reset
 * connection (closing a socket with unread data resets it). The connection stays open for its next request;
 * `requestTimeoutMs` bounds how long a body may keep coming.
 */
function discardBody(request: IncomingMessage): void {
  request.removeAllListeners('data')
  request.resume()
}

/**
 * Reads a JSON body of at most `limit` bytes: 415 unless its content type is `application/json` (a web page
 * cannot send that without a CORS preflight), 413 above the limit, 400 for broken JSON.
 */
function readJson(request: IncomingMessage, limit: number): Promise<unknown> {
  const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase()
  if (type !== 'application/json') {
    discardBody(request)
    throw new HttpError(
      415,
      `Unsupported content type ${JSON.stringify(request.headers['content-type'] ?? '')}: send the body as application/json.`,
      'invalid_request_error',
      'unsupported_media_type',
    )
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    const tooLarge = () => {
      // Keep reading (and dropping) the rest, so the client gets this answer rather than a reset connection.
      discardBody(request)
      reject(new HttpError(413, `Request body too large: the limit is ${limit} bytes.`, 'invalid_request_error', 'request_too_large'))
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size > limit) return tooLarge()
      chunks.push(chunk)
    }
    const declared = Number(request.headers['content-length'])
    if (Number.isFinite(declared) && declared > limit) return tooLarge()
    request.on('data', onData)
    request.once('error', reject)
    request.once('end', () => {
      if (size > limit) return
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown)
      } catch {
        reject(
          new HttpError(
            400,
            'We could not parse the JSON body of your request. (HINT: This likely means you are not sending valid JSON.)',
            'invalid_request_error',
            'invalid_json',
          ),
        )
      }
    })
  })
}

function sendEvent(response: ServerResponse, data: unknown): void {
  if (response.destroyed || response.writableEnded) return
  response.write(`data: ${JSON.stringify(data)}\n\n`)
}

function endEvents(response: ServerResponse): void {
  if (response.destroyed || response.writableEnded) return
  response.end('data: [DONE]\n\n')
}

function sendText(response: ServerResponse, status: number, text: string): void {
  if (response.headersSent || response.destroyed) return
  response.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(text) })
  response.end(text)
}

function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (response.headersSent || response.destroyed) return
  const text = JSON.stringify(body)
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers })
  response.end(text)
}
