import { InvalidArgumentError, parseArgument, tokenizerSchema, type FinishReason, yieldToEventLoop } from '@ludic/core'
import * as tf from '@tensorflow/tfjs-core'
import { z } from 'zod'
import type { CausalLanguageModel } from '../model/causal-language-model.js'
import { checkContextLength } from '../model/context-length.js'
import { checkGenerationRow, createTextStream, firstStop, type GeneratedSequence, type GenerationRow, samplingRowOf } from './generate.js'
import { HostDecoder, hostDecoderFloats } from './host-decoder.js'
import { type SampledToken, sampleTokens } from './sampling.js'

export const generationEngineOptionsSchema = z.strictObject({
  /** Rows decoded together at most (each holds one sequence's keys and values). Default: 64. */
  maxRows: z.number().int().min(1).max(1024).default(64),
  /**
   * Positions a row holds at most (prompt + new tokens); a request past it is refused at `submit`. Default: the
   * model's context (`maxContextTokens`), at most 2,048.
   */
  maxSequenceLength: z.number().int().min(1).optional(),
  /**
   * Bytes of keys and values (float32, every layer) the engine holds at most: the rows are `min(maxRows, kvCacheBytes /
   * a row's bytes)`, refused when not even one fits. Default: 256 MiB.
   */
  kvCacheBytes: z
    .number()
    .int()
    .min(1)
    .default(2 ** 28),
  /**
   * Prompt tokens computed per scheduler iteration at most (chunked prefill): a long prompt is split over iterations,
   * with a decode step of the running rows between its chunks. Default: 256.
   */
  prefillChunkTokens: z.number().int().min(1).max(8192).default(256),
  /**
   * Keep a finished sequence's keys and values in its row until the row is needed (least recently used first), and start
   * a new request from the longest prefix of its prompt held by any row (running or finished). Default: true.
   */
  prefixCaching: z.boolean().default(true),
  /**
   * Where prompt tokens are computed: `'host'` (the host decoder's kernel, as the decode steps: a token's keys and
   * values, so its samples, the same bit for bit however it was batched), or `'backend'` (`model.hiddenStates` on the
   * TensorFlow.js backend, an iteration's parts as one padded batch with their held positions as its cache; the same up
   * to float32 rounding). Measured on the 2-core machine (the bench's `engine` suite, `prefill` option), `'backend'` was
   * no faster on native TensorFlow and slower on short self-play prompts (each iteration's small batch pays the
   * backend's per-op cost); it is there for backends whose products are much faster than the host's. Models with a
   * sliding window always use `'host'`. Default: `'host'`.
   */
  prefill: z.enum(['host', 'backend']).default('host'),
  /**
   * Threads sharing the host decoder's work (the calling thread and worker threads over a shared WebAssembly memory):
   * the weight products, as `generate`'s `decodeThreads`, and each decode step's attention rows and each prefill's
   * attention parts (`attention-rows.ts`; with `products: 'backend'` the only shared work). The same results bit for
   * bit at any count. Default: 1.
   */
  threads: z.number().int().min(1).max(64).default(1),
  /**
   * Where the weight products (q, k, v, the output projection, the MLP, the head) run: `'host'` (the host decoder's
   * WebAssembly kernel, `threads` of it), or `'backend'` (`tf.matMul` on the TensorFlow.js backend, with the SwiGLU
   * activation between the MLP's products, over the engine's own copy of the weights there): for native TensorFlow,
   * whose multithreaded products run a large batch's step about twice as fast, where each call's fixed cost makes
   * small batches slower (the package README's "Large batches" has the figures). Attention, norms, RoPE and sampling
   * stay on the host (attention shared with `threads`' workers). A request's samples still do not depend on what else runs (from two rows on, the backend's
   * product of a row does not depend on the batch, and a lone row is given twice: tested on both backends), but differ
   * from `'host'`'s in float32 rounding. Default: `'host'`.
   */
  products: z.enum(['host', 'backend']).default('host'),
  /** Decodes `text`, finds stop strings and streams text (`submit`'s `onText`). */
  tokenizer: tokenizerSchema.optional(),
})
export type GenerationEngineOptions = z.input<typeof generationEngineOptionsSchema>

