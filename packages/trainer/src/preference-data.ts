import { InvalidArgumentError, splitPreferencePair, type ChatMessage, type ChatTemplateFunction, type PreferencePair, type TokenizerV1 } from '@ludic/core'
import type { CausalLanguageModel } from '@ludic/model'
import { responseLogprobs, type TokenSequence } from './sequences.js'

/**
 * Preference pairs as token ids, the way TRL's `DPOTrainer` prepares them (`extract_prompt`,
 * `maybe_apply_chat_template`, `tokenize_row`), after core's `splitPreferencePair` has made the prompt explicit:
 *
 * - standard (`prompt`, `chosen`, `rejected` texts): each text encoded alone, without special tokens;
 * - conversational (messages): the prompt rendered with the chat template and the generation prompt, each
 *   response as the rendering of prompt + response minus the prompt's rendering (it must start with it);
 * - implicit prompt (no `prompt`): the longest shared leading messages of `chosen` and `rejected` (texts: their
 *   longest common prefix, a space before the split going with the responses, as TRL).
 *
 * The tokenizer's EOS is appended to each response (so the model learns to stop). An empty prompt becomes the
 * BOS token (a response needs a token before it). `margin` plays no part (TRL's DPO ignores it too).
 */

/** A pair as token ids: the prompt and the two responses that follow it. */
export interface PreferencePairIds {
  promptIds: Int32Array
  chosenIds: Int32Array
  rejectedIds: Int32Array
}

export interface PreferenceEncodingOptions {
  tokenizer: TokenizerV1
  /** For conversational pairs. Default: the tokenizer's `applyChatTemplate`. */
  chatTemplate?: ChatTemplateFunction | undefined
  /** Append the tokenizer's EOS to each response. Default true. */
  appendEos?: boolean
  /** Names the pair in errors. Default `pair`. */
  argument?: string
}

/** Encodes one pair (see the file's comment for the three formats). */
export function encodePreferencePair(pair: PreferencePair, options: PreferenceEncodingOptions): PreferencePairIds {
  const { tokenizer, appendEos = true, argument = 'pair' } = options
  const split = splitPreferencePair(pair, argument)
  let texts: { prompt: string; chosen: string; rejected: string }
  if (split.format === 'standard') texts = split
  else {
    const { prompt } = split
    const render = options.chatTemplate ?? tokenizer.applyChatTemplate?.bind(tokenizer)
    if (render === undefined) {
      throw new InvalidArgumentError({
        argument: 'chatTemplate',
        value: undefined,
        message: `is needed for conversational pairs (${argument}): the tokenizer has no applyChatTemplate`,
      })
    }
    const promptText = render(prompt, { addGenerationPrompt: true })
    const responseText = (name: 'chosen' | 'rejected', messages: readonly ChatMessage[]): string => {
      const full = render([...prompt, ...messages], { addGenerationPrompt: false })
      if (!full.startsWith(promptText)) {
        throw new InvalidArgumentError({
          argument: `${argument}.${name}`,
          value: full,
          message: "cannot be split from the prompt: the chat template's rendering of prompt + response does not start with the prompt's rendering",
        })
      }
      return full.slice(promptText.length)
    }
    texts = { prompt: promptText, chosen: responseText('chosen', split.chosen), rejected: responseText('rejected', split.rejected) }
  }
  let promptIds = tokenizer.encode(texts.prompt, { addSpecialTokens: false })
  if (promptIds.length === 0 && tokenizer.bosTokenId !== undefined) promptIds = Int32Array.of(tokenizer.bosTokenId)
  if (promptIds.length === 0) {
    throw new InvalidArgumentError({
      argument: `${argument}.prompt`,
      value: texts.prompt,
      message: 'encodes to no tokens and the tokenizer has no BOS to stand for it',
    })
  }
  const encodeResponse = (name: 'chosen' | 'rejected', text: string): Int32Array => {
    const ids = tokenizer.encode(text, { addSpecialTokens: false })
    const withEos = appendEos && tokenizer.eosTokenId !== undefined ? Int32Array.from([...ids, tokenizer.eosTokenId]) : ids
    if (withEos.length === 0) throw new InvalidArgumentError({ argument: `${argument}.${name}`, value: text, message: 'encodes to no tokens' })
    return withEos
  }
  return { promptIds, chosenIds: encodeResponse('chosen', texts.chosen), rejectedIds: encodeResponse('rejected', texts.rejected) }
}

