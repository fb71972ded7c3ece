import {
  chatMessageSchema,
  InvalidArgumentError,
  parseArgument,
  type ChatEncodeOptions,
  type ChatMessage,
  type ChatTemplateFunction,
  type ChatTemplateOptions,
  type DecodeOptions,
  type EncodeOptions,
  type TokenizerV1,
} from '@ludic/core'
import { z } from 'zod'
import { AddedVocabulary, type AddedToken, type SpecialTokenMatching } from './added-vocabulary.js'
import { escapeSpecialTokens } from './chat-template/escape-special-tokens.js'
import { MissingChatTemplateError } from './chat-template/missing-chat-template-error.js'
import { renderChatTemplate } from './chat-template/render-chat-template.js'
import { createDecoder } from './decoders/create-decoder.js'
import { decodeTokens, type Decoder } from './decoders/decoder.js'
import { cleanUpTokenization } from './decoders/word-piece-decoder.js'
import { childLocation, parseJson, type JsonLocation } from './json-location.js'
import { createTokenizerModel } from './models/create-tokenizer-model.js'
import type { TokenizerModel } from './models/tokenizer-model.js'
import { createNormalizer } from './normalizers/create-normalizer.js'
import type { Normalizer } from './normalizers/normalizer.js'
import { createPostProcessor } from './post-processors/create-post-processor.js'
import type { PostProcessor } from './post-processors/post-processor.js'
import { createPreTokenizer } from './pre-tokenizers/create-pre-tokenizer.js'
import type { PieceSink, PreTokenizer, PreTokenizerStep } from './pre-tokenizers/pre-tokenizer.js'
import { createStreamDecoder, type StreamDecoder } from './stream-decoder.js'
import { tokenizerConfigSchema, tokenizerJsonSchema, type ParsedTokenizerConfig } from './tokenizer-json.js'
import { checkTokenCharacters, checkTokenId, tokenizerLimitsSchema, type TokenizerLimits, type TokenizerLimitsOptions } from './tokenizer-limits.js'
import { toWellFormed } from './well-formed.js'

/** Options of `Tokenizer.fromJSON`. */
export interface TokenizerLoadOptions {
  /** The name of the `tokenizer.json` in errors. Default `'tokenizer.json'`. */
  source?: string
  /** The name of the `tokenizer_config.json` in errors. Default `'tokenizer_config.json'`. */
  configSource?: string
  /** Bounds on sizes, nesting and chat-template work (see `tokenizerLimitsSchema`); a field left out keeps its default. */
  limits?: TokenizerLimitsOptions
}

const loadOptionsSchema = z.object({ source: z.string().optional(), configSource: z.string().optional(), limits: tokenizerLimitsSchema.prefault({}) })

/** Options of `Tokenizer.decode`, beyond the interface's. */
export interface TokenizerDecodeOptions extends DecodeOptions {
  /**
   * Remove the spaces before punctuation and English contractions, as transformers does when the
   * config's `clean_up_tokenization_spaces` is true. Default: false, as Hugging Face's `tokenizers`
   * (decoding then gives back the encoded text exactly).
   */
  cleanUpTokenizationSpaces?: boolean
}

/** Options of `Tokenizer.applyChatTemplate`, beyond the interface's. */
export interface TokenizerChatTemplateOptions extends ChatTemplateOptions {
  /** Further template variables, e.g. Qwen3's `enable_thinking: false`. */
  variables?: Readonly<Record<string, unknown>>
  /** The template to use when `chat_template` is a list of named templates. Default: `tool_use` with tools, else `default`. */
  templateName?: string
}

/** Options of `Tokenizer.encodeChat`: the chat template's, and the interface's `splitSpecialTokens` and `chatTemplate`. */
export interface TokenizerChatEncodeOptions extends TokenizerChatTemplateOptions, ChatEncodeOptions {}

const encodeOptionsSchema = z.strictObject({ addSpecialTokens: z.boolean().optional(), splitSpecialTokens: z.boolean().optional() }).optional()
const decodeOptionsSchema = z.strictObject({ skipSpecialTokens: z.boolean().optional(), cleanUpTokenizationSpaces: z.boolean().optional() }).optional()
const streamDecoderOptionsSchema = z.strictObject({ skipSpecialTokens: z.boolean().optional() }).optional()
const chatOptionsShape = {
  addGenerationPrompt: z.boolean().optional(),
  tools: z.array(z.record(z.string(), z.unknown())).optional(),
  variables: z.record(z.string(), z.unknown()).optional(),
  templateName: z.string().optional(),
}
const chatOptionsSchema = z.strictObject(chatOptionsShape).optional()
const chatEncodeOptionsSchema = z
  .strictObject({
    ...chatOptionsShape,
    splitSpecialTokens: z.boolean().optional(),
    chatTemplate: z
      .union([
        z.string().min(1),
        z.custom<ChatTemplateFunction>(
          (value) => typeof value === 'function',
          'must be a Jinja source or a function (messages, { addGenerationPrompt }) => text',
        ),
      ])
      .optional(),
  })
  .refine((options) => options.chatTemplate === undefined || options.templateName === undefined, {
    path: ['templateName'],
    message: "names one of the tokenizer's templates, so it cannot go with chatTemplate",
  })
  .optional()