/** A sequence the engine generated: `GeneratedSequence`, and the weights version each token was sampled under. */
export interface EngineSequence extends GeneratedSequence {
  /**
   * For each token of `tokenIds`, the engine's `weightsVersion` when it was sampled: a sequence that was running when
   * the model's weights changed continues on the new ones (its keys and values recomputed), so its tokens can come
   * from more than one version (a partial rollout).
   */
  weightsVersions: Int32Array
  /** Prompt tokens whose keys and values were taken from a row that held them (a shared prefix), not computed. */
  reusedPromptTokens: number
}

/** What `submit` takes besides the row. */
export interface EngineSubmitControls {
  /** Takes the request out of the queue, or out of its row at the next iteration; `submit` rejects with its reason. */
  signal?: AbortSignal
  /** The request's new text as it is produced, whole characters (needs the engine's `tokenizer`). */
  onText?: (text: string) => void
}

/** Counters since the engine was made, and its state now. */
export interface EngineStats {
  /** Requests running now (prefilling or decoding). */
  running: number
  /** Requests waiting for a row. */
  waiting: number
  /** Rows (the most sequences held at once). */
  rows: number
  /** Positions a row holds. */
  rowLength: number
  /** Positions holding a running sequence's keys and values, over all rows' positions (0 … 1). */
  kvUsage: number
  /** Rows holding a finished sequence's keys and values for reuse. */
  cachedRows: number
  requests: number
  finished: number
  aborted: number
  /** Prompt tokens of admitted requests. */
  promptTokens: number
  /** Of them, taken from a row that held them (shared prefix) instead of computed. */
  reusedPromptTokens: number
  /** Tokens whose keys and values were computed (prompts, and sequences recomputed after new weights). */
  computedTokens: number
  generatedTokens: number
  /** Scheduler iterations with a decode step. */
  decodeSteps: number
  /** Times the weights changed under the engine (its `weightsVersion`). */
  weightsVersion: number
  /** Sum of the finished requests' times from `submit` to their first token, in seconds. */
  timeToFirstTokenSeconds: number
  /** Sum of the finished requests' times from `submit` to their end, in seconds. */
  requestSeconds: number
  /** Time spent computing prompts (and recomputing sequences after new weights), in seconds. */
  prefillSeconds: number
  /** Time spent in decode steps and sampling, in seconds. */
  decodeSeconds: number
}

interface Request {
  row: GenerationRow
  /** The prompt, then the generated tokens. */
  tokens: number[]
  promptLength: number
  /** Tokens of `tokens` whose keys and values are in the row (a prefix of it). */
  held: number
  slot: number
  generated: number[]
  logprobs: number[]
  versions: number[]
  reused: number
  /** A running request still computing the prefix this one shares: copied from its row once it holds it. */
  follow: { donor: Request; length: number } | undefined
  finishReason: FinishReason | undefined
  text: string | undefined
  stream: ReturnType<typeof createTextStream> | undefined
  onText: ((text: string) => void) | undefined
  submitted: number
  /** Arrival order. */
  order: number
  firstToken: number | undefined
  resolve(sequence: EngineSequence): void
  reject(error: unknown): void
  abort: (() => void) | undefined
  signal: AbortSignal | undefined
}

/** A row's contents: free, running a request, or holding a finished sequence's keys and values (`tokens`, `held` of them). */
type Slot = { state: 'free' } | { state: 'running'; request: Request } | { state: 'cached'; tokens: number[]; held: number; used: number }

/**
 * `new GenerationEngine(model, options)` for a caller whose own option holds the engine's settings (`argument`: the
 * local policy's `options.engine`, the trainer's `config.batch.engine`): a setting the engine refuses is named there
 * (`<argument>.kvCacheBytes` rather than the engine's own `options.kvCacheBytes`), as the caller's user wrote it.
 */
export function createGenerationEngine(model: CausalLanguageModel, options: GenerationEngineOptions, argument: string): GenerationEngine {
  try {
    return new GenerationEngine(model, options)
  } catch (error) {
    if (!(error instanceof InvalidArgumentError) || !error.argument.startsWith('options.')) throw error
    throw new InvalidArgumentError({
      argument: `${argument}.${error.argument.slice('options.'.length)}`,
      value: error.value,
      message: error.message.slice(error.message.indexOf('): ') + 3),
      cause: error,
    })
  }
}

