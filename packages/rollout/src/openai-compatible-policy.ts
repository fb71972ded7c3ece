import {
  LudicError,
  ParseError,
  parseArgument,
  parseInput,
  tokenizerSchema,
  type Completion,
  type GenerateOptions,
  type GenerationRequest,
  type PolicyV1,
  isResponseTooLarge,
  limitResponseBody,
} from '@ludic/core'
import OpenAI from 'openai'
import { z } from 'zod'
import { createConcurrencyLimit } from './concurrency-limit.js'
import { GenerationBatchError } from './generation-batch-error.js'
import { tokenIdsFromText } from './openai-protocol.js'
import { RemotePolicyError } from './remote-policy-error.js'
import { abortableSleep, RetriesExhausted, withRetries } from './retry.js'

export const openAICompatiblePolicyOptionsSchema = z.strictObject({
  /** The server's base URL, e.g. `http://127.0.0.1:8000/v1`. */
  baseURL: z.string().refine((url) => URL.canParse(url), 'must be an absolute URL'),
  /** The model name sent as `model`. */
  model: z.string().min(1),
  /** The policy's id (turns record it; `collect`'s `learnerPolicyIds` match it). Default: `model`. */
  id: z.string().min(1).optional(),
  /** Sent as a bearer token. Default: 'EMPTY' (local servers ignore it); pass a real key explicitly. */
  apiKey: z.string().default('EMPTY'),
  /** Deadline of one attempt, in milliseconds, from sending the request to the end of the answer's body. Default: 60 000. */
  timeoutMs: z.number().positive().default(60_000),
  /** Retries after a retryable failure (connection, timeout, 408, 409, 429, 5xx). Default: 2. */
  maxRetries: z.number().int().min(0).default(2),
  /** Backoff before the first retry, doubling each time (up to 25 % jitter off). Default: 500. */
  retryDelayMs: z.number().min(0).default(500),
  /** Longest backoff, also the cap on a server's `retry-after`. Default: 8 000. */
  maxRetryDelayMs: z.number().min(0).default(8_000),
  /** HTTP requests in flight at most, over all `generate` calls of this policy (a request waiting to retry keeps its slot). Default: 32. */
  concurrency: z.number().int().min(1).default(32),
  /**
   * Fallback for token ids when the server returns none: the completion text is re-encoded (no special
   * tokens) and the prompt rendered with its chat template. See the README for the limits.
   */
  tokenizer: tokenizerSchema.optional(),
  /**
   * Ask for token ids with vLLM's `return_token_ids: true` extension (vLLM ≥ 0.10.2 and Ludic's server
   * answer with `prompt_token_ids` and `token_ids`). Set false for servers that reject unknown
   * parameters (api.openai.com). Default: true.
   */
  returnTokenIds: z.boolean().default(true),
  /**
   * When token ids or log-probs can be had neither from the server nor through `tokenizer`: true throws
   * a `ParseError`; false gives a completion with its text and empty id and log-prob arrays (fine for an
   * opponent that is never trained on). Default: true.
   */
  requireTokenIds: z.boolean().default(true),
  /**
   * Largest answer body read, in bytes: reading stops as soon as an answer grows past it (or says it will,
   * in its content-length), and the request fails with a `ParseError`. Default: 64 MiB.
   */
  maxResponseBytes: z
    .number()
    .int()
    .positive()
    .default(64 * 1024 * 1024),
  /** Extra HTTP headers on every request. */
  headers: z.record(z.string(), z.string()).optional(),
  /** A `fetch` implementation for the SDK (proxies, tests). Default: the global one. */
  fetch: z.custom<typeof fetch>((value) => typeof value === 'function', { message: 'must be a fetch function' }).optional(),
})
export type OpenAICompatiblePolicyOptions = z.input<typeof openAICompatiblePolicyOptionsSchema>

