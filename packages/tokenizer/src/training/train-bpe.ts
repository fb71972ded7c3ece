import { InvalidArgumentError, parseArgument } from '@ludic/core'
import { z } from 'zod'
import { AddedVocabulary } from '../added-vocabulary.js'
import { byteLevelAlphabet } from '../byte-level/byte-level-alphabet.js'
import { createPreTokenizer } from '../pre-tokenizers/create-pre-tokenizer.js'
import { preTokenize } from '../pre-tokenizers/pre-tokenizer.js'
import { translateOnigurumaPattern, UnsupportedPatternError } from '../regex/oniguruma-to-javascript.js'
import { toWellFormed } from '../well-formed.js'

/** Pre-tokenization patterns of well-known byte-level BPE tokenizers (Hugging Face `Split` regexes). */
export const preTokenizerPatterns = {
  gpt2: "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+",
  llama3: "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  qwen2: "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  gpt4o:
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
} as const

export const trainBpeOptionsSchema = z
  .object({
    /** Size of the vocabulary: special tokens, the 256 byte characters, then one token per merge. */
    vocabSize: z.number().int().min(1),
    /** Added tokens (`special: true`), given the first ids, never split and never merged. Default: none. */
    specialTokens: z.array(z.string().min(1, 'a special token cannot be empty')).default([]),
    /** A named pattern (`gpt2`, `llama3`, `qwen2`, `gpt4o`) or `{ pattern }`, an Oniguruma regex. Default: `llama3`. */
    preTokenizer: z.union([z.enum(['gpt2', 'llama3', 'qwen2', 'gpt4o']), z.object({ pattern: z.string().min(1) })]).default('llama3'),
    /** A pair must occur this many times to be merged. Default: 2. */
    minFrequency: z.number().int().min(1).default(2),
  })
  .refine((options) => new Set(options.specialTokens).size === options.specialTokens.length, {
    message: 'special tokens must be distinct',
    path: ['specialTokens'],
  })
  .superRefine((options, context) => {
    const minimum = 256 + options.specialTokens.length
    if (options.vocabSize < minimum) {
      const special = options.specialTokens.length
      context.addIssue({
        code: 'custom',
        path: ['vocabSize'],
        message: `must be at least ${minimum}: the 256 byte characters${special === 0 ? '' : ` and ${special} special token${special === 1 ? '' : 's'}`} come first, then one token per merge`,
      })
    }
  })
export type TrainBpeOptions = z.input<typeof trainBpeOptionsSchema>

/** The `tokenizer.json` of a trained byte-level BPE (plain JSON, ready for `JSON.stringify`). */
export interface TrainedTokenizerJson {
  version: '1.0'
  truncation: null
  padding: null
  added_tokens: { id: number; content: string; single_word: false; lstrip: false; rstrip: false; normalized: false; special: true }[]
  normalizer: null
  pre_tokenizer: { type: 'Sequence'; pretokenizers: Record<string, unknown>[] }
  post_processor: Record<string, unknown>
  decoder: Record<string, unknown>
  model: {
    type: 'BPE'
    dropout: null
    unk_token: null
    continuing_subword_prefix: null
    end_of_word_suffix: null
    fuse_unk: false
    byte_fallback: false
    ignore_merges: false
    vocab: Record<string, number>
    merges: [string, string][]
  }
}

/** A max-heap of candidate merges by (count desc, left id asc, right id asc), as Hugging Face's `BpeTrainer`; entries may be stale. */
class MergeQueue {
  private counts: number[] = []
  private lefts: number[] = []
  private rights: number[] = []

  get size(): number {
    return this.counts.length
  }

  private before(a: number, b: number): boolean {
    const { counts, lefts, rights } = this
    if (counts[a] !== counts[b]) return counts[a]! > counts[b]!
    if (lefts[a] !== lefts[b]) return lefts[a]! < lefts[b]!
    return rights[a]! < rights[b]!
  }

