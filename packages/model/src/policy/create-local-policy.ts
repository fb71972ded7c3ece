import {
  createRandom,
  generationRequestSchema,
  InvalidArgumentError,
  parseArgument,
  tokenizerSchema,
  type ChatMessage,
  type Completion,
  type GenerateOptions,
  type GenerationRequest,
  type PolicyV1,
} from '@ludic/core'
import { z } from 'zod'
import { createGenerationEngine, type EngineStats, GenerationEngine, generationEngineOptionsSchema } from '../generation/engine.js'
import { batchContextLength, defaultStopTokenIds, generateRows, type GenerationRow } from '../generation/generate.js'
import { CausalLanguageModel } from '../model/causal-language-model.js'
import { checkContextLength } from '../model/context-length.js'
import { checkVocabularyFits } from './check-vocabulary-fits.js'
import { createPromptEncoder } from './prompt-encoder.js'

export const localPolicyOptionsSchema = z
  .object({
    model: z.instanceof(CausalLanguageModel, { message: 'must be a CausalLanguageModel' }),
    tokenizer: tokenizerSchema,
    /**
     * How messages become the prompt: a Jinja chat template (rendered as transformers'
     * `apply_chat_template(…, add_generation_prompt=True)` with the tokenizer's special tokens) or a function.
     * Default: the tokenizer's own template (a chat is refused at its request when there is none).
     */
    chatTemplate: z
      .union([z.string().min(1), z.custom<(messages: readonly ChatMessage[]) => string>((value) => typeof value === 'function', 'must be a function')])
      .optional(),
    /**
     * Special-token text in the messages (`<|im_start|>system`, `<|endoftext|>` written by a client, a user
     * simulator or a character card) is encoded as plain text; only the special tokens the chat template writes are
     * special (the tokenizer's `encodeChat` with `splitSpecialTokens`). Set false to read special tokens anywhere in
     * the messages, as transformers' `apply_chat_template(…, tokenize=True)` does. Default: true when the tokenizer
     * has `encodeChat` (every `@ludic/tokenizer` one), else false; true with a tokenizer without it is refused here.
     */
    splitSpecialTokens: z.boolean().optional(),
    /** Most requests generated together in one batch. Default: 8. */
    maxBatch: z.number().int().positive().default(8),
    /** The policy's id. Default: `'local-<architecture>'`. */
    id: z.string().min(1).optional(),
    /** Seeds requests that carry none (each such request draws its seed from this stream). Default: 0. */
    seed: z.number().int().default(0),
    /** Stop token ids. Default: the model config's `eos_token_id`s and the tokenizer's end-of-sequence id. */
    stopTokenIds: z.array(z.number().int().nonnegative()).optional(),
    /**
     * Runs the requests on a `GenerationEngine` (continuous batching: a request joins the running rows as soon as its
     * prompt is computed and leaves the step it ends; prompts start from the longest prefix a row holds): `true` for the
     * engine's defaults, or its options (its tokenizer is this policy's). Concurrent `generate` calls share it, so
     * requests from many callers (episodes stepped per trajectory, a server's clients) run together; `maxBatch` does not
     * apply. Or an engine of this model to share (several policies over it, e.g. one a training step, with their own
     * seeds; its tokenizer must decode as this one). Every architecture, GPT-2 included. Default: false (each
     * call's requests in batches of `maxBatch`, left-padded, run to the end of the longest).
     */
    engine: z
      .union([z.boolean(), generationEngineOptionsSchema.omit({ tokenizer: true }), z.instanceof(GenerationEngine, { message: 'must be a GenerationEngine' })])
      .default(false),
    /**
     * The policy version of the model's weights now: the trainer's step index of the weights (0: the initial ones). Given,
     * every completion carries `tokenPolicyVersions`, the version of the weights that sampled each token; tell the policy
     * each later version with `setPolicyVersion` when the weights change. Default: none (completions carry no versions
     * until `setPolicyVersion` is called).
     */
    policyVersion: z.number().int().min(0).optional(),
  })
  .strict()
export type LocalPolicyOptions = z.input<typeof localPolicyOptionsSchema>

