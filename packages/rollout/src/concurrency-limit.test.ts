import { describe, expect, it } from 'vitest'
import { createConcurrencyLimit } from './concurrency-limit.js'

describe('createConcurrencyLimit', () => {
  it('never runs more than the limit at once, even when a slot is handed over as a new task arrives', async () => {
    const limit = createConcurrencyLimit(3)
    let running = 0
    let most = 0
    const task = async (index: number) => {
      running++
      most = Math.max(most, running)
      await new Promise((resolve) => setTimeout(resolve, index % 3))
      running--
      if (index === 4) void limit.run(async () => task(100)) // arrives while a slot changes hands
      return index
    }
    const results = await Promise.all(Array.from({ length: 20 }, (_, index) => limit.run(() => task(index))))
    expect(results).toEqual(Array.from({ length: 20 }, (_, index) => index))
    expect(most).toBe(3)
    await new Promise((resolve) => setTimeout(resolve, 5))
    expect(limit.active).toBe(0)
    expect(limit.waiting).toBe(0)
  })
})
