/**
 * The distinct rows among `count` rows, each given by `parts(row)` — integer arrays compared element by element, in
 * order (`[inputIds, attentionMask]`, `[promptIds, responseIds]`: a part's length counts, so `[1, 2] | [3]` is not
 * `[1] | [2, 3]`). `first` holds the first row of each distinct one, in order; `indexOf[row]` is its index among
 * them. Rows are hashed (FNV-1a over each part's length and values) and compared only within a hash, so the work is
 * linear in the values.
 */
export function distinctRows(count: number, parts: (row: number) => readonly ArrayLike<number>[]): { first: number[]; indexOf: Int32Array } {
  const buckets = new Map<number, number[]>() // hash → indices among `first`
  const first: number[] = []
  const indexOf = new Int32Array(count)
  for (let row = 0; row < count; row++) {
    const arrays = parts(row)
    const hash = rowHash(arrays)
    const bucket = buckets.get(hash)
    let index = bucket?.find((candidate) => sameParts(parts(first[candidate]!), arrays))
    if (index === undefined) {
      index = first.length
      first.push(row)
      if (bucket === undefined) buckets.set(hash, [index])
      else bucket.push(index)
    }
    indexOf[row] = index
  }
  return { first, indexOf }
}

/** FNV-1a over each part's length and values (exported for the test that makes two rows collide). */
export function rowHash(arrays: readonly ArrayLike<number>[]): number {
  let hash = 0x811c9dc5
  for (const array of arrays) {
    hash = Math.imul(hash ^ array.length, 0x01000193)
    for (let index = 0; index < array.length; index++) hash = Math.imul(hash ^ array[index]!, 0x01000193)
  }
  return hash
}

function sameParts(left: readonly ArrayLike<number>[], right: readonly ArrayLike<number>[]): boolean {
  if (left.length !== right.length) return false
  for (let part = 0; part < left.length; part++) {
    const a = left[part]!
    const b = right[part]!
    if (a.length !== b.length) return false
    for (let index = 0; index < a.length; index++) if (a[index] !== b[index]) return false
  }
  return true
}
