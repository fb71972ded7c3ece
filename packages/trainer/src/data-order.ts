import { InvalidArgumentError, type Random } from '@ludic/core'

/**
 * The order a trainer walks its data in: mini-batches of `min(batchSize, size)` indices, drawn from a fresh seeded
 * permutation each epoch (a batch may span two), the position in it saved with each checkpoint (`getState`).
 */
export interface DataOrder {
  /** The next batch's indices, drawing a new permutation from `random` when the epoch's is used up. */
  next(random: Random): number[]
  /** What is left of the epoch's permutation (plain data, for a checkpoint). */
  getState(): number[]
  /** Continues from `getState()`'s result (undefined: at an epoch's start). */
  setState(state: readonly number[] | undefined): void
}

export function createDataOrder(size: number, batchSize: number): DataOrder {
  if (!Number.isInteger(size) || size < 1) throw new InvalidArgumentError({ argument: 'size', value: size, message: 'must be a positive integer' })
  const perStep = Math.min(batchSize, size)
  let left: number[] = []
  return {
    next(random) {
      const batch: number[] = []
      while (batch.length < perStep) {
        if (left.length === 0) left = random.shuffle(Array.from({ length: size }, (_, index) => index))
        batch.push(left.pop()!)
      }
      return batch
    },
    getState: () => [...left],
    setState(state) {
      const restored = [...(state ?? [])]
      if (restored.some((index) => !Number.isInteger(index) || index < 0 || index >= size))
        throw new InvalidArgumentError({ argument: 'state', value: restored, message: `must be indices below the data's size (${size})` })
      left = restored
    },
  }
}