const idsSchema = z.array(z.number())
const choiceIdsFields = {
  finish_reason: z.string().nullable().optional(),
  token_ids: idsSchema.nullable().optional(),
  prompt_token_ids: idsSchema.nullable().optional(),
}
const responseSchema = z.object({
  choices: z
    .array(
      z.object({
        message: z.object({ content: z.string().nullable().optional() }),
        logprobs: z
          .object({
            content: z
              .array(z.object({ token: z.string(), logprob: z.number() }))
              .nullable()
              .optional(),
          })
          .nullable()
          .optional(),
        ...choiceIdsFields,
      }),
    )
    .min(1, 'has no choices'),
  prompt_token_ids: idsSchema.nullable().optional(),
})
/** A `/v1/completions` answer: legacy log-probs (`tokens`, `token_logprobs`); vLLM puts `prompt_token_ids` on the choice. */
const textResponseSchema = z.object({
  choices: z
    .array(
      z.object({
        text: z.string().nullable().optional(),
        logprobs: z
          .object({ tokens: z.array(z.string()).nullable().optional(), token_logprobs: z.array(z.number()).nullable().optional() })
          .nullable()
          .optional(),
        ...choiceIdsFields,
      }),
    )
    .min(1, 'has no choices'),
  prompt_token_ids: idsSchema.nullable().optional(),
})

/** What a completion is read from, whichever endpoint answered. */
interface AnswerFields {
  text: string
  finishReason: string | null | undefined
  /** The sampled tokens' strings and log-probs, when the server sent them. */
  tokens: { text: string[]; logprobs: number[] } | undefined
  tokenIds: number[] | null | undefined
  /** Where the choice's ids are, in errors. */
  choicePath: (string | number)[]
  tokensPath: (string | number)[]
  promptTokenIds: number[] | null | undefined
  promptPath: (string | number)[]
}

/**
 * A `PolicyV1` backed by an OpenAI-compatible server (vLLM, SGLang, llama.cpp, Ollama, Ludic's own
 * `serveOpenAICompatible`) through the official `openai` SDK: one chat-completions request per chat request
 * (`messages`), one `/v1/completions` request per raw-text request (`prompt`, continued as it is, as vLLM does),
 * with log-probabilities, at most `concurrency` in flight, each with its own timeout and retries (exponential
 * backoff; `retry-after` honoured).
 *
 * Token ids come from, in order: the server's `token_ids` / `prompt_token_ids` (vLLM's
 * `return_token_ids`), `token_id:<id>` token strings in the log-probs, then `tokenizer` (a chat's prompt rendered
 * with its template, a raw prompt encoded as vLLM does: special tokens read, BOS added). Log-probs always come
 * from the server. `finish_reason` other than 'length' reads as 'stop'.
 *
 * Token ids are checked: integers in [0, vocabSize) with a `tokenizer`, else non-negative int32s.
 *
 * Each attempt has one deadline (`timeoutMs`) from the request to the end of the answer's body, and reads at
 * most `maxResponseBytes`. A connection dropped before or during the answer is retried like a timeout.
 * Failures are typed: a request that fails for good becomes a `RemotePolicyError` (status, code,
 * param, attempts) or a `ParseError` (a malformed, oversized or non-JSON answer, bad token ids); if any
 * request of a batch fails, `generate` throws a `GenerationBatchError` holding the completions of the
 * others and each failure, so `collect` fails only the episodes concerned.
 *
 * `generate`'s `signal` aborts waiting, backoff and requests in flight (it rejects with the signal's
 * reason); `onText` is called once per request with its whole text when it arrives (no streaming).
 */
