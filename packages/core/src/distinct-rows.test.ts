import { describe, expect, it } from 'vitest'
import { distinctRows, rowHash } from './distinct-rows.js'
import { createRandom } from './random.js'

describe('distinctRows', () => {
  it('gives the first row of each distinct one and each row its index; a part’s length counts', () => {
    const rows = [
      [[1, 2], [3]],
      [[1], [2, 3]],
      [[1, 2], [3]],
      [[], [1, 2, 3]],
      [[1], [2, 3]],
      [
        [1, 2],
        [3, 0],
      ],
    ]
    const { first, indexOf } = distinctRows(rows.length, (row) => rows[row]!)
    expect(first).toEqual([0, 1, 3, 5])
    expect(Array.from(indexOf)).toEqual([0, 1, 0, 2, 1, 3])
    expect(distinctRows(0, () => []).first).toEqual([])
  })

  it('keeps rows apart that share a hash (compared element by element), among 2¹⁷ random rows', () => {
    const random = createRandom(11)
    const rows = Array.from({ length: 2 ** 17 }, () => Int32Array.from([random.nextUint32() | 0, random.nextInt(4)]))
    rows.push(rows[5]!.slice(), rows[77]!.slice()) // two repeats
    // The test's own check that it meets a collision: two different rows with one hash.
    const byHash = new Map<number, string>()
    let collisions = 0
    for (const row of rows) {
      const key = row.join(',')
      const seen = byHash.get(rowHash([row]))
      if (seen !== undefined && seen !== key) collisions++
      byHash.set(rowHash([row]), key)
    }
    expect(collisions).toBeGreaterThan(0)
    const { first, indexOf } = distinctRows(rows.length, (row) => [rows[row]!])
    const keys = rows.map((row) => row.join(','))
    expect(first.length).toBe(new Set(keys).size)
    expect(keys.filter((key, row) => keys[first[indexOf[row]!]!] !== key)).toEqual([])
    expect(indexOf[rows.length - 2]).toBe(indexOf[5])
    expect(indexOf[rows.length - 1]).toBe(indexOf[77])
  })
})
