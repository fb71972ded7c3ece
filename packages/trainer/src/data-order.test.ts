import { createRandom } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { createDataOrder } from './data-order.js'

describe('createDataOrder', () => {
  it('walks a fresh permutation each epoch, batches spanning two, and continues from its state exactly', () => {
    const order = createDataOrder(5, 3)
    const random = createRandom(1)
    const batches = [order.next(random), order.next(random)]
    expect(batches.flat().slice(0, 5).sort()).toEqual([0, 1, 2, 3, 4]) // the first epoch, whole
    const saved = order.getState()
    const generator = random.getState()
    const later = [order.next(random), order.next(random)]
    const resumed = createDataOrder(5, 3)
    resumed.setState(saved)
    const again = createRandom({ state: generator })
    expect([resumed.next(again), resumed.next(again)]).toEqual(later)
    expect(createDataOrder(2, 8).next(createRandom(0))).toHaveLength(2) // a batch is at most the data
    expect(() => resumed.setState([7])).toThrow(/'state'/)
  })
})
