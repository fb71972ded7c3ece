import { describe, expect, it } from 'vitest'
import { referenceFiles } from '../test/reference-tokenizers.js'
import { byteLevelBpeJson } from '../test/small-tokenizers.js'
import { createStreamDecoder } from './stream-decoder.js'
import { Tokenizer } from './tokenizer.js'

/** Pushes every id; returns what each push emitted, and the flush last. */
function stream(tokenizer: Tokenizer, ids: ArrayLike<number>, skipSpecialTokens = false): string[] {
  const decoder = tokenizer.createStreamDecoder({ skipSpecialTokens })
  const pieces = Array.from(ids, (id) => decoder.push(id))
  pieces.push(decoder.flush())
  return pieces
}

describe('stream decoder', () => {
  const byteLevel = Tokenizer.fromJSON(byteLevelBpeJson())
  const llama2 = Tokenizer.fromJSON(referenceFiles('llama2').tokenizer, referenceFiles('llama2').config)

  it('holds back the bytes of a character until the last one comes (byte-level)', () => {
    const ids = byteLevel.encode('a😀b')
    expect(Array.from(ids)).toEqual([97, 240, 159, 152, 128, 98]) // the byte-level alphabet is in byte order
    expect(stream(byteLevel, ids)).toEqual(['a', '', '', '', '😀', 'b', ''])
  })

  it('holds back byte-fallback tokens, and keeps the space Metaspace decoding gives (Llama 2)', () => {
    const text = 'Hi 😀 there'
    const ids = llama2.encode(text, { addSpecialTokens: false })
    const pieces = stream(llama2, ids)
    expect(pieces.join('')).toBe(text)
    expect(pieces.filter((piece) => piece !== '')).toEqual(['Hi', ' ', '😀', ' there'])
  })

  it('leaves special tokens out with skipSpecialTokens', () => {
    const ids = llama2.encode('Hello</s>')
    expect(stream(llama2, ids).join('')).toBe('<s> Hello</s>')
    expect(stream(llama2, ids, true).join('')).toBe('Hello')
  })

  it('flushes an incomplete character at the end as U+FFFD, as a full decode does', () => {
    const ids = byteLevel.encode('😀').slice(0, 2)
    expect(stream(byteLevel, ids)).toEqual(['', '', '\ufffd'])
    expect(byteLevel.decode(ids)).toBe('\ufffd')
  })

  it('works over any decode function', () => {
    const letters = createStreamDecoder((ids) => ids.map((id) => String.fromCharCode(96 + id)).join(''))
    expect([letters.push(1), letters.push(2), letters.push(3), letters.flush()]).toEqual(['a', 'b', 'c', ''])
  })
})