  private swap(a: number, b: number): void {
    for (const array of [this.counts, this.lefts, this.rights]) {
      const value = array[a]!
      array[a] = array[b]!
      array[b] = value
    }
  }

  push(count: number, left: number, right: number): void {
    let index = this.counts.length
    this.counts.push(count)
    this.lefts.push(left)
    this.rights.push(right)
    while (index > 0) {
      const parent = (index - 1) >> 1
      if (!this.before(index, parent)) break
      this.swap(index, parent)
      index = parent
    }
  }

  pop(): { count: number; left: number; right: number } {
    const top = { count: this.counts[0]!, left: this.lefts[0]!, right: this.rights[0]! }
    const last = this.counts.length - 1
    this.swap(0, last)
    this.counts.pop()
    this.lefts.pop()
    this.rights.pop()
    let index = 0
    for (;;) {
      const left = 2 * index + 1
      if (left >= this.counts.length) break
      const right = left + 1
      const child = right < this.counts.length && this.before(right, left) ? right : left
      if (!this.before(child, index)) break
      this.swap(index, child)
      index = child
    }
    return top
  }
}

/** Pair key: two ids below 2²⁴ in one number. */
const pairKey = (left: number, right: number): number => left * 16777216 + right

/**
 * Trains a byte-level BPE tokenizer on a corpus, as Hugging Face's `BpeTrainer` does: texts are cut
 * by the pre-tokenization pattern (special tokens taken out first), pieces become byte-level words,
 * then the most frequent adjacent pair is merged (ties: smaller ids first) until `vocabSize` tokens
 * or no pair occurs `minFrequency` times. Returns a `tokenizer.json` that `@huggingface/tokenizers`,
 * Hugging Face's Rust tokenizer and `Tokenizer.fromJSON` load and encode alike.
 */