/**
 * A generation engine with iteration-level scheduling (Orca; vLLM's continuous batching) on the host decoder: requests
 * join a running decode loop as soon as a row is free and their prompt is computed, and leave it the step they finish,
 * so a long request never holds the short ones back and a finished row is reused at once. Each iteration computes up
 * to `prefillChunkTokens` prompt tokens of the admitted requests (first come, first served; a long prompt in chunks),
 * then one decode step of every running row, each at its own length (no padding). A new request starts from the
 * longest prefix of its prompt any row holds (SGLang's RadixAttention and vLLM's prefix caching share the idea;
 * here a prefix is copied between rows rather than shared in pages): the G samples of a GRPO group compute their
 * prompt once, a multi-turn episode's next turn reuses the conversation so far. When the model's weights change (a
 * training step), running sequences keep their tokens, their keys and values are recomputed on the new weights and
 * they continue (partial rollouts, as verl's and AReaL's interruptible generation), each token tagged with the
 * `weightsVersion` it was sampled under; cached rows are dropped.
 *
 * Sampling is per request (its own `Random`) and each row's logits depend on its own tokens only, so a request's
 * samples do not depend on what else runs: the same as the request run alone, bit for bit. Every architecture the
 * model defines (Llama, Qwen2's biases, Qwen3's query/key norms, Mistral's sliding window, GPT-2's LayerNorms, learned
 * positions and GELU MLP), on `HostDecoder`. Between iterations it yields to the event loop.
 */
export class GenerationEngine {
  private readonly options: z.output<typeof generationEngineOptionsSchema>
  readonly rows: number
  readonly rowLength: number
  private decoder: HostDecoder | undefined
  private readonly slots: Slot[]
  private readonly waiting: Request[] = []
  private running = false
  private disposed = false
  private clock = 0
  private version = 0
  private readonly counters = {
    requests: 0,
    finished: 0,
    aborted: 0,
    promptTokens: 0,
    reusedPromptTokens: 0,
    computedTokens: 0,
    generatedTokens: 0,
    decodeSteps: 0,
    timeToFirstTokenSeconds: 0,
    requestSeconds: 0,
    prefillSeconds: 0,
    decodeSeconds: 0,
  }

  constructor(
    /** The model it generates with (its weights as they are at each step). */
    readonly model: CausalLanguageModel,
    options: GenerationEngineOptions = {},
  ) {
    this.options = parseArgument(generationEngineOptionsSchema, options, 'options')
    const { config } = model
    const rowLength = this.options.maxSequenceLength ?? Math.min(model.maxContextTokens, 2048)
    checkContextLength(model, rowLength, { argument: 'options.maxSequenceLength', value: rowLength, what: `maxSequenceLength (${rowLength})` })
    const rowBytes = 2 * 4 * config.numHiddenLayers * config.numKeyValueHeads * config.headDim * Math.ceil(rowLength / 4) * 4
    const rows = Math.min(this.options.maxRows, Math.floor(this.options.kvCacheBytes / rowBytes))
    if (rows < 1) {
      throw new InvalidArgumentError({
        argument: 'options.kvCacheBytes',
        value: this.options.kvCacheBytes,
        message: `holds no row: one row of ${rowLength} positions takes ${rowBytes} bytes (lower maxSequenceLength or raise kvCacheBytes)`,
      })
    }
    const floats = hostDecoderFloats(config, rows, rowLength, this.options.prefillChunkTokens)
    if (floats > 2 ** 30 - 2 ** 20) {
      throw new InvalidArgumentError({
        argument: 'options.kvCacheBytes',
        value: this.options.kvCacheBytes,
        message: `the engine would hold ${floats} floats (weights, ${rows} rows × ${rowLength} positions), past the 4 GiB a WebAssembly memory addresses: fewer rows or positions`,
      })
    }
    this.rows = rows
    this.rowLength = rowLength
    this.slots = Array.from({ length: rows }, () => ({ state: 'free' }) as Slot)
  }

  /** Times the model's weights changed under the engine (0 at first); each token records the version it was sampled under. */
  get weightsVersion(): number {
    return this.version
  }

