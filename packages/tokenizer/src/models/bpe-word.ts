import type { MergeTable } from './merge-table.js'

/**
 * Applies BPE merges to a word, by rank, as Hugging Face's `Word::merge_all`: a priority queue of
 * adjacent pairs ordered by (rank, position); popping the best pair merges it if it is still current,
 * then queues the two pairs it forms with its neighbors. O(n log n) in the word's length.
 *
 * The buffers are reused across calls (one instance per model), so merging allocates only the result.
 */
export class BpeWordMerger {
  private symbols = new Int32Array(64)
  private previous = new Int32Array(64)
  private next = new Int32Array(64)
  /** Heap keys: rank · 2³² + position, so one comparison orders by rank, then position (exact below 2⁵³). */
  private heapKeys = new Float64Array(192)
  private heapMerged = new Int32Array(192)
  private heapSize = 0
  private length = 0

  constructor(private readonly merges: MergeTable) {}

  /** Starts a word; add its symbols with `add`, then call `merge`. */
  reset(capacity: number): void {
    if (this.symbols.length < capacity) {
      const size = Math.max(capacity, this.symbols.length * 2)
      this.symbols = new Int32Array(size)
      this.previous = new Int32Array(size)
      this.next = new Int32Array(size)
    }
    this.length = 0
  }

  add(id: number): void {
    if (this.length === this.symbols.length) {
      const size = this.symbols.length * 2
      const grow = (array: Int32Array): Int32Array<ArrayBuffer> => {
        const grown = new Int32Array(size)
        grown.set(array)
        return grown
      }
      this.symbols = grow(this.symbols)
      this.previous = grow(this.previous)
      this.next = grow(this.next)
    }
    this.symbols[this.length++] = id
  }

  /** Merges the word's symbols and returns the resulting ids. */
  merge(): Int32Array {
    const count = this.length
    if (count < 2) return this.symbols.slice(0, count)
    const { symbols, previous, next, merges } = this
    for (let index = 0; index < count; index++) {
      previous[index] = index - 1
      next[index] = index + 1 < count ? index + 1 : -1
    }
    this.heapSize = 0
    if (this.heapKeys.length < count * 3) {
      const size = count * 3
      this.heapKeys = new Float64Array(size)
      this.heapMerged = new Int32Array(size)
    }
    for (let index = 0; index + 1 < count; index++) {
      const slot = merges.find(symbols[index]!, symbols[index + 1]!)
      if (slot >= 0) this.push(merges.rank(slot), index, merges.merged(slot))
    }
    let remaining = count
    while (this.heapSize > 0) {
      const position = this.heapKeys[0]! % 4294967296
      const mergedId = this.heapMerged[0]!
      this.pop()
      const left = symbols[position]!
      if (left < 0) continue // removed by an earlier merge
      const right = next[position]!
      if (right < 0) continue // now the last symbol
      const slot = merges.find(left, symbols[right]!)
      if (slot < 0 || merges.merged(slot) !== mergedId) continue // stale entry
      symbols[position] = mergedId
      symbols[right] = -1
      remaining--
      const after = next[right]!
      next[position] = after
      if (after >= 0) previous[after] = position
      const before = previous[position]!
      if (before >= 0) {
        const slotBefore = merges.find(symbols[before]!, mergedId)
        if (slotBefore >= 0) this.push(merges.rank(slotBefore), before, merges.merged(slotBefore))
      }
      if (after >= 0) {
        const slotAfter = merges.find(mergedId, symbols[after]!)
        if (slotAfter >= 0) this.push(merges.rank(slotAfter), position, merges.merged(slotAfter))
      }
    }
    const result = new Int32Array(remaining)
    let written = 0
    for (let index = 0; index >= 0; index = next[index]!) result[written++] = symbols[index]!
    return result
  }

  private push(rank: number, position: number, merged: number): void {
    if (this.heapSize === this.heapKeys.length) {
      const keys = new Float64Array(this.heapSize * 2)
      keys.set(this.heapKeys)
      this.heapKeys = keys
      const mergedIds = new Int32Array(this.heapSize * 2)
      mergedIds.set(this.heapMerged)
      this.heapMerged = mergedIds
    }
    const { heapKeys, heapMerged } = this
    const key = rank * 4294967296 + position
    // Sift up: move parents down into the hole until the key fits.
    let index = this.heapSize++
    while (index > 0) {
      const parent = (index - 1) >> 1
      const parentKey = heapKeys[parent]!
      if (parentKey <= key) break
      heapKeys[index] = parentKey
      heapMerged[index] = heapMerged[parent]!
      index = parent
    }
    heapKeys[index] = key
    heapMerged[index] = merged
  }

  /** Removes the smallest entry. */
  private pop(): void {
    const last = --this.heapSize
    if (last === 0) return
    const { heapKeys, heapMerged } = this
    const key = heapKeys[last]!
    const merged = heapMerged[last]!
    // Sift down: move smaller children up into the hole until the last entry fits.
    let index = 0
    for (;;) {
      let child = 2 * index + 1
      if (child >= last) break
      if (child + 1 < last && heapKeys[child + 1]! < heapKeys[child]!) child++
      const childKey = heapKeys[child]!
      if (childKey >= key) break
      heapKeys[index] = childKey
      heapMerged[index] = heapMerged[child]!
      index = child
    }
    heapKeys[index] = key
    heapMerged[index] = merged
  }
}