/** `createLocalPolicy`'s policy: a `PolicyV1`, and its engine's counters when it runs on one. */
export interface LocalPolicy extends PolicyV1 {
  /** The generation engine's counters and state (`options.engine`); undefined without an engine. */
  engineStats(): EngineStats | undefined
  /**
   * With an engine: its figures by the names a server's `/metrics` reads (`@ludic/rollout`'s `PolicyMetricsSource`:
   * `kvCacheUsage`, `prefixCacheQueries`, `prefixCacheHits`, `runningRequests`, `waitingRequests`, and the engine's other
   * counters). Absent without one.
   */
  metrics?: () => Record<string, number>
  /**
   * True when it runs on a `GenerationEngine`: weights changed while it generates apply to its running sequences from the
   * engine's next iteration (they keep their tokens and continue on the new weights: a partial rollout), so a caller
   * (a rollout worker) may change them mid-batch. False without an engine: change the weights between `generate` calls.
   */
  readonly partialRollouts: boolean
  /**
   * The model's weights are now policy version `version` (the trainer's step index of the weights): call it right after
   * changing them (before the next `generate` call or engine iteration, i.e. with no `await` between). From then on every
   * completion carries `tokenPolicyVersions`. With an engine, each token's version is the version announced for the
   * weights the engine sampled it with: the engine counts its own weight changes (`EngineSequence.weightsVersions`, one
   * per change it sees at the start of an iteration), and the policy records which policy version each of the engine's
   * counts stands for. Weights changed without telling the policy keep the last version announced. An integer ≥ 0: an
   * `InvalidArgumentError` naming `version` otherwise.
   */
  setPolicyVersion(version: number): void
}

/** An engine's stats as `/metrics` figures: vLLM's prefix-cache queries and hits are prompt tokens looked up and found. */
function engineMetrics(stats: EngineStats): Record<string, number> {
  return {
    kvCacheUsage: stats.kvUsage,
    prefixCacheQueries: stats.promptTokens,
    prefixCacheHits: stats.reusedPromptTokens,
    runningRequests: stats.running,
    waitingRequests: stats.waiting,
    cachedPages: stats.cachedPages,
    cachedTokens: stats.cachedTokens,
    pages: stats.pages,
    rows: stats.rows,
    computedTokens: stats.computedTokens,
    decodeSteps: stats.decodeSteps,
    weightsVersion: stats.weightsVersion,
  }
}

/** Core's `GenerateOptions` of `PolicyV1.generate` (other fields, from a newer core, are ignored). */
const policyGenerateOptionsSchema = z.object({
  signal: z.instanceof(AbortSignal, { message: 'must be an AbortSignal' }).optional(),
  onText: z.custom<(requestIndex: number, text: string) => void>((value) => typeof value === 'function', 'must be a function').optional(),
})

/**
 * A `PolicyV1` over a local model: each request's messages go through the chat template (with the generation
 * prompt) and the tokenizer (no special tokens added, as transformers' `apply_chat_template(tokenize=True)`;
 * special-token text in the messages stays text, see `splitSpecialTokens`), and a raw `prompt` is encoded as it is
 * (as vLLM's `/v1/completions`: special tokens read, BOS added; see `createPromptEncoder`);
 * requests are generated in batches of up to `maxBatch` (left-padded), each with its own `temperature`
 * (default 1), `topP`, `topK`, `minP`, `stop` strings, `seed` and `maxTokens`, and vLLM's `minTokens` (the stop token
 * ids are left out of the draw until that many tokens are generated) and `ignoreEos` (the end-of-sequence ids, the
 * config's and the tokenizer's, do not end it; other `stopTokenIds` still do). A completion carries the prompt
 * ids, the generated ids (a stop token that ended it included), their log-probabilities under the request's
 * sampling distribution (`log softmax(logits / temperature)`, unfiltered; T = 1's for a greedy request; see
 * `generate`), the decoded text (without the stop token, cut before a stop
 * string) and the finish reason. A tokenizer with ids past the model's vocabulary is refused here
 * (`checkVocabularyFits`), not at the first request. A request whose prompt plus `maxTokens` exceeds the
 * model's context is a `ContextLengthError` before anything is generated. `generate`'s options: `signal`
 * stops at the next decode step (rejecting with its reason); `onText` streams each request's new text.
 */