/** Messages keep fields beyond the core schema (`tool_calls`, `reasoning_content`…) for templates that use them. */
const chatMessagesSchema = z.array(chatMessageSchema.loose())

/** Word cache: pieces longer than this are not cached (Hugging Face: 256). */
const maxCachedPieceLength = 256
/** Word cache: emptied when it holds this many pieces. */
const maxCachedPieces = 100_000

/**
 * A Hugging Face–compatible tokenizer: the `tokenizer.json` pipeline (normalizer → pre-tokenizer →
 * model → post-processor, and the decoder), the added tokens, and the chat template of
 * `tokenizer_config.json`. Ids are those of Hugging Face's `tokenizers`.
 */
export class Tokenizer implements TokenizerV1 {
  readonly specificationVersion = 'v1'
  /** Size of the id space: the largest id (model or added token) plus one. */
  readonly vocabSize: number
  readonly bosTokenId: number | undefined
  readonly eosTokenId: number | undefined
  readonly padTokenId: number | undefined
  readonly normalizer: Normalizer | undefined
  readonly preTokenizer: PreTokenizer | undefined
  readonly model: TokenizerModel
  readonly postProcessor: PostProcessor | undefined
  readonly decoder: Decoder | undefined
  readonly addedVocabulary: AddedVocabulary
  readonly config: ParsedTokenizerConfig
  /** The limits this tokenizer was loaded with (chat templates are rendered within them too). */
  readonly limits: TokenizerLimits

  private readonly cache = new Map<string, Int32Array>()
  private output = new Int32Array(1024)
  private outputLength = 0
  /** `runSteps[i](piece, atStart)` runs the pre-tokenizer from step i on a piece. */
  private readonly runSteps: PieceSink[]
  /** The pre-tokenizer's trailing `map` steps: applied on a cache miss, before the model. */
  private readonly trailingMaps: ((piece: string) => string)[]
  private readonly onSegment: (text: string, tokenId: number, atStart: boolean) => void

  private constructor(parts: {
    normalizer: Normalizer | undefined
    preTokenizer: PreTokenizer | undefined
    model: TokenizerModel
    postProcessor: PostProcessor | undefined
    decoder: Decoder | undefined
    addedTokens: AddedToken[]
    config: ParsedTokenizerConfig
    limits: TokenizerLimits
  }) {
    this.normalizer = parts.normalizer
    this.preTokenizer = parts.preTokenizer
    this.model = parts.model
    this.postProcessor = parts.postProcessor
    this.decoder = parts.decoder
    this.config = parts.config
    this.limits = parts.limits
    this.addedVocabulary = new AddedVocabulary(parts.addedTokens, parts.normalizer)
    let largestId = parts.model.largestId
    for (const token of parts.addedTokens) largestId = Math.max(largestId, token.id)
    this.vocabSize = largestId + 1
    this.bosTokenId = this.specialTokenId(parts.config.bos_token)
    this.eosTokenId = this.specialTokenId(parts.config.eos_token)
    this.padTokenId = this.specialTokenId(parts.config.pad_token)

    const steps: readonly PreTokenizerStep[] = parts.preTokenizer?.steps ?? []
    let splitEnd = 0
    steps.forEach((step, index) => {
      if (step.kind === 'split') splitEnd = index + 1
    })
    this.trailingMaps = steps.slice(splitEnd).map((step) => (step.kind === 'map' ? step.map : (piece: string) => piece))
    this.runSteps = new Array<PieceSink>(splitEnd + 1)
    this.runSteps[splitEnd] = (piece) => this.encodePiece(piece)
    for (let index = splitEnd - 1; index >= 0; index--) {
      const step = steps[index]!
      const next = this.runSteps[index + 1]!
      this.runSteps[index] = step.kind === 'map' ? (piece, atStart) => next(step.map(piece), atStart) : (piece, atStart) => step.split(piece, atStart, next)
    }
    const runFirstStep = this.runSteps[0]!
    this.onSegment = (text, tokenId, atStart) => {
      if (tokenId >= 0) this.pushId(tokenId)
      else runFirstStep(text, atStart)
    }
  }

