import type { JsonLocation } from '../json-location.js'
import { unknownTokenError, type TokenizerModel } from './tokenizer-model.js'

export interface UnigramOptions {
  /** Tokens with their log-probabilities, the id being the index. */
  vocabulary: readonly (readonly [string, number])[]
  unknownId: number | null
  byteFallback: boolean
  /** Where the model's JSON sits, for errors. */
  location?: JsonLocation
}

interface TrieNode {
  children: Map<number, TrieNode>
  id: number
}

/** Score of an unknown character: ten below the lowest token's, as SentencePiece. */
const unknownPenalty = 10

/**
 * Unigram language model (SentencePiece): the segmentation with the highest total log-probability,
 * by Viterbi over a trie of the vocabulary, as Hugging Face's `encode_optimized`. Characters no token
 * covers become the unknown token (consecutive ones fused), or their bytes with `byteFallback`.
 */
export class UnigramModel implements TokenizerModel {
  readonly vocabSize: number
  private readonly ids = new Map<string, number>()
  private readonly root: TrieNode = { children: new Map(), id: -1 }
  private readonly unknownScore: number

  constructor(readonly options: UnigramOptions) {
    this.vocabSize = options.vocabulary.length
    let minimum = Number.POSITIVE_INFINITY
    options.vocabulary.forEach(([token, score], id) => {
      if (!this.ids.has(token)) this.ids.set(token, id)
      if (score < minimum) minimum = score
      let node = this.root
      for (let index = 0; index < token.length; index++) {
        const code = token.charCodeAt(index)
        let child = node.children.get(code)
        if (child === undefined) node.children.set(code, (child = { children: new Map(), id: -1 }))
        node = child
      }
      if (node.id < 0) node.id = id
    })
    this.unknownScore = minimum - unknownPenalty
  }

  tokenToId(token: string): number | undefined {
    return this.ids.get(token)
  }

  get largestId(): number {
    return this.options.vocabulary.length - 1
  }

  idToToken(id: number): string | undefined {
    return this.options.vocabulary[id]?.[0]
  }

  tokenize(piece: string): Int32Array {
    const result: number[] = []
    for (const text of this.segment(piece)) {
      const id = this.ids.get(text)
      if (id !== undefined) {
        result.push(id)
        continue
      }
      if (this.options.byteFallback) {
        const byteIds = Array.from(new TextEncoder().encode(text), (byte) => this.ids.get(`<0x${byte.toString(16).toUpperCase().padStart(2, '0')}>`))
        if (byteIds.every((byteId) => byteId !== undefined)) {
          result.push(...(byteIds as number[]))
          continue
        }
      }
      result.push(this.requireUnknownId())
    }
    return Int32Array.from(result)
  }

  /** The best segmentation, as strings (fused unknown runs included). */
  segment(piece: string): string[] {
    const size = piece.length
    if (size === 0) return []
    const bestScore = new Float64Array(size + 1)
    const startsAt = new Int32Array(size + 1).fill(-1)
    const bestId = new Int32Array(size + 1)
    const { vocabulary } = this.options
    for (let start = 0; start < size; ) {
      const scoreHere = bestScore[start]!
      const code = piece.charCodeAt(start)
      const characterLength = code >= 0xd800 && code <= 0xdbff && start + 1 < size ? 2 : 1
      let hasSingleCharacter = false
      let node: TrieNode | undefined = this.root
      for (let end = start; end < size; end++) {
        node = node.children.get(piece.charCodeAt(end))
        if (node === undefined) break
        if (node.id < 0) continue
        const position = end + 1
        const candidate = vocabulary[node.id]![1] + scoreHere
        if (startsAt[position]! < 0 || candidate > bestScore[position]!) {
          bestScore[position] = candidate
          startsAt[position] = start
          bestId[position] = node.id
        }
        if (position - start === characterLength) hasSingleCharacter = true
      }
      if (!hasSingleCharacter) {
        const position = start + characterLength
        const candidate = this.unknownScore + scoreHere
        if (startsAt[position]! < 0 || candidate > bestScore[position]!) {
          bestScore[position] = candidate
          startsAt[position] = start
          bestId[position] = this.requireUnknownId()
        }
      }
      start += characterLength
    }
    const pieces: string[] = []
    let unknownRun = ''
    const unknownId = this.options.unknownId
    for (let end = size; end > 0; ) {
      const start = startsAt[end]!
      const text = piece.slice(start, end)
      if (unknownId !== null && bestId[end] === unknownId) unknownRun = text + unknownRun
      else {
        if (unknownRun.length > 0) {
          pieces.push(unknownRun)
          unknownRun = ''
        }
        pieces.push(text)
      }
      end = start
    }
    if (unknownRun.length > 0) pieces.push(unknownRun)
    return pieces.reverse()
  }

  private requireUnknownId(): number {
    if (this.options.unknownId === null) throw unknownTokenError('Unigram', this.options.location, 'unk_id', 'the model has no unknown token (unk_id)')
    return this.options.unknownId
  }
}