  /**
   * Queues one sequence; resolves when it ends. Its prompt plus `maxNewTokens` must fit a row (`maxSequenceLength`),
   * its ids the vocabulary: an `InvalidArgumentError` naming `row` otherwise, before anything runs.
   */
  submit(row: GenerationRow, controls: EngineSubmitControls = {}): Promise<EngineSequence> {
    if (this.disposed) return Promise.reject(new InvalidArgumentError({ argument: 'engine', value: 'disposed', message: 'was disposed' }))
    try {
      checkGenerationRow(row, this.model.config.vocabSize, { prompt: 'row.promptIds', row: 'row' })
    } catch (error) {
      return Promise.reject(error)
    }
    if (row.promptIds.length + row.maxNewTokens > this.rowLength) {
      return Promise.reject(
        new InvalidArgumentError({
          argument: 'row.maxNewTokens',
          value: row.maxNewTokens,
          message: `the prompt (${row.promptIds.length} tokens) + maxNewTokens (${row.maxNewTokens}) exceed the engine's ${this.rowLength} positions a row (maxSequenceLength)`,
        }),
      )
    }
    const { signal, onText } = controls
    if (onText !== undefined && this.options.tokenizer === undefined)
      return Promise.reject(new InvalidArgumentError({ argument: 'controls.onText', value: onText, message: "needs the engine's tokenizer" }))
    if (row.stopStrings.length > 0 && this.options.tokenizer === undefined)
      return Promise.reject(new InvalidArgumentError({ argument: 'row.stopStrings', value: row.stopStrings, message: "need the engine's tokenizer" }))
    if (signal?.aborted) return Promise.reject(signal.reason)
    return new Promise<EngineSequence>((resolve, reject) => {
      const request: Request = {
        row,
        tokens: Array.from(row.promptIds),
        promptLength: row.promptIds.length,
        held: 0,
        slot: -1,
        generated: [],
        logprobs: [],
        versions: [],
        reused: 0,
        follow: undefined,
        finishReason: undefined,
        text: undefined,
        stream: onText === undefined ? undefined : createTextStream(this.options.tokenizer!, row.stopStrings),
        onText,
        submitted: performance.now(),
        order: this.counters.requests,
        firstToken: undefined,
        resolve,
        reject,
        abort: undefined,
        signal,
      }
      if (signal !== undefined) {
        request.abort = () => this.cancel(request, signal.reason)
        signal.addEventListener('abort', request.abort, { once: true })
      }
      this.counters.requests++
      this.waiting.push(request)
      this.start()
    })
  }

  /** Counters since the engine was made, and its state now. */
  stats(): EngineStats {
    let running = 0
    let held = 0
    let cachedRows = 0
    for (const slot of this.slots) {
      if (slot.state === 'running') {
        running++
        held += slot.request.held
      } else if (slot.state === 'cached') cachedRows++
    }
    return {
      running,
      waiting: this.waiting.length,
      rows: this.rows,
      rowLength: this.rowLength,
      kvUsage: held / (this.rows * this.rowLength),
      cachedRows,
      ...this.counters,
      weightsVersion: this.version,
    }
  }

  /** Rejects every queued and running request (with an `InvalidArgumentError` saying so) and frees the decoder. */
  dispose(): void {
    if (this.disposed) return
    this.disposed = true
    const gone = new InvalidArgumentError({ argument: 'engine', value: 'disposed', message: 'was disposed while the request ran' })
    for (const request of [...this.waiting]) this.cancel(request, gone)
    for (const slot of this.slots) if (slot.state === 'running') this.cancel(slot.request, gone)
    // At once, even while the loop runs: it is between iterations here (each is synchronous) and ends at its next check.
    this.releaseDecoder()
  }

  private releaseDecoder(): void {
    this.decoder?.dispose()
    this.decoder = undefined
    this.slots.fill({ state: 'free' })
  }

  private cancel(request: Request, reason: unknown): void {
    const index = this.waiting.indexOf(request)
    if (index >= 0) this.waiting.splice(index, 1)
    else if (request.slot >= 0 && this.slots[request.slot]?.state === 'running') {
      // Its keys and values so far stay for reuse.
      this.slots[request.slot] = { state: 'cached', tokens: request.tokens, held: request.held, used: this.clock++ }
    } else return
    this.counters.aborted++
    this.settle(request)
    request.reject(reason)
  }

  private settle(request: Request): void {
    if (request.abort !== undefined) request.signal?.removeEventListener('abort', request.abort)
  }

  private start(): void {
    if (this.running) return
    this.running = true
    void this.loop()
  }

