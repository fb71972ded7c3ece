import { ParseError } from '@ludic/core'
import type { JsonLocation } from '../json-location.js'
import type { Normalizer } from './normalizer.js'

const utf8Encoder = new TextEncoder()
const strictUtf8 = new TextDecoder('utf-8', { fatal: true })
const graphemes = new Intl.Segmenter(undefined, { granularity: 'grapheme' })
/** Text in which every character is its own grapheme (ASCII without CR, which joins a following LF). */
const simpleAscii = /^[\0-\x0c\x0e-\x7f]*$/

const precompiledCharsmapMarker = Symbol.for('ludic.error.PrecompiledCharsmapError')

/**
 * A malformed `precompiled_charsmap`: a `ParseError` at the charsmap (`normalizer.precompiled_charsmap` of
 * `tokenizer.json`). Its `name` stays `'ParseError'`; `PrecompiledCharsmapError.isInstance` tells it apart.
 */
export class PrecompiledCharsmapError extends ParseError {
  private readonly [precompiledCharsmapMarker] = true

  constructor(options: { message: string; location: JsonLocation }) {
    super({ source: options.location.source, path: options.location.path, message: options.message })
  }

  static override isInstance(error: unknown): error is PrecompiledCharsmapError {
    return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[precompiledCharsmapMarker] === true
  }
}

/**
 * SentencePiece's compiled normalization rules (`precompiled_charsmap`): a Darts double-array trie
 * over UTF-8 keys whose values point into a blob of NUL-terminated replacement strings. Layout:
 * u32 trie byte length (little-endian), the trie's u32 units, then the blob.
 */
class PrecompiledCharsmap {
  private readonly units: Uint32Array
  private readonly replacements: Uint8Array
  private readonly replacementCache = new Map<number, string>()

  constructor(bytes: Uint8Array, location: JsonLocation) {
    const fail = (message: string) => new PrecompiledCharsmapError({ message, location })
    if (bytes.length < 4) throw fail('the charsmap is shorter than its header')
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    const trieSize = view.getUint32(0, true)
    const unitCount = Math.floor(trieSize / 4)
    if (4 + unitCount * 4 > bytes.length || unitCount === 0) throw fail(`the trie (${trieSize} bytes) does not fit in the charsmap (${bytes.length} bytes)`)
    this.units = new Uint32Array(unitCount)
    for (let index = 0; index < unitCount; index++) this.units[index] = view.getUint32(4 + index * 4, true)
    this.replacements = bytes.subarray(4 + unitCount * 4)
    try {
      strictUtf8.decode(this.replacements)
    } catch {
      throw fail('the replacement strings are not valid UTF-8')
    }
  }

  /**
   * The replacement of the *shortest* key that prefixes `key` (Rust's `common_prefix_search(…)[0]`),
   * or undefined.
   */
  transform(key: Uint8Array): string | undefined {
    const units = this.units
    let position = 0
    let unit = units[0]!
    position ^= offsetOf(unit)
    for (const byte of key) {
      if (byte === 0) break
      position ^= byte
      unit = units[position] ?? 0
      if ((unit & 0x800000ff) >>> 0 !== byte) return undefined
      position ^= offsetOf(unit)
      if ((unit >>> 8) & 1) return this.replacementAt((units[position] ?? 0) & 0x7fffffff)
    }
    return undefined
  }

  private replacementAt(index: number): string {
    let replacement = this.replacementCache.get(index)
    if (replacement === undefined) {
      let end = index
      while (end < this.replacements.length && this.replacements[end] !== 0) end++
      replacement = strictUtf8.decode(this.replacements.subarray(index, end))
      this.replacementCache.set(index, replacement)
    }
    return replacement
  }
}

/** A double-array unit's offset to its children. */
function offsetOf(unit: number): number {
  return (unit >>> 10) * 2 ** ((unit & (1 << 9)) >>> 6)
}

/**
 * `Precompiled`: SentencePiece's normalization (e.g. `nmt_nfkc`), as Hugging Face applies it: each
 * grapheme shorter than 6 UTF-8 bytes is looked up whole (its shortest matching key replaces the
 * whole grapheme); otherwise, or without a match, each of its characters is looked up alone.
 * A null or empty charsmap normalizes nothing; a malformed one throws a `PrecompiledCharsmapError` at `location`.
 */
export function createPrecompiled(charsmap: Uint8Array | undefined, location: JsonLocation = { source: 'the precompiled charsmap', path: [] }): Normalizer {
  if (charsmap === undefined || charsmap.length === 0) return { normalize: (text) => text }
  const trie = new PrecompiledCharsmap(charsmap, location)
  const cache = new Map<string, string | null>()
  const lookUp = (chunk: string): string | undefined => {
    let replacement = cache.get(chunk)
    if (replacement === undefined) {
      replacement = trie.transform(utf8Encoder.encode(chunk)) ?? null
      if (cache.size > 100_000) cache.clear()
      cache.set(chunk, replacement)
    }
    return replacement ?? undefined
  }
  const normalizeGrapheme = (grapheme: string): string => {
    if (utf8Encoder.encode(grapheme).length < 6) {
      const replacement = lookUp(grapheme)
      if (replacement !== undefined) return replacement
    }
    let result = ''
    for (const character of grapheme) result += lookUp(character) ?? character
    return result
  }
  return {
    normalize(text) {
      let result = ''
      if (simpleAscii.test(text)) {
        for (let index = 0; index < text.length; index++) result += normalizeGrapheme(text[index]!)
        return result
      }
      for (const { segment } of graphemes.segment(text)) result += normalizeGrapheme(segment)
      return result
    },
  }
}