export function createLocalPolicy(options: LocalPolicyOptions): LocalPolicy {
  const {
    model,
    tokenizer,
    chatTemplate,
    splitSpecialTokens,
    maxBatch,
    id,
    seed,
    stopTokenIds,
    engine: engineOptions,
    policyVersion,
  } = parseArgument(localPolicyOptionsSchema, options, 'options')
  checkVocabularyFits(tokenizer, model.config)
  if (engineOptions instanceof GenerationEngine && engineOptions.model !== model)
    throw new InvalidArgumentError({ argument: 'options.engine', value: engineOptions, message: "is another model's engine (give an engine of options.model)" })
  const engine =
    engineOptions === false ? undefined : engineOptions instanceof GenerationEngine ? engineOptions : createPolicyEngine(model, tokenizer, engineOptions)
  const encodePrompt = createPromptEncoder(tokenizer, { chatTemplate, splitSpecialTokens, who: 'createLocalPolicy' })
  const seeds = createRandom(seed)
  const stops = new Set(stopTokenIds ?? defaultStopTokenIds(model, tokenizer))
  // ignoreEos (vLLM's ignore_eos): the end-of-sequence ids are no stop; other configured stop ids still are.
  const endOfSequence = new Set(defaultStopTokenIds(model, tokenizer))
  const stopsIgnoringEos = new Set([...stops].filter((id) => !endOfSequence.has(id)))
  const versions = createVersionMap(engine)
  if (policyVersion !== undefined) versions.announce(policyVersion)
  return {
    specificationVersion: 'v1',
    id: id ?? `local-${model.config.architecture}`,
    engineStats: () => engine?.stats(),
    ...(engine === undefined ? {} : { metrics: () => engineMetrics(engine.stats()) }),
    partialRollouts: engine !== undefined,
    setPolicyVersion(version: number): void {
      parseArgument(z.number().int().min(0), version, 'version')
      versions.announce(version)
    },
    async generate(requests: readonly GenerationRequest[], options: GenerateOptions = {}): Promise<Completion[]> {
      const parsed = parseArgument(z.array(generationRequestSchema), requests, 'requests')
      const { signal, onText } = parseArgument(policyGenerateOptionsSchema, options, 'options')
      signal?.throwIfAborted()
      const rows: GenerationRow[] = parsed.map((request, index) => {
        const promptIds = encodePrompt(request, index)
        if (promptIds.length === 0) {
          const [field, value] = request.messages === undefined ? ['prompt', request.prompt] : ['messages', request.messages]
          throw new InvalidArgumentError({ argument: `requests[${index}].${field}`, value, message: 'encode to an empty prompt' })
        }
        checkContextLength(model, promptIds.length + request.maxTokens, {
          argument: `requests[${index}].maxTokens`,
          value: request.maxTokens,
          what: `the prompt (${promptIds.length} tokens) + maxTokens (${request.maxTokens})`,
        })
        if (engine !== undefined && promptIds.length + request.maxTokens > engine.rowLength) {
          throw new InvalidArgumentError({
            argument: `requests[${index}].maxTokens`,
            value: request.maxTokens,
            message: `the prompt (${promptIds.length} tokens) + maxTokens (${request.maxTokens}) exceed the engine's ${engine.rowLength} positions a row (options.engine.maxSequenceLength)`,
          })
        }
        return {
          promptIds,
          sampling: { temperature: request.temperature ?? 1, topK: request.topK ?? 0, topP: request.topP ?? 1, minP: request.minP ?? 0 },
          maxNewTokens: request.maxTokens,
          // vLLM's min_tokens and ignore_eos (lane SERVE's mapping of the two request fields)
          minNewTokens: request.minTokens ?? 0,
          stopTokenIds: request.ignoreEos === true ? stopsIgnoringEos : stops,
          stopStrings: request.stop ?? [],
          random: createRandom(request.seed ?? seeds.nextUint32()),
        }
      })
      if (engine !== undefined) {
        return Promise.all(
          rows.map((row, index) =>
            engine
              .submit(row, {
                ...(signal === undefined ? {} : { signal }),
                ...(onText === undefined ? {} : { onText: (text: string) => onText(index, text) }),
              })
              // Mapped as soon as it ends, before the weights can change again (no macrotask between).
              .then((result): Completion => {
                const tokenPolicyVersions = versions.ofEngineVersions(result.weightsVersions)
                return {
                  text: result.text ?? '',
                  promptTokenIds: result.promptIds,
                  tokenIds: result.tokenIds,
                  logprobs: result.logprobs,
                  finishReason: result.finishReason,
                  ...(tokenPolicyVersions === undefined ? {} : { tokenPolicyVersions }),
                }
              }),
          ),
        )
      }
      // Without an engine every token of a call is sampled with the weights it started with.
      const callVersion = versions.current()
      const completions: Completion[] = []
      for (const batch of contextBatches(rows, maxBatch, model.maxContextTokens)) {
        const offset = completions.length
        const results = await generateRows(model, batch, tokenizer, {
          ...(signal === undefined ? {} : { signal }),
          ...(onText === undefined ? {} : { onText: (index: number, text: string) => onText(offset + index, text) }),
        })
        for (const result of results) {
          completions.push({
            text: result.text ?? '',
            promptTokenIds: result.promptIds,
            tokenIds: result.tokenIds,
            logprobs: result.logprobs,
            finishReason: result.finishReason,
            ...(callVersion === undefined ? {} : { tokenPolicyVersions: new Int32Array(result.tokenIds.length).fill(callVersion) }),
          })
        }
      }
      return completions
    },
  }
}