  private async loop(): Promise<void> {
    try {
      while (!this.disposed && (this.waiting.length > 0 || this.slots.some((slot) => slot.state === 'running'))) {
        this.iterate()
        await yieldToEventLoop() // new requests, aborts, timers and I/O come in here
      }
    } catch (error) {
      // A failure of the decoder (out of memory) fails every request in flight, never hangs them.
      for (const request of [...this.waiting]) this.cancel(request, error)
      for (const slot of this.slots) if (slot.state === 'running') this.cancel(slot.request, error)
      this.releaseDecoder()
    } finally {
      this.running = false
      if (this.disposed) this.releaseDecoder()
      else if (this.waiting.length > 0) this.start()
    }
  }

  /** One scheduler iteration: new weights, admission, a prefill budget, one decode step. */
  private iterate(): void {
    this.refreshWeights()
    this.admit()
    const started = performance.now()
    this.prefill()
    const prefilled = performance.now()
    this.decode()
    this.counters.prefillSeconds += (prefilled - started) / 1000
    this.counters.decodeSeconds += (performance.now() - prefilled) / 1000
  }

  private refreshWeights(): void {
    if (this.decoder?.weightsCurrent()) return
    const fresh = this.decoder !== undefined
    this.decoder?.dispose()
    this.decoder = undefined
    this.decoder = new HostDecoder(this.model, this.rows, this.rowLength, {
      prefillLength: this.options.prefillChunkTokens,
      threads: this.options.threads,
      products: this.options.products,
    })
    if (!fresh) return
    this.version++
    this.slots.forEach((slot, index) => {
      if (slot.state === 'running')
        slot.request.held = 0 // recomputed on the new weights
      else this.slots[index] = { state: 'free' }
    })
  }

  /**
   * Gives waiting requests rows, in arrival order, each from the longest prefix of its prompt a row holds or a running
   * request will hold once its prompt is computed (then it follows that request and copies the prefix when it is there).
   */
  private admit(): void {
    while (this.waiting.length > 0) {
      const request = this.waiting[0]!
      const found = this.options.prefixCaching ? this.longestPrefix(request) : undefined
      let slot: number
      if (found !== undefined && this.slots[found.slot]!.state === 'cached') {
        slot = found.slot // continue in the row itself
        request.held = found.length
      } else {
        const free = this.freeSlot()
        if (free === undefined) return
        slot = free
        if (found !== undefined) {
          const donor = (this.slots[found.slot] as { request: Request }).request
          request.follow = { donor, length: found.length }
        }
      }
      this.waiting.shift()
      request.slot = slot
      this.counters.promptTokens += request.promptLength
      this.slots[slot] = { state: 'running', request }
      this.copyFollowed(request)
    }
  }

  /** Copies a following request's prefix from its donor's row once the donor holds it; stops following a donor that left. */
  private copyFollowed(request: Request): void {
    const { follow } = request
    if (follow === undefined) {
      if (request.held > 0 && request.reused === 0) this.countReuse(request, request.held) // took over a cached row
      return
    }
    const { donor, length } = follow
    const donorRunning = donor.slot >= 0 && this.slots[donor.slot]?.state === 'running' && (this.slots[donor.slot] as { request: Request }).request === donor
    if (donorRunning && donor.held < length) return // not there yet
    request.follow = undefined
    if (!donorRunning) return // aborted: this request computes its prompt itself
    this.decoder!.copyPositions(donor.slot, request.slot, length)
    request.held = length
    this.countReuse(request, length)
  }

  private countReuse(request: Request, length: number): void {
    request.reused = length
    this.counters.reusedPromptTokens += length
  }

  /**
   * The row holding, or running a request that will hold, the longest prefix of the request's prompt (at most its
   * length less one: the last token is fed to get the first logits), preferring a cached row, then one holding it
   * already, on ties; undefined when none has a token of it.
   */
  private longestPrefix(request: Request): { slot: number; length: number } | undefined {
    let best: { slot: number; length: number; rank: number } | undefined
    const prompt = request.tokens
    const limit = request.promptLength - 1
    this.slots.forEach((slot, index) => {
      if (slot.state === 'free') return
      if (slot.state === 'running' && slot.request.follow !== undefined) return // its donor is the better source
      const tokens = slot.state === 'running' ? slot.request.tokens : slot.tokens
      const known = Math.min(slot.state === 'running' ? slot.request.tokens.length - 1 : slot.held, limit)
      let length = 0
      while (length < known && tokens[length] === prompt[length]) length++
      if (length === 0) return
      const rank = slot.state === 'cached' ? 2 : slot.request.held >= length ? 1 : 0
      if (best === undefined || length > best.length || (length === best.length && rank > best.rank)) best = { slot: index, length, rank }
    })
    return best === undefined ? undefined : { slot: best.slot, length: best.length }
  }