/**
 * Bounds prompt + response to `maxLength` tokens, for each response. When the longer response does not fit
 * after the prompt, the prompt loses tokens from the left (its start) down to `maxPromptLength` (never below
 * what fits), then the responses lose tokens from the right (their end). `maxPromptLength` < `maxLength`, so a
 * response keeps at least one token.
 */
export function truncatePreferencePair(pair: PreferencePairIds, maxLength: number, maxPromptLength: number): PreferencePairIds {
  const longest = Math.max(pair.chosenIds.length, pair.rejectedIds.length)
  if (pair.promptIds.length + longest <= maxLength) return pair
  const keptPrompt = Math.min(pair.promptIds.length, Math.max(maxLength - longest, maxPromptLength))
  const room = maxLength - keptPrompt
  return {
    promptIds: pair.promptIds.slice(pair.promptIds.length - keptPrompt),
    chosenIds: pair.chosenIds.slice(0, room),
    rejectedIds: pair.rejectedIds.slice(0, room),
  }
}

/**
 * The length bounds of a trainer's encoded pairs: `maxLength` (default `defaultMaxLength`, at most the policy's
 * context `contextTokens`) and `maxPromptLength` (default ⌊maxLength/2⌋, below `maxLength` so a response keeps a
 * token). Errors name `config.maxLength` / `config.maxPromptLength`.
 */
export function preferenceLengthBounds(
  given: { maxLength?: number | undefined; maxPromptLength?: number | undefined },
  contextTokens: number,
  defaultMaxLength = contextTokens,
): { maxLength: number; maxPromptLength: number } {
  const maxLength = given.maxLength ?? defaultMaxLength
  if (maxLength > contextTokens) {
    throw new InvalidArgumentError({ argument: 'config.maxLength', value: maxLength, message: `must be at most the model's context (${contextTokens} tokens)` })
  }
  const maxPromptLength = given.maxPromptLength ?? Math.floor(maxLength / 2)
  if (maxPromptLength >= maxLength) {
    throw new InvalidArgumentError({
      argument: 'config.maxPromptLength',
      value: maxPromptLength,
      message: `must be below config.maxLength (${maxLength}): a response keeps a token`,
    })
  }
  return { maxLength, maxPromptLength }
}

/** Encodes pairs (`encodePreferencePair`, errors naming `field[index]`) and truncates each to the bounds. */
export function encodeAndTruncatePairs(
  pairs: readonly PreferencePair[],
  field: string,
  options: Omit<PreferenceEncodingOptions, 'argument'> & { maxLength: number; maxPromptLength: number },
): PreferencePairIds[] {
  const { maxLength, maxPromptLength, ...encoding } = options
  return pairs.map((pair, index) =>
    truncatePreferencePair(encodePreferencePair(pair, { ...encoding, argument: `${field}[${index}]` }), maxLength, maxPromptLength),
  )
}

/** Summed log π of each pair's chosen and rejected response (float64). */
export interface ResponseSums {
  chosen: Float64Array
  rejected: Float64Array
}

/** Summed log π of each pair's chosen and rejected response under `model` (no gradient), `chunkSize` sequences at a time. */
export async function responseSums(model: CausalLanguageModel, pairs: readonly PreferencePairIds[], chunkSize: number): Promise<ResponseSums> {
  const sequences: TokenSequence[] = [
    ...pairs.map((pair) => ({ promptIds: pair.promptIds, responseIds: pair.chosenIds })),
    ...pairs.map((pair) => ({ promptIds: pair.promptIds, responseIds: pair.rejectedIds })),
  ]
  const sums = (await responseLogprobs(model, sequences, chunkSize)).map((logprobs) => logprobs.reduce((total, value) => total + value, 0))
  return { chosen: Float64Array.from(sums.slice(0, pairs.length)), rejected: Float64Array.from(sums.slice(pairs.length)) }
}