export function trainBpe(corpus: Iterable<string>, options: TrainBpeOptions): TrainedTokenizerJson {
  const { vocabSize, specialTokens, preTokenizer, minFrequency } = parseArgument(trainBpeOptionsSchema, options, 'options')
  const pattern = typeof preTokenizer === 'string' ? preTokenizerPatterns[preTokenizer] : preTokenizer.pattern
  try {
    translateOnigurumaPattern(pattern)
  } catch (error) {
    if (UnsupportedPatternError.isInstance(error) || error instanceof SyntaxError) {
      throw new InvalidArgumentError({
        argument: 'options.preTokenizer.pattern',
        value: pattern,
        message: `cannot translate the pattern: ${error.message}`,
        cause: error,
      })
    }
    throw error
  }
  const preTokenizerJson = {
    type: 'Sequence' as const,
    pretokenizers: [
      { type: 'Split', pattern: { Regex: pattern }, behavior: 'Isolated', invert: false },
      { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
    ],
  }
  const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false }

  // 1. Count the words (byte-level pieces) of the corpus.
  const splitter = createPreTokenizer(preTokenizerJson, { source: 'trainBpe', path: ['preTokenizer'] })
  const addedVocabulary = new AddedVocabulary(
    specialTokens.map((content, id) => ({ id, content, singleWord: false, leftStrip: false, rightStrip: false, normalized: false, special: true })),
    undefined,
  )
  const wordCounts = new Map<string, number>()
  for (const text of corpus) {
    if (typeof text !== 'string') throw new InvalidArgumentError({ argument: 'corpus', value: text, message: 'must hold strings' })
    addedVocabulary.split(toWellFormed(text), undefined, (segment, tokenId) => {
      if (tokenId >= 0) return
      for (const word of preTokenize(splitter, segment)) wordCounts.set(word, (wordCounts.get(word) ?? 0) + 1)
    })
  }

  // 2. The initial vocabulary: special tokens, then the byte alphabet in byte order.
  const tokens: string[] = [...specialTokens]
  const ids = new Map<string, number>()
  specialTokens.forEach((token, id) => ids.set(token, id))
  for (const character of byteLevelAlphabet()) {
    if (!ids.has(character)) {
      ids.set(character, tokens.length)
      tokens.push(character)
    }
  }
  const words: number[][] = []
  const counts: number[] = []
  for (const [word, count] of wordCounts) {
    words.push(Array.from(word, (character) => ids.get(character)!))
    counts.push(count)
  }

  // 3. Pair counts and where each pair occurs.
  const pairCounts = new Map<number, number>()
  const pairWords = new Map<number, Set<number>>()
  const addPair = (left: number, right: number, wordIndex: number, count: number): void => {
    const key = pairKey(left, right)
    pairCounts.set(key, (pairCounts.get(key) ?? 0) + count)
    if (count > 0) {
      let where = pairWords.get(key)
      if (where === undefined) pairWords.set(key, (where = new Set()))
      where.add(wordIndex)
    }
  }
  words.forEach((symbols, wordIndex) => {
    for (let index = 0; index + 1 < symbols.length; index++) addPair(symbols[index]!, symbols[index + 1]!, wordIndex, counts[wordIndex]!)
  })
  const queue = new MergeQueue()
  for (const [key, count] of pairCounts) queue.push(count, Math.floor(key / 16777216), key % 16777216)

  // 4. Merge the best pair until the vocabulary is full.
  const merges: [string, string][] = []
  while (tokens.length < vocabSize && queue.size > 0) {
    const { count, left, right } = queue.pop()
    const key = pairKey(left, right)
    const current = pairCounts.get(key) ?? 0
    if (current !== count) {
      if (current > 0) queue.push(current, left, right) // stale: requeue with its current count
      continue
    }
    if (count < minFrequency) break
    const mergedToken = tokens[left]! + tokens[right]!
    let merged = ids.get(mergedToken)
    if (merged === undefined) {
      merged = tokens.length
      ids.set(mergedToken, merged)
      tokens.push(mergedToken)
    }
    merges.push([tokens[left]!, tokens[right]!])
    const changed = new Map<number, number>()
    for (const wordIndex of pairWords.get(key) ?? []) {
      const symbols = words[wordIndex]!
      const wordCount = counts[wordIndex]!
      const next: number[] = []
      for (let index = 0; index < symbols.length; index++) {
        if (index + 1 < symbols.length && symbols[index] === left && symbols[index + 1] === right) {
          next.push(merged)
          index++
        } else next.push(symbols[index]!)
      }
      // Replace the word's pairs: remove the old ones, add the new ones.
      for (let index = 0; index + 1 < symbols.length; index++) {
        const oldKey = pairKey(symbols[index]!, symbols[index + 1]!)
        pairCounts.set(oldKey, pairCounts.get(oldKey)! - wordCount)
        changed.set(oldKey, 0)
      }
      for (let index = 0; index + 1 < next.length; index++) {
        addPair(next[index]!, next[index + 1]!, wordIndex, wordCount)
        changed.set(pairKey(next[index]!, next[index + 1]!), 0)
      }
      words[wordIndex] = next
    }
    pairWords.delete(key)
    for (const changedKey of changed.keys()) {
      const changedCount = pairCounts.get(changedKey) ?? 0
      if (changedCount <= 0) {
        pairCounts.delete(changedKey)
        continue
      }
      queue.push(changedCount, Math.floor(changedKey / 16777216), changedKey % 16777216)
    }
  }

  // Special tokens are in the model's vocabulary too (as Hugging Face's trainer does): ids 0…n-1 all map.
  const vocab: Record<string, number> = {}
  tokens.forEach((token, id) => (vocab[token] = id))
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: specialTokens.map((content, id) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true })),
    normalizer: null,
    pre_tokenizer: preTokenizerJson,
    post_processor: byteLevel,
    decoder: byteLevel,
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges,
    },
  }
}