export function createOpenAICompatiblePolicy(options: OpenAICompatiblePolicyOptions): PolicyV1 {
  const settings = parseArgument(openAICompatiblePolicyOptionsSchema, options, 'options')
  const id = settings.id ?? settings.model
  const base = settings.baseURL.replace(/\/+$/, '')
  const chatUrl = `${base}/chat/completions`
  const textUrl = `${base}/completions`
  const urlOf = (request: GenerationRequest) => (request.messages === undefined ? textUrl : chatUrl)
  const baseFetch = settings.fetch ?? globalThis.fetch
  // Every body the SDK or this policy reads, error answers included, goes through the size limit.
  const limitedFetch: typeof fetch = async (input, init) => limitResponseBody(await baseFetch(input, init), settings.maxResponseBytes, 'maxResponseBytes')
  const client = new OpenAI({
    baseURL: settings.baseURL,
    apiKey: settings.apiKey,
    timeout: settings.timeoutMs,
    maxRetries: 0, // retries are ours: configurable backoff, attempts counted in the error
    fetch: limitedFetch,
    ...(settings.headers === undefined ? {} : { defaultHeaders: settings.headers }),
  })
  const limit = createConcurrencyLimit(settings.concurrency)

  const requestOnce = async (request: GenerationRequest, callerSignal: AbortSignal | undefined): Promise<Completion> => {
    const sampling: Record<string, unknown> = {
      model: settings.model,
      max_tokens: request.maxTokens,
      ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
      ...(request.topP === undefined ? {} : { top_p: request.topP }),
      ...(request.topK === undefined ? {} : { top_k: request.topK }), // vLLM extension
      ...(request.minP === undefined ? {} : { min_p: request.minP }), // vLLM extension
      ...(request.stop === undefined ? {} : { stop: request.stop }),
      ...(request.seed === undefined ? {} : { seed: request.seed }),
      // vLLM extensions, sent only when asked for (a server without them, such as OpenAI's, refuses unknown fields).
      ...(request.minTokens === undefined || request.minTokens === 0 ? {} : { min_tokens: request.minTokens }),
      ...(request.ignoreEos === true ? { ignore_eos: true } : {}),
      ...(settings.returnTokenIds ? { return_token_ids: true } : {}),
    }
    const source = `the answer of ${urlOf(request)}`
    const { messages, prompt } = request
    if (messages === undefined) {
      // A raw text, continued as it is (vLLM's /v1/completions); `logprobs: 1` is the legacy form (the sampled token's).
      const body = { ...sampling, prompt: prompt ?? '', logprobs: 1 }
      return withDeadline(settings.timeoutMs, callerSignal, async (signal) => {
        const response = await client.completions.create(body as unknown as OpenAI.CompletionCreateParamsNonStreaming, { signal }).asResponse()
        const answer = parseInput(textResponseSchema, parseJson(await readBody(response, signal, source), source), { source })
        const choice = answer.choices[0]!
        const logprobs = choice.logprobs
        return toCompletion(
          {
            text: choice.text ?? '',
            finishReason: choice.finish_reason,
            tokens: logprobs?.tokens == null || logprobs.token_logprobs == null ? undefined : { text: logprobs.tokens, logprobs: logprobs.token_logprobs },
            tokenIds: choice.token_ids,
            choicePath: ['choices', 0],
            tokensPath: ['choices', 0, 'logprobs', 'tokens'],
            ...serverPromptIds(answer),
          },
          source,
          () => settings.tokenizer?.encode(prompt ?? ''),
        )
      })
    }
    const body = {
      ...sampling,
      messages: messages.map((message) => ({
        role: message.role,
        content: message.content,
        ...(message.name === undefined ? {} : { name: message.name }),
      })),
      logprobs: true,
    }
    // One deadline for the whole attempt, the answer's body included (the SDK's own timeout ends with the headers).
    return withDeadline(settings.timeoutMs, callerSignal, async (signal) => {
      const response = await client.chat.completions.create(body as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming, { signal }).asResponse()
      const answer = parseInput(responseSchema, parseJson(await readBody(response, signal, source), source), { source })
      const choice = answer.choices[0]!
      const content = choice.logprobs?.content ?? undefined
      // The tokenizer's template only when the server sent no prompt ids (a tokenizer without one may throw).
      const rendered = () => {
        const text = settings.tokenizer?.applyChatTemplate?.(messages, { addGenerationPrompt: true })
        return text === undefined ? undefined : settings.tokenizer!.encode(text, { addSpecialTokens: false })
      }
      return toCompletion(
        {
          text: choice.message.content ?? '',
          finishReason: choice.finish_reason,
          tokens: content === undefined ? undefined : { text: content.map((token) => token.token), logprobs: content.map((token) => token.logprob) },
          tokenIds: choice.token_ids,
          choicePath: ['choices', 0],
          tokensPath: ['choices', 0, 'logprobs', 'content'],
          ...serverPromptIds(answer),
        },
        source,
        rendered,
      )
    })
  }

  /** The answer's text; a connection dropped while reading it is a (retryable) connection error. */
  const readBody = async (response: Response, signal: AbortSignal, source: string): Promise<string> => {
    try {
      return await response.text()
    } catch (error) {
      if (signal.aborted) throw signal.reason
      if (isResponseTooLarge(error)) {
        throw new ParseError({
          source,
          message: `is larger than maxResponseBytes (${error.limit} bytes); raise the option if answers are meant to be this large`,
        })
      }
      throw new OpenAI.APIConnectionError({ message: 'The connection dropped while the answer was read', cause: error instanceof Error ? error : undefined })
    }
  }

  const parseJson = (text: string, source: string): unknown => {
    try {
      return JSON.parse(text) as unknown
    } catch (error) {
      throw new ParseError({ source, message: `is not JSON (${error instanceof Error ? error.message : String(error)})`, cause: error })
    }
  }

  /** Ids as sent, checked: integers in [0, vocabSize) with a tokenizer, else non-negative int32s (`pathOf` locates id i in the answer). */
  const checkedIds = (ids: readonly number[], source: string, pathOf: (index: number) => (string | number)[]): Int32Array => {
    const limit = settings.tokenizer?.vocabSize ?? 2 ** 31
    for (const [index, tokenId] of ids.entries()) {
      if (Number.isInteger(tokenId) && tokenId >= 0 && tokenId < limit) continue
      const range = settings.tokenizer === undefined ? `[0, 2^31) (a non-negative int32)` : `[0, ${limit}) (the tokenizer's vocabulary)`
      throw new ParseError({ source, path: pathOf(index), message: `is ${tokenId}, not a token id: an integer in ${range}` })
    }
    return Int32Array.from(ids)
  }

  /** `fallbackPromptIds` is asked only when the server sent no prompt ids. */
  const toCompletion = (answer: AnswerFields, source: string, fallbackPromptIds: () => Int32Array | undefined): Completion => {
    const { text, tokens, choicePath, tokensPath, promptPath } = answer
    const finishReason = answer.finishReason === 'length' ? 'length' : 'stop'
    const logprobs = tokens === undefined ? undefined : Float32Array.from(tokens.logprobs)
    const idsFromText = tokens === undefined ? undefined : tokenIdsFromText(tokens.text)
    const tokenIds =
      (answer.tokenIds == null ? undefined : checkedIds(answer.tokenIds, source, (index) => [...choicePath, 'token_ids', index])) ??
      (idsFromText === undefined
        ? undefined
        : checkedIds(idsFromText, source, (index) => [...tokensPath, index, ...(tokensPath.at(-1) === 'content' ? ['token'] : [])])) ??
      settings.tokenizer?.encode(text, { addSpecialTokens: false })
    const promptTokenIds = answer.promptTokenIds == null ? fallbackPromptIds() : checkedIds(answer.promptTokenIds, source, (index) => [...promptPath, index])

    const missing = [tokenIds === undefined && 'token ids', logprobs === undefined && 'log-probs', promptTokenIds === undefined && 'prompt token ids'].filter(
      Boolean,
    )
    if (missing.length > 0 && settings.requireTokenIds) {
      throw new ParseError({
        source,
        path: choicePath,
        message: `has no ${missing.join(', ')}; use a server that returns them (vLLM with return_token_ids), pass a tokenizer, or set requireTokenIds: false`,
      })
    }
    if (tokenIds !== undefined && logprobs !== undefined && tokenIds.length !== logprobs.length) {
      const how = answer.tokenIds == null ? ' (ids re-tokenised with the tokenizer, which need not reproduce the sampled tokens)' : ''
      throw new ParseError({
        source,
        path: [...choicePath, 'logprobs'],
        message: `has ${logprobs.length} log-probs for ${tokenIds.length} token ids${how}`,
      })
    }
    const complete = tokenIds !== undefined && logprobs !== undefined
    return {
      text,
      promptTokenIds: promptTokenIds ?? new Int32Array(0),
      tokenIds: complete ? tokenIds : new Int32Array(0),
      logprobs: complete ? logprobs : new Float32Array(0),
      finishReason,
    }
  }

  const requestWithRetries = (request: GenerationRequest, signal: AbortSignal | undefined): Promise<Completion> =>
    limit
      .run(
        () =>
          withRetries(() => requestOnce(request, signal), {
            maxRetries: settings.maxRetries,
            initialDelayMs: settings.retryDelayMs,
            maxDelayMs: settings.maxRetryDelayMs,
            shouldRetry: retryDecision,
            sleep: (milliseconds) => abortableSleep(milliseconds, signal),
          }),
        signal,
      )
      .catch((error: unknown) => {
        throw error instanceof RetriesExhausted ? toTypedError(error.error, error.attempts, urlOf(request)) : error
      })

  const toTypedError = (error: unknown, attempts: number, url: string): unknown => {
    if (!(error instanceof OpenAI.APIError) || error instanceof OpenAI.APIUserAbortError) return error
    const retryable = retryDecision(error) !== false
    if (error instanceof OpenAI.APIConnectionError) {
      const kind = error instanceof OpenAI.APIConnectionTimeoutError ? 'timeout' : 'connection'
      const detail = error.cause instanceof Error ? `${error.message} (${error.cause.message})` : error.message
      return new RemotePolicyError({ policyId: id, url, kind, attempts, retryable, detail, cause: error })
    }
    return new RemotePolicyError({
      policyId: id,
      url,
      kind: 'http',
      status: error.status,
      type: error.type ?? undefined,
      code: error.code ?? undefined,
      param: error.param ?? undefined,
      attempts,
      retryable,
      detail: error.message,
      cause: error,
    })
  }

  return {
    specificationVersion: 'v1',
    id,
    async generate(requests: readonly GenerationRequest[], options: GenerateOptions = {}): Promise<Completion[]> {
      const { signal, onText } = options
      signal?.throwIfAborted()
      const settled = await Promise.allSettled(
        requests.map(async (request, index) => {
          const completion = await requestWithRetries(request, signal)
          onText?.(index, completion.text) // no streaming: the whole text at once, as the contract allows
          return completion
        }),
      )
      signal?.throwIfAborted()
      if (settled.every((result) => result.status === 'fulfilled')) return settled.map((result) => result.value)
      throw new GenerationBatchError({
        policyId: id,
        completions: settled.map((result) => (result.status === 'fulfilled' ? result.value : undefined)),
        errors: settled.map((result) => (result.status === 'rejected' ? (result.reason ?? new LudicError('request failed')) : undefined)),
      })
    },
  }
}

