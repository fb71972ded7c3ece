import { Tokenizer as JavaScriptReference } from '@huggingface/tokenizers'
import type { TokenizerV1 } from '@ludic/core'
import { beforeAll, describe, expect, it } from 'vitest'
import { Tokenizer } from '../src/index.js'
import { conformanceCorpus, largeDocuments, type CorpusEntry } from './conformance-corpus.js'
import { nativeEncode, nativeTokenizer } from './native-reference.js'
import { referenceFiles, type ReferenceTokenizerName } from './reference-tokenizers.js'

interface Mismatch {
  category: string
  text: string
  ours: unknown
  reference: unknown
}

/** The first few differences, described, for readable failures. */
function describeMismatches(mismatches: Mismatch[]): string[] {
  return mismatches
    .slice(0, 5)
    .map(
      ({ category, text, ours, reference }) =>
        `${category}: ${JSON.stringify(text.slice(0, 60))}\n  ours      ${JSON.stringify(ours).slice(0, 300)}\n  reference ${JSON.stringify(reference).slice(0, 300)}`,
    )
}

/** What decoding an encoding gives back: the text for byte-level tokenizers (Qwen3: its NFC form); Llama 2's `▁` scheme only between added tokens. */
function expectedRoundTrip(name: ReferenceTokenizerName, text: string, tokenizer: Tokenizer): string | undefined {
  if (name === 'qwen3') return text.normalize('NFC')
  if (name === 'llama2') return tokenizer.addedVocabulary.tokens.some((token) => text.includes(token.content)) ? undefined : text
  return text
}

/**
 * Checks one real tokenizer against Hugging Face's two implementations on the conformance corpus:
 * `@huggingface/tokenizers` (JavaScript) and `tokenizers` (Rust, through Node bindings).
 */