  /** A free row, else the least recently used cached one; undefined when every row runs. */
  private freeSlot(): number | undefined {
    let oldest: number | undefined
    let oldestUse = Number.POSITIVE_INFINITY
    for (let index = 0; index < this.slots.length; index++) {
      const slot = this.slots[index]!
      if (slot.state === 'free') return index
      if (slot.state === 'cached' && slot.used < oldestUse) {
        oldest = index
        oldestUse = slot.used
      }
    }
    return oldest
  }

  /** Computes up to `prefillChunkTokens` tokens of the running requests that hold less than all but their last token. */
  private prefill(): void {
    let budget = this.options.prefillChunkTokens
    const running: Request[] = []
    for (const slot of this.slots) if (slot.state === 'running') running.push(slot.request)
    running.sort((a, b) => a.order - b.order) // first come, first served
    for (const request of running) if (request.follow !== undefined) this.copyFollowed(request)
    const parts: { slot: number; tokens: Int32Array; start: number }[] = []
    for (const request of running) {
      if (budget === 0) break
      if (request.follow !== undefined) continue
      const missing = request.tokens.length - 1 - request.held
      if (missing <= 0) continue
      const count = Math.min(missing, budget)
      parts.push({ slot: request.slot, tokens: Int32Array.from(request.tokens.slice(request.held, request.held + count)), start: request.held })
      request.held += count
      budget -= count
    }
    if (parts.length === 0) return
    if (this.prefillOnBackend()) this.backendExtend(parts)
    else this.decoder!.extend(parts)
    this.counters.computedTokens += this.options.prefillChunkTokens - budget
  }

  /** Whether prompt tokens are computed by `model.hiddenStates` (`options.prefill`). */
  private prefillOnBackend(): boolean {
    // With a sliding window a padded batch's slots are not its positions: the host's own steps apply the window.
    return this.options.prefill === 'backend' && this.model.config.slidingWindow === null
  }

  /**
   * `HostDecoder.extend` on the backend: the parts as one batch of `model.hiddenStates`, each row its new tokens
   * left-padded to the longest and its held positions (read from its row) left-padded in the cache, the gap masked,
   * positions given; the new keys and values written back to the rows.
   */
  private backendExtend(parts: readonly { slot: number; tokens: Int32Array; start: number }[]): void {
    const decoder = this.decoder!
    const { numHiddenLayers: layers, numKeyValueHeads: keyValueHeads, headDim } = this.model.config
    const rows = parts.length
    const past = Math.max(...parts.map((part) => part.start))
    const time = Math.max(...parts.map((part) => part.tokens.length))
    const padId = this.model.config.padTokenId ?? 0
    const inputRows = parts.map(({ tokens }) => {
      const padded = new Int32Array(time).fill(padId)
      padded.set(tokens, time - tokens.length)
      return padded
    })
    const maskRows = parts.map(({ tokens, start }) => {
      const mask = new Int32Array(past + time)
      mask.fill(1, past - start, past)
      mask.fill(1, past + time - tokens.length)
      return mask
    })
    // Each new token's position in its sequence (padding: 0): the held positions are `0 … start - 1` whatever the gap.
    const positions = parts.map(({ tokens, start }) => {
      const row = new Int32Array(time)
      for (let index = 0; index < tokens.length; index++) row[time - tokens.length + index] = start + index
      return row
    })
    const cache = this.model.createCache()
    try {
      if (past > 0) {
        const block = keyValueHeads * past * headDim
        const keys = Array.from({ length: layers }, () => new Float32Array(rows * block))
        const values = Array.from({ length: layers }, () => new Float32Array(rows * block))
        parts.forEach(({ slot, start }, row) => {
          if (start === 0) return
          const held = decoder.readPositions(slot, start)
          for (let layer = 0; layer < layers; layer++) {
            for (let group = 0; group < keyValueHeads; group++) {
              const target = ((row * keyValueHeads + group) * past + past - start) * headDim
              keys[layer]!.set(held.keys[layer]!.subarray(group * start * headDim, (group + 1) * start * headDim), target)
              values[layer]!.set(held.values[layer]!.subarray(group * start * headDim, (group + 1) * start * headDim), target)
            }
          }
        })
        for (let layer = 0; layer < layers; layer++) {
          const key = tf.tensor4d(keys[layer]!, [rows, keyValueHeads, past, headDim])
          const value = tf.tensor4d(values[layer]!, [rows, keyValueHeads, past, headDim])
          cache.append(layer, key, value)
          tf.dispose([key, value])
        }
        cache.advance(rows, past)
      }
      tf.tidy(() => {
        this.model.hiddenStates(inputRows, { attentionMask: maskRows, positions, cache })
      })
      const taken = cache.take()
      try {
        for (let layer = 0; layer < layers; layer++) {
          const keys = taken.keys[layer]!.dataSync() as Float32Array // [rows, kvHeads, past + time, headDim]
          const values = taken.values[layer]!.dataSync() as Float32Array
          parts.forEach(({ slot, tokens, start }, row) => {
            decoder.writePositions(layer, slot, start, keys, values, { row, length: past + time, from: past + time - tokens.length, count: tokens.length })
          })
        }
      } finally {
        tf.dispose([...taken.keys, ...taken.values])
      }
    } finally {
      cache.dispose()
    }
  }