  /**
   * Builds a tokenizer from the parsed `tokenizer.json` and, optionally, `tokenizer_config.json`
   * (special tokens and chat template). A malformed field gives a `ParseError` with its JSON path; an
   * unknown component type names the type and the supported ones. Sizes are bounded by `options.limits`
   * (ids below `maxVocabularySize`…), checked before anything is allocated.
   */
  static fromJSON(json: unknown, config?: unknown, options: TokenizerLoadOptions = {}): Tokenizer {
    const { source, configSource, limits } = parseArgument(loadOptionsSchema, options, 'options')
    const location: JsonLocation = { source: source ?? 'tokenizer.json', path: [] }
    const parsed = parseJson(tokenizerJsonSchema, json, location)
    const parsedConfig = parseJson(tokenizerConfigSchema, config ?? {}, { source: configSource ?? 'tokenizer_config.json', path: [] })
    parsed.added_tokens.forEach((token, index) => checkTokenId(token.id, childLocation(location, 'added_tokens', index, 'id'), limits))
    const addedContents = parsed.added_tokens.map((token) => token.content)
    checkTokenCharacters(addedContents, 'added tokens', (index) => childLocation(location, 'added_tokens', index, 'content'), limits)
    if (parsed.padding?.pad_id !== undefined) checkTokenId(parsed.padding.pad_id, childLocation(location, 'padding', 'pad_id'), limits)
    const build = <Component>(
      create: (json: unknown, location: JsonLocation, limits: TokenizerLimits) => Component,
      field: 'normalizer' | 'pre_tokenizer' | 'post_processor' | 'decoder',
    ) => (parsed[field] === null ? undefined : create(parsed[field], childLocation(location, field), limits))
    const normalizer = build(createNormalizer, 'normalizer')
    const preTokenizer = build(createPreTokenizer, 'pre_tokenizer')
    const model = createTokenizerModel(parsed.model, childLocation(location, 'model'), limits)
    const postProcessor = build(createPostProcessor, 'post_processor')
    const decoder = build(createDecoder, 'decoder')
    const addedTokens: AddedToken[] = parsed.added_tokens.map((token) => ({
      id: token.id,
      content: token.content,
      singleWord: token.single_word,
      leftStrip: token.lstrip,
      rightStrip: token.rstrip,
      normalized: token.normalized,
      special: token.special,
    }))
    return new Tokenizer({ normalizer, preTokenizer, model, postProcessor, decoder, addedTokens, config: parsedConfig, limits })
  }

  /**
   * Token ids of `text`; with `addSpecialTokens` (default true) the post-processor's special tokens are added; with
   * `splitSpecialTokens` (default false) special-token text is encoded as plain text (Hugging Face's
   * `split_special_tokens`; non-special added tokens still match). An unknown option is an `InvalidArgumentError`.
   */
  encode(text: string, options?: EncodeOptions): Int32Array {
    if (typeof text !== 'string') throw new InvalidArgumentError({ argument: 'text', value: text, message: 'must be a string' })
    const parsed = options === undefined ? undefined : parseArgument(encodeOptionsSchema, options, 'options')
    return this.encodeWith(toWellFormed(text), parsed?.addSpecialTokens ?? true, parsed?.splitSpecialTokens === true ? 'none' : 'all')
  }

  /** The text of token ids. Unknown ids are skipped, as in Hugging Face's `tokenizers`. */
  decode(ids: ArrayLike<number>, options?: TokenizerDecodeOptions): string {
    const { skipSpecialTokens = false, cleanUpTokenizationSpaces = false } = parseArgument(decodeOptionsSchema, options, 'options') ?? {}
    const text = this.decodeUnchecked(checkIds(ids), skipSpecialTokens)
    return cleanUpTokenizationSpaces ? cleanUpTokenization(text) : text
  }

  /** Token strings of ids (added tokens' contents; byte-level tokens as they are in the vocabulary). */
  idsToTokens(ids: ArrayLike<number>): (string | undefined)[] {
    return Array.from(checkIds(ids), (id) => this.idToToken(id))
  }

  tokenToId(token: string): number | undefined {
    return this.addedVocabulary.tokenToId(token) ?? this.model.tokenToId(token)
  }

  idToToken(id: number): string | undefined {
    return this.addedVocabulary.idToToken(id) ?? this.model.idToToken(id)
  }