export function describeConformance(name: ReferenceTokenizerName): void {
  describe(`${name} conformance`, () => {
    const corpus: CorpusEntry[] = conformanceCorpus()
    const documents: CorpusEntry[] = largeDocuments()
    const everything = [...corpus, ...documents]
    let ours: Tokenizer
    let javascriptReference: JavaScriptReference
    let rustReference: ReturnType<typeof nativeTokenizer>

    beforeAll(() => {
      const files = referenceFiles(name)
      ours = Tokenizer.fromJSON(files.tokenizer, files.config)
      javascriptReference = new JavaScriptReference(JSON.parse(files.tokenizerText) as Record<string, unknown>, files.config)
      rustReference = nativeTokenizer(files.tokenizerText)
    })

    it(`has ${corpus.length} strings (≥ 300) and three 100 KB documents`, () => {
      expect(corpus.length).toBeGreaterThanOrEqual(300)
      expect(documents.map((entry) => entry.text.length >= 100_000)).toEqual([true, true, true])
    })

    it('gives the ids of @huggingface/tokenizers on every string (and without special tokens on all but the documents)', () => {
      const mismatches: Mismatch[] = []
      for (const { category, text } of everything) {
        for (const addSpecialTokens of documents.some((document) => document.text === text) ? [true] : [true, false]) {
          const ids = Array.from(ours.encode(text, { addSpecialTokens }))
          const reference = javascriptReference.encode(text, { add_special_tokens: addSpecialTokens }).ids
          if (JSON.stringify(ids) !== JSON.stringify(reference)) mismatches.push({ category, text, ours: ids, reference })
        }
      }
      expect(describeMismatches(mismatches)).toEqual([])
    })

    it('gives the ids of the Rust tokenizer on every string, with and without special tokens', async () => {
      const mismatches: Mismatch[] = []
      for (const { category, text } of everything) {
        for (const addSpecialTokens of [true, false]) {
          const ids = Array.from(ours.encode(text, { addSpecialTokens }))
          const reference = await nativeEncode(rustReference, text, addSpecialTokens)
          if (JSON.stringify(ids) !== JSON.stringify(reference)) mismatches.push({ category, text, ours: ids, reference })
        }
      }
      expect(describeMismatches(mismatches)).toEqual([])
    })

    it('decodes as the Rust tokenizer, with and without special tokens', async () => {
      const mismatches: Mismatch[] = []
      for (const { category, text } of everything) {
        const ids = ours.encode(text)
        for (const skipSpecialTokens of [false, true]) {
          const decoded = ours.decode(ids, { skipSpecialTokens })
          const reference = await rustReference.decode(Array.from(ids), skipSpecialTokens)
          if (decoded !== reference) mismatches.push({ category, text, ours: decoded, reference })
        }
      }
      expect(describeMismatches(mismatches)).toEqual([])
    })

    it('decodes as @huggingface/tokenizers (which cleans up spaces unless the config says not to)', () => {
      const cleanUpTokenizationSpaces = (referenceFiles(name).config.clean_up_tokenization_spaces as boolean | undefined) ?? true
      const mismatches: Mismatch[] = []
      for (const { category, text } of everything) {
        const ids = Array.from(ours.encode(text))
        if (ids.length === 0) continue
        const decoded = ours.decode(ids, { cleanUpTokenizationSpaces })
        const reference = javascriptReference.decode(ids)
        if (decoded !== reference) mismatches.push({ category, text, ours: decoded, reference })
      }
      expect(describeMismatches(mismatches)).toEqual([])
    })

    it('decodes its encodings back to the text where the tokenizer is lossless', () => {
      const mismatches: Mismatch[] = []
      for (const { category, text } of everything) {
        const expected = expectedRoundTrip(name, text, ours)
        if (expected === undefined) continue
        const decoded = ours.decode(ours.encode(text, { addSpecialTokens: false }))
        if (decoded !== expected) mismatches.push({ category, text, ours: decoded, reference: expected })
      }
      expect(describeMismatches(mismatches)).toEqual([])
    })

    it.each([false, true])('streams the decoding piece by piece, never half a character (skipSpecialTokens: %s)', (skipSpecialTokens) => {
      const mismatches: Mismatch[] = []
      for (const { category, text } of corpus) {
        const ids = ours.encode(text)
        const stream = ours.createStreamDecoder({ skipSpecialTokens })
        const pieces = Array.from(ids, (id) => stream.push(id))
        pieces.push(stream.flush())
        const expected = ours.decode(ids, { skipSpecialTokens })
        const broken = !expected.includes('\ufffd') && pieces.some((piece) => piece.includes('\ufffd'))
        if (pieces.join('') !== expected || broken) mismatches.push({ category, text, ours: pieces, reference: expected })
      }
      expect(describeMismatches(mismatches)).toEqual([])
    })

    it('finds the special tokens of tokenizer_config.json', () => {
      const config = referenceFiles(name).config
      const idOf = (field: string): number | undefined => {
        const content = config[field]
        const text = typeof content === 'string' ? content : (content as { content?: string } | null | undefined)?.content
        return text === undefined ? undefined : (rustReference.tokenToId(text) ?? undefined)
      }
      const asInterface: TokenizerV1 = ours
      expect([asInterface.bosTokenId, asInterface.eosTokenId, asInterface.padTokenId]).toEqual([idOf('bos_token'), idOf('eos_token'), idOf('pad_token')])
    })

    it('maps tokens and ids as the Rust tokenizer, added tokens included, and counts the id space', () => {
      const ids = [0, 1, 100, 1000, 12345, 31999, ours.vocabSize - 1, ...ours.addedVocabulary.tokens.map((token) => token.id)]
      for (const id of ids) {
        expect(ours.idToToken(id)).toBe(rustReference.idToToken(id) ?? undefined)
        const token = ours.idToToken(id)
        if (token !== undefined) expect(ours.tokenToId(token)).toBe(rustReference.tokenToId(token))
      }
      expect(ours.idToToken(ours.vocabSize)).toBeUndefined()
      const largestId = Object.values(rustReference.getVocab(true)).reduce((largest, id) => Math.max(largest, id), -1)
      expect(ours.vocabSize).toBe(largestId + 1)
    })
  })
}
