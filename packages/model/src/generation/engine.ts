import { InvalidArgumentError, parseArgument, tokenizerSchema, type FinishReason, yieldToEventLoop } from '@ludic/core'
import * as tf from '@tensorflow/tfjs-core'
import { z } from 'zod'
import type { ModelConfig } from '../config/model-config.js'
import type { CausalLanguageModel } from '../model/causal-language-model.js'
import { checkContextLength } from '../model/context-length.js'
import { checkGenerationRow, createTextStream, firstStop, type GeneratedSequence, type GenerationRow, samplingRowOf } from './generate.js'
import { HostDecoder, hostDecoderFloats } from './host-decoder.js'
import { type SampledToken, sampleTokens } from './sampling.js'

export const generationEngineOptionsSchema = z.strictObject({
  /** Sequences decoded together at most (the rows of a decode step). Default: 64. */
  maxRows: z.number().int().min(1).max(1024).default(64),
  /**
   * Positions a sequence holds at most (prompt + new tokens); a request past it is refused at `submit`. Default: the
   * model's context (`maxContextTokens`), at most 2,048.
   */
  maxSequenceLength: z.number().int().min(1).optional(),
  /**
   * Bytes of keys and values (float32, every layer) the engine holds at most, as pages of `pageTokens` positions
   * (`kvCacheBytes / a page's bytes` of them): a request is admitted when the pages its prompt and `maxNewTokens` can
   * take are free or held only by the prefix cache (least recently used evicted first), so a sequence takes the memory
   * of its own length, not of `maxSequenceLength`. Refused when one sequence of `maxSequenceLength` does not fit. The
   * whole pool is allocated with each decoder (at the first iteration and after new weights): a budget far past what
   * the requests and the cache can use costs memory and garbage-collection time. Default: room for `maxRows`
   * sequences of `maxSequenceLength` twice over (the running rows, and as much again for the prefix cache), at most
   * 256 MiB.
   */
  kvCacheBytes: z.number().int().min(1).optional(),
  /**
   * Positions a page of keys and values holds (a multiple of 4): the unit in which sequences take memory and share
   * prefixes (a shared prefix's whole pages are shared, its last partial page copied). Smaller pages waste less memory
   * per sequence; larger ones mean fewer kernel products a step (attention runs a product per page). Default: 32.
   */
  pageTokens: z
    .number()
    .int()
    .min(4)
    .max(1024)
    .refine((value) => value % 4 === 0, 'must be a multiple of 4')
    .default(32),
  /**
   * Prompt tokens computed per scheduler iteration at most (chunked prefill): a long prompt is split over iterations,
   * with a decode step of the running rows between its chunks. Default: 256.
   */
  prefillChunkTokens: z.number().int().min(1).max(8192).default(256),
  /**
   * Keep finished sequences' keys and values in a prefix tree of pages until their memory is needed (least recently
   * used first), and start a new request from the longest prefix of its prompt held there or by a running request.
   * Default: true.
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
   * stay on the host (attention shared with `threads`' workers). A request's samples still do not depend on what else runs (each product is probed at each
   * row count the first time it meets it, and where the backend's product of a row would depend on the count or the
   * row's place — oneDNN on AVX2 CPUs — the rows go in calls of two or one, slower; tested on both backends), but
   * differ from `'host'`'s in float32 rounding. Default: `'host'`.
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
  /** Rows (the most sequences decoded at once). */
  rows: number
  /** Positions a sequence holds at most. */
  rowLength: number
  /** Pages of keys and values, and the positions each holds. */
  pages: number
  pageTokens: number
  /** Pages held by running requests, over all pages (0 … 1; vLLM's `kv_cache_usage_perc`). */
  kvUsage: number
  /** Pages held only by the prefix cache and evictable (no running request holds them or a page under them in the tree). */
  cachedPages: number
  /** Pages holding nothing (with those running requests hold and the cached ones: every page). */
  freePages: number
  /** Positions the prefix tree holds (its pages', whether running requests share them or not). */
  cachedTokens: number
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
  /** Tokens of `tokens` whose keys and values are in its pages (a prefix of it). */
  held: number
  /** Its decode row while it runs (-1 waiting, after). */
  slot: number
  /** Its page table: positions `i · pageTokens …` are in page `pages[i]` (whole pages of a shared prefix shared). */
  pages: number[]
  /** Pages it may still take (its prompt + `maxNewTokens` - 1 positions, less those it has): reserved at admission. */
  reserve: number
  /** The prefix tree's node of its last whole page in the tree (the root before any), and how many of its pages are. */
  node: PrefixNode
  indexed: number
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

/**
 * A page of the prefix tree: `tokens` (`pageTokens` of them, or fewer for a finished sequence's last page, a leaf) at
 * the positions after its parent's, their keys and values in `page`. Children by their tokens (`key`).
 */
interface PrefixNode {
  tokens: number[]
  key: string
  page: number
  parent: PrefixNode | undefined
  children: Map<string, PrefixNode>
  /** The engine's clock when a request last matched or wrote it (least recently used evicted first). */
  used: number
}

/** Where a request's prompt starts: whole pages shared, then `copy.count` positions copied from `copy.page`. */
interface PrefixMatch {
  nodes: PrefixNode[]
  copy: { page: number; count: number } | undefined
  length: number
}

/** The bytes of one page of `pageTokens` positions of keys and values, float32, every layer (`kvCacheBytes` is a number of them). */
export function kvPageBytes(config: ModelConfig, pageTokens: number): number {
  return 2 * 4 * config.numHiddenLayers * config.numKeyValueHeads * config.headDim * pageTokens
}

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
 * join a running decode loop as soon as a row is free, the pages their prompt and new tokens can take are there, and
 * their prompt is computed, and leave it the step they finish. Each iteration computes up to `prefillChunkTokens` prompt
 * tokens of the admitted requests (first come, first served; a long prompt in chunks), then one decode step of every
 * running row, each at its own length (no padding).
 *
 * Keys and values live in pages of `pageTokens` positions (vLLM's PagedAttention): a sequence takes pages as it grows,
 * attention reads them through its page table. A prefix tree of pages (SGLang's RadixAttention; vLLM's prefix caching
 * keys whole pages the same way) keeps the pages of running and finished sequences: a new request shares the whole
 * pages of the longest prefix of its prompt found there (or held by a running request, once computed) and copies the
 * rest of a partial page, so the G samples of a GRPO group hold their prompt's pages once, and a multi-turn episode's
 * next turn continues from the conversation so far. Pages only the tree holds are evicted least recently used first,
 * leaves first, when memory is needed. When the model's weights change (a training step), the tree is dropped; running
 * sequences keep their tokens, their keys and values are recomputed on the new weights and they continue (partial
 * rollouts, as verl's and AReaL's interruptible generation), each token tagged with the `weightsVersion` it was
 * sampled under.
 *
 * Sampling is per request (its own `Random`) and each row's logits depend on its own tokens only (attention sums its
 * pages in order, whoever shares them), so a request's samples do not depend on what else runs: the same as the
 * request run alone, bit for bit. Every architecture the model defines (Llama, Qwen2's biases, Qwen3's query/key
 * norms, Mistral's sliding window, GPT-2's LayerNorms, learned positions and GELU MLP), on `HostDecoder`. Between
 * iterations it yields to the event loop.
 */
export class GenerationEngine {
  private readonly options: z.output<typeof generationEngineOptionsSchema>
  readonly rows: number
  readonly rowLength: number
  /** Pages of keys and values, and the positions each holds. */
  readonly pages: number
  readonly pageTokens: number
  private decoder: HostDecoder | undefined
  /** Running requests by decode row. */
  private readonly slots: (Request | undefined)[]
  private readonly waiting: Request[] = []
  /** Running requests referring to each page. */
  private readonly pageRefs: Int32Array
  /** The prefix tree's node holding each page (undefined: not in the tree). */
  private readonly pageNodes: (PrefixNode | undefined)[]
  private freePages: number[]
  private readonly root: PrefixNode = { tokens: [], key: '', page: -1, parent: undefined, children: new Map(), used: 0 }
  /** Pages running requests may still take (their reserves). */
  private committed = 0
  /** Pages only the tree holds (no running request refers to them): evictable. */
  private cachedCount = 0
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
    const { pageTokens } = this.options
    const pageBytes = kvPageBytes(config, pageTokens)
    const sequencePages = Math.ceil(rowLength / pageTokens)
    const budget = this.options.kvCacheBytes ?? Math.min(2 ** 28, 2 * this.options.maxRows * sequencePages * pageBytes)
    const pages = Math.floor(budget / pageBytes)
    if (pages < sequencePages) {
      throw new InvalidArgumentError({
        argument: 'options.kvCacheBytes',
        value: budget,
        message: `holds no sequence of maxSequenceLength: ${rowLength} positions take ${sequencePages} pages of ${pageBytes} bytes, ${pages} fit (lower maxSequenceLength or raise kvCacheBytes)`,
      })
    }
    const rows = this.options.maxRows
    const floats = hostDecoderFloats(config, rows, rowLength, this.options.prefillChunkTokens, { pages, pageLength: pageTokens })
    if (floats > 2 ** 30 - 2 ** 20) {
      throw new InvalidArgumentError({
        argument: 'options.kvCacheBytes',
        value: budget,
        message: `the engine would hold ${floats} floats (weights, ${pages} pages of ${pageTokens} positions, ${rows} rows of ${rowLength}), past the 4 GiB a WebAssembly memory addresses: a smaller kvCacheBytes or fewer rows`,
      })
    }
    this.rows = rows
    this.rowLength = rowLength
    this.pages = pages
    this.pageTokens = pageTokens
    this.slots = Array.from({ length: rows }, () => undefined)
    this.pageRefs = new Int32Array(pages)
    this.pageNodes = Array.from({ length: pages }, () => undefined)
    this.freePages = this.allPages()
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
        pages: [],
        reserve: 0,
        node: this.root,
        indexed: 0,
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
    let used = 0
    for (const refs of this.pageRefs) if (refs > 0) used++
    // Walked, not the admission's counter: a page the tree lost, or one under a page a running request holds (not
    // evictable), shows as neither cached nor free.
    let cachedTokens = 0
    let cachedPages = 0
    const evictable = (node: PrefixNode): boolean => {
      cachedTokens += node.tokens.length
      let all = this.pageRefs[node.page] === 0
      for (const child of node.children.values()) all = evictable(child) && all
      if (all) cachedPages++
      return all
    }
    for (const child of this.root.children.values()) evictable(child)
    return {
      running: this.runningRequests().length,
      waiting: this.waiting.length,
      rows: this.rows,
      rowLength: this.rowLength,
      pages: this.pages,
      pageTokens: this.pageTokens,
      kvUsage: used / this.pages,
      cachedPages,
      freePages: this.freePages.length,
      cachedTokens,
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
    for (const request of this.runningRequests()) this.cancel(request, gone)
    // At once, even while the loop runs: it is between iterations here (each is synchronous) and ends at its next check.
    this.releaseDecoder()
  }

  /** Frees the decoder, and with it every page (no request runs: `dispose`, or a failed iteration after cancelling all). */
  private releaseDecoder(): void {
    this.decoder?.dispose()
    this.decoder = undefined
    this.slots.fill(undefined)
    this.pageRefs.fill(0)
    this.dropTree()
    this.committed = 0
  }

  /** Page indices, the lowest last (taken first). */
  private allPages(): number[] {
    return Array.from({ length: this.pages }, (_, index) => this.pages - 1 - index)
  }

  private runningRequests(): Request[] {
    const running: Request[] = []
    for (const request of this.slots) if (request !== undefined) running.push(request)
    return running
  }

  private cancel(request: Request, reason: unknown): void {
    const index = this.waiting.indexOf(request)
    if (index >= 0) this.waiting.splice(index, 1)
    else if (request.slot >= 0 && this.slots[request.slot] === request)
      this.leave(request) // its keys and values so far stay in the tree
    else return
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
      while (!this.disposed && (this.waiting.length > 0 || this.slots.some((request) => request !== undefined))) {
        this.iterate()
        await yieldToEventLoop() // new requests, aborts, timers and I/O come in here
      }
    } catch (error) {
      // A failure of the decoder (out of memory) fails every request in flight, never hangs them; their pages and the
      // tree go with the decoder (not walked again: the failure may have been in them).
      const inFlight = [...this.waiting, ...this.runningRequests()]
      this.waiting.length = 0
      this.releaseDecoder()
      for (const request of inFlight) {
        request.slot = -1
        this.counters.aborted++
        this.settle(request)
        request.reject(error)
      }
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
      paging: { pages: this.pages, pageLength: this.pageTokens },
    })
    if (!fresh) return
    this.version++
    // The tree's keys and values were the old weights'; running requests keep their pages (shared ones too: every sharer
    // recomputes the same positions to the same bits) and recompute them.
    this.dropTree()
    for (const request of this.runningRequests()) {
      request.held = 0
      request.node = this.root
      request.indexed = 0
      this.decoder.setPageTable(request.slot, request.pages)
      for (const page of request.pages) this.decoder.clearPage(page) // the new decoder's memory: not yet its pages'
    }
  }

  /** Empties the prefix tree: pages no running request refers to are free again. */
  private dropTree(): void {
    this.root.children.clear()
    this.pageNodes.fill(undefined)
    this.cachedCount = 0
    this.freePages = this.allPages().filter((page) => this.pageRefs[page] === 0)
  }

  /** A running request refers to `page` once more. */
  private ref(page: number): void {
    if (this.pageRefs[page]!++ === 0 && this.pageNodes[page] !== undefined) this.cachedCount--
  }

  /** A running request refers to `page` once less: at none, the page stays in the tree (evictable) or is free again. */
  private unref(page: number): void {
    if (--this.pageRefs[page]! > 0) return
    if (this.pageNodes[page] !== undefined) this.cachedCount++
    else this.freePages.push(page)
  }

  /** The prefix tree's nodes (the root left out), parents before children. */
  private treeNodes(): PrefixNode[] {
    const nodes: PrefixNode[] = []
    const stack = [...this.root.children.values()]
    while (stack.length > 0) {
      const node = stack.pop()!
      nodes.push(node)
      for (const child of node.children.values()) stack.push(child)
    }
    return nodes
  }

  /** Pages a request takes at most: its prompt and all but the last of its new tokens are fed. */
  private pagesNeeded(request: Request): number {
    return Math.ceil((request.promptLength + request.row.maxNewTokens - 1) / this.pageTokens)
  }

  /**
   * Gives waiting requests rows, in arrival order (one that does not fit waits, and those after it), each from the
   * longest prefix of its prompt in the tree, or held by a running request once computed (then it follows that request
   * and shares the prefix when it is there). A request is admitted when the pages it can take — its prompt and
   * `maxNewTokens`, less the whole pages it shares — are free or held only by the tree, after what running requests
   * reserved: it never waits for memory once running.
   */
  private admit(): void {
    while (this.waiting.length > 0) {
      const request = this.waiting[0]!
      const slot = this.slots.indexOf(undefined)
      if (slot < 0) return
      const match = this.options.prefixCaching ? this.matchTree(request.tokens, request.promptLength - 1) : { nodes: [], copy: undefined, length: 0 }
      const donor = this.options.prefixCaching ? this.longestRunningPrefix(request, match.length) : undefined
      const shared = donor === undefined ? match.nodes.map((node) => node.page) : [] // a follower reserves as if it shares nothing
      for (const page of shared) this.ref(page)
      const reserve = this.pagesNeeded(request) - shared.length
      if (reserve > this.freePages.length + this.cachedCount - this.committed) {
        for (const page of shared) this.unref(page)
        // With nothing running every page is free or evictable and any request fits (`maxSequenceLength`'s pages do):
        // failing here would wait for ever, so it is an error.
        if (this.slots.every((other) => other === undefined))
          throw new Error(`GenerationEngine: ${reserve} pages do not fit an idle engine's ${this.pages} (its page accounting is off)`)
        return
      }
      this.waiting.shift()
      request.slot = slot
      request.pages = shared
      request.reserve = reserve
      this.committed += reserve
      this.slots[slot] = request
      this.counters.promptTokens += request.promptLength
      if (donor !== undefined) request.follow = donor
      else this.startFrom(request, match)
      this.decoder!.setPageTable(slot, request.pages)
      this.copyFollowed(request)
    }
  }

  /**
   * A request's prefix from the tree: its whole pages already shared (`request.pages`), the partial page copied — unless
   * that page is one only the tree holds and every other page is reserved (keeping it for the copy would leave a
   * reserve without a page): then those positions are computed.
   */
  private startFrom(request: Request, match: PrefixMatch): void {
    for (const node of match.nodes) node.used = this.clock
    this.clock++
    let { length } = match
    if (match.copy !== undefined) {
      const { page, count } = match.copy
      if (this.pageRefs[page] === 0 && this.freePages.length + this.cachedCount - 1 < this.committed) length -= count
      else this.copyPartialPage(request, page, count)
    }
    request.held = length
    if (length > 0) this.countReuse(request, length)
  }

  /**
   * The longest prefix of `tokens` (at most `limit` of them: a prompt's last token is fed for the first logits) the
   * tree holds: its whole pages, then the most positions of one child page (whole or a finished sequence's last).
   */
  private matchTree(tokens: readonly number[], limit: number): PrefixMatch {
    const size = this.pageTokens
    const nodes: PrefixNode[] = []
    let node = this.root
    while ((nodes.length + 1) * size <= limit) {
      const child = node.children.get(tokens.slice(nodes.length * size, (nodes.length + 1) * size).join(','))
      if (child === undefined) break
      nodes.push(child)
      node = child
    }
    const from = nodes.length * size
    let copy: PrefixMatch['copy']
    for (const child of node.children.values()) {
      let count = 0
      while (count < child.tokens.length && from + count < limit && child.tokens[count] === tokens[from + count]) count++
      if (count > 0 && (copy === undefined || count > copy.count)) copy = { page: child.page, count }
    }
    return { nodes, copy, length: from + (copy?.count ?? 0) }
  }

  /**
   * The running request that holds, or will hold once its prompt is computed, a longer prefix of the request's prompt
   * than `than` (the tree's), and that prefix's length; undefined when none does.
   */
  private longestRunningPrefix(request: Request, than: number): { donor: Request; length: number } | undefined {
    let best: { donor: Request; length: number } | undefined
    const prompt = request.tokens
    const limit = request.promptLength - 1
    for (const other of this.runningRequests()) {
      if (other.follow !== undefined) continue // its donor is the better source
      const known = Math.min(other.tokens.length - 1, limit)
      let length = 0
      while (length < known && other.tokens[length] === prompt[length]) length++
      if (length > (best?.length ?? than)) best = { donor: other, length }
    }
    return best
  }

  /**
   * A following request's prefix once its donor holds it: the donor's whole pages shared, the rest of a partial page
   * copied. A donor that left (finished or aborted) put its pages in the tree: the request starts from there instead.
   */
  private copyFollowed(request: Request): void {
    const { follow } = request
    if (follow === undefined) return
    const { donor, length } = follow
    const donorRunning = donor.slot >= 0 && this.slots[donor.slot] === donor
    if (donorRunning && donor.held < length) return // not there yet
    request.follow = undefined
    if (!donorRunning) {
      const match = this.matchTree(request.tokens, request.promptLength - 1)
      this.sharePages(
        request,
        match.nodes.map((node) => node.page),
      )
      this.startFrom(request, match)
    } else {
      const whole = Math.floor(length / this.pageTokens)
      this.sharePages(request, donor.pages.slice(0, whole))
      const count = length - whole * this.pageTokens
      if (count > 0) this.copyPartialPage(request, donor.pages[whole]!, count)
      request.held = length
      this.countReuse(request, length)
    }
    this.decoder!.setPageTable(request.slot, request.pages)
  }

  /** A new page at the end of the request's table holding the first `count` positions of page `source` (kept from eviction meanwhile). */
  private copyPartialPage(request: Request, source: number, count: number): void {
    this.ref(source)
    this.takePage(request)
    this.unref(source)
    this.decoder!.copyPage(source, request.pages[request.pages.length - 1]!, count)
  }

  /** A request (holding no page yet) shares `pages`: each referred to, its reserve less them. */
  private sharePages(request: Request, pages: readonly number[]): void {
    for (const page of pages) this.ref(page)
    request.pages = [...pages]
    request.reserve -= pages.length
    this.committed -= pages.length
  }

  private countReuse(request: Request, length: number): void {
    request.reused = length
    this.counters.reusedPromptTokens += length
  }

  /** A new page at the end of the request's table, from its reserve: a free one, else the tree's least recently used leaf. */
  private takePage(request: Request): void {
    if (request.reserve <= 0) throw new Error(`GenerationEngine: a request took more pages than it reserved (${request.pages.length})`)
    const page = this.freePages.pop() ?? this.evict()
    this.decoder!.clearPage(page)
    request.reserve--
    this.committed--
    this.pageRefs[page] = 1
    request.pages.push(page)
  }

  /**
   * Takes the least recently used leaves no running request refers to out of the tree — one, or a 64th of the pages at
   * most when there are that many (one walk of the tree for several pages) — their pages free; one of them.
   */
  private evict(): number {
    const leaves: PrefixNode[] = []
    for (const node of this.treeNodes()) if (node.children.size === 0 && this.pageRefs[node.page] === 0) leaves.push(node)
    if (leaves.length === 0) throw new Error('GenerationEngine: no page to evict (the reserves are off)')
    leaves.sort((a, b) => a.used - b.used)
    for (const leaf of leaves.slice(0, Math.max(1, Math.ceil(this.pages / 64)))) {
      this.unlink(leaf)
      this.freePages.push(leaf.page)
    }
    return this.freePages.pop()!
  }

  /** Takes a node out of the tree (its page no longer found there). */
  private unlink(node: PrefixNode): void {
    node.parent!.children.delete(node.key)
    this.pageNodes[node.page] = undefined
    if (this.pageRefs[node.page] === 0) this.cachedCount--
  }

  /** Pages for the request's positions below `end` (its table extended from its reserve, the decoder told). */
  private coverPositions(request: Request, end: number): void {
    const before = request.pages.length
    while (request.pages.length * this.pageTokens < end) this.takePage(request)
    if (request.pages.length !== before) this.decoder!.setPageTable(request.slot, request.pages)
  }

  /**
   * Puts the request's whole pages computed since the last call into the tree; where the tree holds a page of those
   * tokens at that place already, the request moves onto it and frees its own.
   */
  private index(request: Request): void {
    if (!this.options.prefixCaching) return
    const size = this.pageTokens
    let moved = false
    while ((request.indexed + 1) * size <= request.held) {
      const tokens = request.tokens.slice(request.indexed * size, (request.indexed + 1) * size)
      const own = request.pages[request.indexed]!
      const node = this.insert(request.node, tokens, own)
      if (node.page !== own) {
        // Another request computed these positions first: the request takes the tree's page and frees its own, so it
        // refers to every page on its path in the tree (none of them evictable while it runs).
        this.ref(node.page)
        request.pages[request.indexed] = node.page
        this.unref(own)
        moved = true
      }
      request.node = node
      request.indexed++
    }
    if (moved) this.decoder!.setPageTable(request.slot, request.pages)
  }

  /**
   * Node `tokens` under `parent`: the one there, or a new one holding `page`. A finished sequence's last page
   * (fewer tokens) is not added where a child already begins with its tokens; one that a new page begins with goes.
   */
  private insert(parent: PrefixNode, tokens: number[], page: number): PrefixNode {
    const key = tokens.join(',')
    let node = parent.children.get(key)
    if (node === undefined) {
      for (const child of parent.children.values()) {
        if (child.tokens.length < tokens.length && this.pageRefs[child.page] === 0 && child.tokens.every((token, index) => token === tokens[index])) {
          this.unlink(child) // a shorter last page the new one extends
          this.freePages.push(child.page)
        } else if (child.tokens.length > tokens.length && tokens.every((token, index) => token === child.tokens[index])) return child
      }
      // A page is in the tree at most once, at its tokens' place: a page another request shares is found there by key.
      if (this.pageNodes[page] !== undefined) throw new Error(`GenerationEngine: page ${page} is in the prefix tree already`)
      node = { tokens, key, page, parent, children: new Map(), used: this.clock }
      parent.children.set(key, node)
      this.pageNodes[page] = node
    }
    node.used = this.clock++
    return node
  }

  /**
   * A request leaves its row (finished or aborted): its last partial page goes into the tree too, then its pages are
   * released (those the tree does not hold are free again) with what it had reserved.
   */
  private leave(request: Request): void {
    if (request.slot < 0 || this.slots[request.slot] !== request) return // left already (an abort from its own onText)
    this.index(request)
    const size = this.pageTokens
    const rest = request.held - request.indexed * size
    const last = request.pages[request.indexed]
    // Only a page it alone holds (after new weights a page shared with others can be partly recomputed).
    if (this.options.prefixCaching && rest > 0 && last !== undefined && this.pageRefs[last] === 1) {
      this.insert(request.node, request.tokens.slice(request.indexed * size, request.held), last)
    }
    for (const page of request.pages) this.unref(page)
    this.committed -= request.reserve
    request.reserve = 0
    this.slots[request.slot] = undefined
    request.slot = -1
  }

  /** Computes up to `prefillChunkTokens` tokens of the running requests that hold less than all but their last token. */
  private prefill(): void {
    let budget = this.options.prefillChunkTokens
    const running = this.runningRequests()
    running.sort((a, b) => a.order - b.order) // first come, first served
    for (const request of running) if (request.follow !== undefined) this.copyFollowed(request)
    const parts: { slot: number; tokens: Int32Array; start: number }[] = []
    const extended: Request[] = []
    for (const request of running) {
      if (budget === 0) break
      if (request.follow !== undefined) continue
      const missing = request.tokens.length - 1 - request.held
      if (missing <= 0) continue
      const count = Math.min(missing, budget)
      this.coverPositions(request, request.held + count)
      parts.push({ slot: request.slot, tokens: Int32Array.from(request.tokens.slice(request.held, request.held + count)), start: request.held })
      request.held += count
      budget -= count
      extended.push(request)
    }
    if (parts.length === 0) return
    if (this.prefillOnBackend()) this.backendExtend(parts)
    else this.decoder!.extend(parts)
    this.counters.computedTokens += this.options.prefillChunkTokens - budget
    for (const request of extended) this.index(request)
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
    const ready = this.runningRequests().filter((request) => request.held === request.tokens.length - 1)
    if (ready.length === 0) return
    for (const request of ready) this.coverPositions(request, request.held + 1)
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
      if (this.slots[request.slot] !== request) return // aborted by an earlier row's onText in this step
      request.held++
      this.index(request)
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
    // Unless its onText aborted it (`cancel` rejected it and released its pages).
    if (request.finishReason !== undefined && request.slot >= 0) this.finish(request)
  }

  private finalText(request: Request): string {
    if (request.text !== undefined) return request.text
    const last = request.generated[request.generated.length - 1]
    const ids = last !== undefined && request.row.stopTokenIds.has(last) ? request.generated.slice(0, -1) : request.generated
    return this.options.tokenizer!.decode(ids)
  }

  private finish(request: Request): void {
    this.leave(request)
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
