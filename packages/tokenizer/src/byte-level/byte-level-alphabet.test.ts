import native from 'tokenizers'
import { describe, expect, it } from 'vitest'
import { appendFromByteLevel, byteLevelAlphabet, toByteLevel } from './byte-level-alphabet.js'

describe('byte-level alphabet', () => {
  it('has the 256 characters of Hugging Face', () => {
    expect([...byteLevelAlphabet()].sort()).toEqual([...native.byteLevelAlphabet()].sort())
  })

  it.each([
    [' ', 'Ġ'],
    ['\n', 'Ċ'],
    ['\t', 'ĉ'],
    ['hello', 'hello'],
    ['é', 'Ã©'],
    ['😀', 'ðŁĺĢ'],
    ['\u00ad', 'ÂŃ'],
    ['a\ud800b', 'aï¿½b'],
  ])('maps %j to %j and back', (text, mapped) => {
    expect(toByteLevel(text)).toBe(mapped)
    const bytes = new Uint8Array(16)
    const length = appendFromByteLevel(mapped, bytes, 0)
    expect(new TextDecoder().decode(bytes.subarray(0, length))).toBe(text.replace('\ud800', '\ufffd'))
  })

  it('says when a character is not byte-level', () => {
    expect(appendFromByteLevel('日', new Uint8Array(4), 0)).toBe(-1)
  })
})
