import { Tokenizer as JavaScriptReference } from '@huggingface/tokenizers'
import { InvalidArgumentError } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { conformanceCorpus } from '../../test/conformance-corpus.js'
import { nativeEncode, nativeTokenizer } from '../../test/native-reference.js'
import { Tokenizer } from '../tokenizer.js'
import { trainBpe } from './train-bpe.js'

const corpus = conformanceCorpus().map((entry) => entry.text)

describe('trainBpe', () => {
  const json = trainBpe(corpus, { vocabSize: 1000, specialTokens: ['<|endoftext|>', '<|pad|>'], preTokenizer: 'llama3' })
  const ours = Tokenizer.fromJSON(json)

  it('fills the vocabulary: special tokens, 256 bytes, then merges', () => {
    expect(Object.keys(json.model.vocab)).toHaveLength(1000)
    expect(json.model.vocab['<|endoftext|>']).toBe(0)
    expect(json.model.vocab.Ġ).toBe(2 + 0x20)
    expect(json.model.merges.length).toBeGreaterThanOrEqual(1000 - 258)
    expect(ours.vocabSize).toBe(1000)
  })

  it('is deterministic', () => {
    expect(trainBpe(corpus, { vocabSize: 1000, specialTokens: ['<|endoftext|>', '<|pad|>'], preTokenizer: 'llama3' })).toEqual(json)
  })

  it('writes a tokenizer.json that @huggingface/tokenizers and the Rust tokenizer load and encode identically', async () => {
    const javascriptReference = new JavaScriptReference(JSON.parse(JSON.stringify(json)) as Record<string, unknown>, {})
    const rustReference = nativeTokenizer(json)
    const mismatches: string[] = []
    for (const text of [...corpus, 'unseen wörds ✓ 𝔘 <|endoftext|> <|pad|>x']) {
      const ids = Array.from(ours.encode(text))
      if (JSON.stringify(ids) !== JSON.stringify(javascriptReference.encode(text).ids)) mismatches.push(`@huggingface/tokenizers: ${JSON.stringify(text)}`)
      if (JSON.stringify(ids) !== JSON.stringify(await nativeEncode(rustReference, text))) mismatches.push(`Rust: ${JSON.stringify(text)}`)
      if (ours.decode(ids) !== text) mismatches.push(`round trip: ${JSON.stringify(text)}`)
    }
    expect(mismatches).toEqual([])
  })

  it('learns the most frequent pairs first, never across special tokens', () => {
    const small = trainBpe(['aaab aaab aaab<|sep|>ba ba'], { vocabSize: 262, specialTokens: ['<|sep|>'], preTokenizer: { pattern: '\\S+|\\s+' } })
    // Words: aaab ×3, ba ×2, Ġ ×3. (a,a) occurs 6 times; then (aa,a) and (a,b) tie at 3: smaller ids first.
    expect(small.model.merges).toEqual([
      ['a', 'a'],
      ['a', 'b'],
      ['aa', 'ab'],
      ['b', 'a'],
    ])
    const tokenizer = Tokenizer.fromJSON(small)
    expect(tokenizer.idsToTokens(tokenizer.encode('aaab aaab<|sep|>ba'))).toEqual(['aaab', 'Ġ', 'aaab', '<|sep|>', 'ba'])
  })

  it('stops when no pair is frequent enough', () => {
    const small = trainBpe(['ab ab cd'], { vocabSize: 400, minFrequency: 2, preTokenizer: 'gpt2' })
    expect(small.model.merges).toEqual([['a', 'b']])
  })

  it('validates its options', () => {
    expect(() => trainBpe(corpus, { vocabSize: 100 })).toThrow(InvalidArgumentError)
    // The error states the minimum: the 256 byte characters, then the special tokens.
    expect(() => trainBpe(corpus, { vocabSize: 100 })).toThrow(/options\.vocabSize.*must be at least 256: the 256 byte characters come first/)
    expect(() => trainBpe(corpus, { vocabSize: 257, specialTokens: ['<a>', '<b>'] })).toThrow(
      /must be at least 258: the 256 byte characters and 2 special tokens/,
    )
    expect(() => trainBpe(corpus, { vocabSize: 300, specialTokens: ['x', 'x'] })).toThrow(/options\.specialTokens/)
    expect(() => trainBpe(corpus, { vocabSize: 300, preTokenizer: { pattern: '\\G' } })).toThrow(/cannot translate the pattern/)
  })
})