/**
 * Runs `work` with a signal that aborts after `timeoutMs` or when the caller's signal does, and rejects then
 * whatever `work` does (a body read that ignores the signal cannot keep it waiting): after `timeoutMs` with the
 * SDK's `APIConnectionTimeoutError`, so that the deadline reads as the SDK's own timeout (retryable, kind
 * 'timeout'); on the caller's abort with its reason (never retried).
 */
async function withDeadline<T>(timeoutMs: number, callerSignal: AbortSignal | undefined, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  callerSignal?.throwIfAborted()
  const controller = new AbortController()
  let timer: ReturnType<typeof setTimeout> | undefined
  let onCallerAbort: (() => void) | undefined
  const ended = new Promise<never>((_, reject) => {
    const end = (reason: unknown) => {
      controller.abort(reason)
      reject(reason)
    }
    timer = setTimeout(
      () => end(new OpenAI.APIConnectionTimeoutError({ message: `No complete answer within ${timeoutMs} ms (timeoutMs, the body included)` })),
      timeoutMs,
    )
    onCallerAbort = () => end(callerSignal!.reason)
    callerSignal?.addEventListener('abort', onCallerAbort, { once: true })
  })
  const working = work(controller.signal)
  working.catch(() => {}) // once ended, its rejection (the abort) is no one's concern
  try {
    return await Promise.race([working, ended])
  } finally {
    clearTimeout(timer)
    if (onCallerAbort !== undefined) callerSignal?.removeEventListener('abort', onCallerAbort)
  }
}