  /** Empties the word cache (encodings of recent pieces), e.g. to measure cold-cache speed or free memory. */
  clearCache(): void {
    this.cache.clear()
  }

  /**
   * How many pieces the word cache holds now. Pieces longer than 256 characters are never cached: a tokenizer without a
   * pre-tokenizer that splits the text (Llama 2's) encodes a whole text as one piece, and its cache stays empty.
   */
  get cachedPieces(): number {
    return this.cache.size
  }

  /** Whether an id is an added token marked `special` (left out by `skipSpecialTokens`). */
  isSpecialTokenId(id: number): boolean {
    return this.addedVocabulary.isSpecialId(id)
  }

  /**
   * Incremental decoding for streamed generation: `push(id)` returns the text the id completes,
   * never half of a multi-byte character; `flush()` returns what is left at the end.
   */
  createStreamDecoder(options?: DecodeOptions): StreamDecoder {
    const { skipSpecialTokens = false } = parseArgument(streamDecoderOptionsSchema, options, 'options') ?? {}
    return createStreamDecoder((ids) => this.decodeUnchecked(ids, skipSpecialTokens))
  }

  /** The chat template of `tokenizer_config.json`, if it has one. */
  get chatTemplate(): string | undefined {
    const template = this.config.chat_template
    if (template === null || template === undefined) return undefined
    if (typeof template === 'string') return template
    return template.find((entry) => entry.name === 'default')?.template ?? template[0]?.template
  }

  /**
   * Renders messages with the Jinja chat template of `tokenizer_config.json`, as transformers'
   * `apply_chat_template(messages, tools=…, add_generation_prompt=…, tokenize=False)`.
   */
  applyChatTemplate(messages: readonly ChatMessage[], options?: TokenizerChatTemplateOptions): string {
    const parsedMessages = parseArgument(chatMessagesSchema, messages, 'messages')
    return this.renderChat(parsedMessages, parseArgument(chatOptionsSchema, options, 'options') ?? {}, undefined)
  }

  private renderChat(messages: readonly ChatMessage[], options: z.output<typeof chatOptionsSchema> & {}, source: string | undefined): string {
    return renderChatTemplate(
      source ?? this.selectChatTemplate(options.templateName, options.tools !== undefined && options.tools.length > 0),
      {
        messages,
        addGenerationPrompt: options.addGenerationPrompt ?? false,
        tools: options.tools,
        specialTokens: this.templateSpecialTokens(),
        variables: options.variables,
      },
      this.limits,
    )
  }

  /**
   * The ids of the rendered chat template, as transformers' `apply_chat_template(…, tokenize=True)` (no special
   * tokens added). `chatTemplate` renders with another template (a Jinja source, as transformers' `chat_template`
   * argument, or a function). With `splitSpecialTokens` (default false), special-token text in the messages
   * (contents, names, tool calls…) is encoded as plain text while the special tokens the template writes stay
   * special: each special token's text in the messages is replaced by a private-use escape character that occurs
   * nowhere else, the template is rendered, the text is cut at the special tokens that remain (the template's), and
   * the escapes are put back as text before normalization. The ids are those of encoding the rendered text with
   * special tokens read only where the template wrote them; without special-token text in the messages, exactly
   * those of `splitSpecialTokens: false`.
   */
  encodeChat(messages: readonly ChatMessage[], options?: TokenizerChatEncodeOptions): Int32Array {
    const parsedMessages = parseArgument(chatMessagesSchema, messages, 'messages')
    const { splitSpecialTokens, chatTemplate, ...templateOptions } = parseArgument(chatEncodeOptionsSchema, options, 'options') ?? {}
    const render = (rendered: readonly ChatMessage[]): string => {
      if (typeof chatTemplate === 'function') return chatTemplate(rendered, { addGenerationPrompt: templateOptions.addGenerationPrompt ?? false })
      return this.renderChat(rendered, templateOptions, chatTemplate)
    }
    if (splitSpecialTokens !== true) return this.encodeWith(toWellFormed(render(parsedMessages)), false, 'all')
    const escaped = escapeSpecialTokens(parsedMessages, this.addedVocabulary, [
      typeof chatTemplate === 'string' ? chatTemplate : (this.config.chat_template ?? null),
      templateOptions.tools ?? null,
      templateOptions.variables ?? null,
      this.templateSpecialTokens(),
    ])
    if (escaped === undefined) return this.encodeWith(toWellFormed(render(parsedMessages)), false, 'all')
    return this.encodeWith(toWellFormed(render(escaped.messages)), false, escaped.escapes)
  }