/**
 * Which policy version each of the engine's weights versions stands for. The engine counts the weight changes it sees,
 * each at the start of an iteration (`refreshWeights`), and tags each token with its count; `announce(v)` is called
 * right after the weights change, before that iteration. While the engine has requests in flight its next count
 * (`weightsVersion + 1`) is the one these weights will get. When it has none, no sequence holds a token of its current
 * count that is not mapped yet (a sequence is mapped as it ends), and the new weights get the current count (an engine
 * that has not run yet, or lost its decoder, starts its next decoder at it) or the next: both stand for `v`. A count with
 * no entry (weights changed unannounced) keeps the version of the count before it. Without an engine: one version, the
 * last announced.
 */
function createVersionMap(engine: GenerationEngine | undefined) {
  const byEngineVersion = new Map<number, number>()
  let latest: number | undefined
  const lookup = (engineVersion: number): number => {
    for (let count = engineVersion; count >= 0; count--) {
      const version = byEngineVersion.get(count)
      if (version !== undefined) return version
    }
    return latest! // (every count below the lowest kept is older than it: no sequence still holds such a token)
  }
  return {
    announce(version: number): void {
      latest = version
      if (engine === undefined) return
      const count = engine.weightsVersion
      const { running, waiting } = engine.stats()
      if (running === 0 && waiting === 0) {
        byEngineVersion.clear() // no sequence holds a token of an earlier count: the map stays two entries between pushes when idle
        byEngineVersion.set(count, version)
      }
      byEngineVersion.set(count + 1, version)
    },
    current: (): number | undefined => latest,
    /** The policy version of each token (undefined when no version was ever announced). */
    ofEngineVersions(engineVersions: Int32Array): Int32Array | undefined {
      if (latest === undefined) return undefined
      return Int32Array.from(engineVersions, lookup)
    },
  }
}

/**
 * Consecutive batches of at most `maxBatch` rows, each fitting the context: a batch spans its longest prompt
 * plus its most new tokens (`batchContextLength`), so a row that would push it past `limit` starts the next
 * one. Every row fits alone (checked before), and sampling is per row, so the split changes no sample.
 */
function contextBatches(rows: readonly GenerationRow[], maxBatch: number, limit: number): GenerationRow[][] {
  const batches: GenerationRow[][] = []
  let batch: GenerationRow[] = []
  for (const row of rows) {
    if (batch.length > 0 && (batch.length >= maxBatch || batchContextLength([...batch, row]) > limit)) {
      batches.push(batch)
      batch = []
    }
    batch.push(row)
  }
  if (batch.length > 0) batches.push(batch)
  return batches
}

/** The policy's engine: `options.engine`'s settings, the policy's tokenizer; settings it cannot run are refused naming `options.engine.<setting>`. */
function createPolicyEngine(
  model: CausalLanguageModel,
  tokenizer: z.output<typeof localPolicyOptionsSchema>['tokenizer'],
  settings: true | Exclude<z.output<typeof localPolicyOptionsSchema>['engine'], boolean | GenerationEngine>,
): GenerationEngine {
  return createGenerationEngine(model, { ...(settings === true ? {} : settings), tokenizer }, 'options.engine')
}
