/**
 * BPE merges by pair of token ids: an open-addressing hash table on typed arrays, so that a lookup on
 * the hot path allocates nothing. `find(left, right)` gives a slot; `rank(slot)` and `merged(slot)` its
 * merge priority (lower first) and the id of the merged token.
 */
export class MergeTable {
  private readonly mask: number
  private readonly lefts: Int32Array
  private readonly rights: Int32Array
  private readonly ranks: Int32Array
  private readonly mergedIds: Int32Array
  size = 0

  constructor(expectedSize: number) {
    let capacity = 16
    while (capacity < expectedSize * 2) capacity *= 2
    this.mask = capacity - 1
    this.lefts = new Int32Array(capacity).fill(-1)
    this.rights = new Int32Array(capacity)
    this.ranks = new Int32Array(capacity)
    this.mergedIds = new Int32Array(capacity)
  }

  private slotOf(left: number, right: number): number {
    let hash = Math.imul(left, 0x9e3779b1) ^ Math.imul(right + 0x7f4a7c15, 0x85ebca77)
    hash ^= hash >>> 15
    hash = Math.imul(hash, 0x2c1b3c6d)
    hash ^= hash >>> 12
    let slot = hash & this.mask
    while (this.lefts[slot] !== -1 && (this.lefts[slot] !== left || this.rights[slot] !== right)) slot = (slot + 1) & this.mask
    return slot
  }

  /** Sets the merge of a pair; a pair listed twice keeps its last rank, as Rust's HashMap does. */
  set(left: number, right: number, rank: number, merged: number): void {
    const slot = this.slotOf(left, right)
    if (this.lefts[slot] === -1) {
      if ((this.size + 1) * 2 > this.lefts.length) throw new RangeError('MergeTable is full')
      this.size++
    }
    this.lefts[slot] = left
    this.rights[slot] = right
    this.ranks[slot] = rank
    this.mergedIds[slot] = merged
  }

  /** The slot of a pair, or -1 when the pair does not merge. */
  find(left: number, right: number): number {
    const slot = this.slotOf(left, right)
    return this.lefts[slot] === -1 ? -1 : slot
  }

  rank(slot: number): number {
    return this.ranks[slot]!
  }

  merged(slot: number): number {
    return this.mergedIds[slot]!
  }
}