/** The SDK's retry rule (honouring `x-should-retry` and `retry-after(-ms)`), for one failed attempt. */
function retryDecision(error: unknown): boolean | { delayMs: number } {
  if (!(error instanceof OpenAI.APIError) || error instanceof OpenAI.APIUserAbortError) return false
  if (error instanceof OpenAI.APIConnectionError) return true
  const headers = error.headers
  const should = headers?.get('x-should-retry')
  if (should === 'false') return false
  const status = error.status ?? 0
  if (should !== 'true' && !(status === 408 || status === 409 || status === 429 || status >= 500)) return false
  const afterMs = Number.parseFloat(headers?.get('retry-after-ms') ?? '')
  if (Number.isFinite(afterMs)) return { delayMs: afterMs }
  const after = headers?.get('retry-after')
  if (after != null) {
    const seconds = Number.parseFloat(after)
    const delayMs = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(after) - Date.now()
    if (Number.isFinite(delayMs)) return { delayMs }
  }
  return true
}

/** The prompt ids a server sent (on the answer, as vLLM's chat, or on the first choice, as its completions) and where. */
function serverPromptIds(answer: { prompt_token_ids?: number[] | null | undefined; choices: { prompt_token_ids?: number[] | null | undefined }[] }) {
  return answer.prompt_token_ids == null
    ? { promptTokenIds: answer.choices[0]!.prompt_token_ids, promptPath: ['choices', 0, 'prompt_token_ids'] }
    : { promptTokenIds: answer.prompt_token_ids, promptPath: ['prompt_token_ids'] }
}