  /** One decode step of every running request holding all but its last token; samples each one's next token. */
  private decode(): void {
    const ready: Request[] = []
    for (const slot of this.slots) if (slot.state === 'running' && slot.request.held === slot.request.tokens.length - 1) ready.push(slot.request)
    if (ready.length === 0) return
    const logits = this.decoder!.stepRows(
      Int32Array.from(ready, (request) => request.slot),
      Int32Array.from(ready, (request) => request.tokens[request.held]!),
      Int32Array.from(ready, (request) => request.held),
    )
    this.counters.decodeSteps++
    this.counters.computedTokens += ready.length
    const { vocabSize } = this.model.config
    // Every row's token at once (a large step's sampling shared with a helper thread where there is one).
    const drawn = sampleTokens(
      logits,
      vocabSize,
      ready.map(({ row, generated }, index) => samplingRowOf(row, generated.length, index * vocabSize)),
    )
    ready.forEach((request, index) => {
      request.held++
      this.take(request, drawn[index]!)
    })
  }

  /** A row's sampled token: appended, then the row's stop conditions and stream. */
  private take(request: Request, { token, logprob }: SampledToken): void {
    const { row } = request
    const tokenizer = this.options.tokenizer
    request.firstToken ??= performance.now()
    request.tokens.push(token)
    request.generated.push(token)
    request.logprobs.push(logprob)
    request.versions.push(this.version)
    this.counters.generatedTokens++
    if (row.stopTokenIds.has(token)) request.finishReason = 'stop'
    else if (row.stopStrings.length > 0) {
      const text = tokenizer!.decode(request.generated)
      const cut = firstStop(text, row.stopStrings)
      if (cut !== undefined) {
        request.finishReason = 'stop'
        request.text = text.slice(0, cut)
      }
    }
    if (request.finishReason === undefined && request.generated.length >= row.maxNewTokens) request.finishReason = 'length'
    if (request.stream !== undefined) {
      const piece = request.finishReason === undefined ? request.stream.push(token) : request.stream.finish(this.finalText(request))
      if (piece !== '') request.onText!(piece)
    }
    if (request.finishReason !== undefined) this.finish(request)
  }

  private finalText(request: Request): string {
    if (request.text !== undefined) return request.text
    const last = request.generated[request.generated.length - 1]
    const ids = last !== undefined && request.row.stopTokenIds.has(last) ? request.generated.slice(0, -1) : request.generated
    return this.options.tokenizer!.decode(ids)
  }

  private finish(request: Request): void {
    this.slots[request.slot] = { state: 'cached', tokens: request.tokens, held: request.held, used: this.clock++ }
    const now = performance.now()
    this.counters.finished++
    this.counters.timeToFirstTokenSeconds += (request.firstToken! - request.submitted) / 1000
    this.counters.requestSeconds += (now - request.submitted) / 1000
    this.settle(request)
    const sequence: EngineSequence = {
      promptIds: Int32Array.from(request.row.promptIds),
      tokenIds: Int32Array.from(request.generated),
      logprobs: Float32Array.from(request.logprobs),
      finishReason: request.finishReason!,
      weightsVersions: Int32Array.from(request.versions),
      reusedPromptTokens: request.reused,
    }
    if (this.options.tokenizer !== undefined) sequence.text = this.finalText(request)
    request.resolve(sequence)
  }
}