  private selectChatTemplate(name: string | undefined, hasTools: boolean): string {
    const template = this.config.chat_template
    if (template === null || template === undefined) {
      throw new MissingChatTemplateError('this tokenizer has no chat template (no chat_template in tokenizer_config.json)')
    }
    if (typeof template === 'string') {
      if (name !== undefined && name !== 'default')
        throw new InvalidArgumentError({ argument: 'options.templateName', value: name, message: 'the tokenizer has a single chat template' })
      return template
    }
    const wanted = name ?? (hasTools && template.some((entry) => entry.name === 'tool_use') ? 'tool_use' : 'default')
    const found = template.find((entry) => entry.name === wanted)
    if (found === undefined) {
      throw new InvalidArgumentError({
        argument: 'options.templateName',
        value: wanted,
        message: `no such chat template; there are: ${template.map((entry) => entry.name).join(', ')}`,
      })
    }
    return found.template
  }

  private templateSpecialTokens(): Record<string, unknown> {
    const tokens: Record<string, unknown> = {}
    for (const key of ['bos_token', 'eos_token', 'unk_token', 'pad_token'] as const) {
      const value = this.config[key]
      if (value !== undefined) tokens[key] = value
    }
    const additional = this.config.additional_special_tokens
    if (additional !== undefined) tokens.additional_special_tokens = additional.map((token) => (typeof token === 'string' ? token : token.content))
    return tokens
  }

  private specialTokenId(content: string | undefined): number | undefined {
    return content === undefined ? undefined : this.tokenToId(content)
  }

  private decodeUnchecked(ids: ArrayLike<number>, skipSpecialTokens: boolean): string {
    const tokens: string[] = []
    for (let index = 0; index < ids.length; index++) {
      const id = ids[index]!
      const token = this.idToToken(id)
      if (token === undefined) continue
      if (skipSpecialTokens && this.addedVocabulary.isSpecialId(id)) continue
      tokens.push(token)
    }
    return this.decoder === undefined ? tokens.join(' ') : decodeTokens(this.decoder, tokens)
  }

  /** Ids of well-formed text, the specials read as `specials` says. */
  private encodeWith(text: string, addSpecialTokens: boolean, specials: SpecialTokenMatching): Int32Array {
    this.outputLength = 0
    this.addedVocabulary.split(text, this.normalizer, this.onSegment, specials)
    const ids = this.output.slice(0, this.outputLength)
    return this.postProcessor === undefined ? ids : this.postProcessor.process(ids, addSpecialTokens)
  }

  private encodePiece(piece: string): void {
    let ids = this.cache.get(piece)
    if (ids === undefined) {
      let mapped = piece
      for (const map of this.trailingMaps) mapped = map(mapped)
      ids = this.model.tokenize(mapped)
      if (piece.length <= maxCachedPieceLength) {
        if (this.cache.size >= maxCachedPieces) this.cache.clear()
        this.cache.set(piece, ids)
      }
    }
    this.pushIds(ids)
  }

  private pushId(id: number): void {
    if (this.outputLength === this.output.length) this.growOutput(1)
    this.output[this.outputLength++] = id
  }

  private pushIds(ids: Int32Array): void {
    if (this.outputLength + ids.length > this.output.length) this.growOutput(ids.length)
    if (ids.length === 1) this.output[this.outputLength++] = ids[0]!
    else {
      this.output.set(ids, this.outputLength)
      this.outputLength += ids.length
    }
  }

  private growOutput(extra: number): void {
    const grown = new Int32Array(Math.max(this.output.length * 2, this.outputLength + extra))
    grown.set(this.output.subarray(0, this.outputLength))
    this.output = grown
  }
}

/** Checks that ids are non-negative integers; returns them. */
function checkIds(ids: ArrayLike<number>): ArrayLike<number> {
  if (ids === null || typeof ids !== 'object' || typeof ids.length !== 'number') {
    throw new InvalidArgumentError({ argument: 'ids', value: ids, message: 'must be an array of token ids' })
  }
  if (ids instanceof Int32Array || ids instanceof Uint32Array || ids instanceof Uint16Array) {
    if (ids instanceof Int32Array) for (let index = 0; index < ids.length; index++) if (ids[index]! < 0) throw badId(ids, index)
    return ids
  }
  for (let index = 0; index < ids.length; index++) {
    const id = ids[index]
    if (typeof id !== 'number' || !Number.isInteger(id) || id < 0) throw badId(ids, index)
  }
  return ids
}

function badId(ids: ArrayLike<number>, index: number): InvalidArgumentError {
  return new InvalidArgumentError({ argument: `ids[${index}]`, value: ids[index], message: 'a token id must be a non-negative integer' })
}
