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

  it('lets a waiting task leave the queue when its signal aborts, keeping the order of the others', async () => {
    const limit = createConcurrencyLimit(1)
    let release!: () => void
    const first = limit.run(() => new Promise<string>((resolve) => (release = () => resolve('first'))))
    const controller = new AbortController()
    const second = limit.run(async () => 'second', controller.signal)
    const third = limit.run(async () => 'third')
    expect(limit.waiting).toBe(2)
    controller.abort(new Error('gone'))
    await expect(second).rejects.toThrow('gone')
    expect(limit.waiting).toBe(1)
    release()
    expect(await Promise.all([first, third])).toEqual(['first', 'third'])
    expect(limit.active).toBe(0)
    await expect(limit.run(async () => 1, AbortSignal.abort(new Error('already')))).rejects.toThrow('already')
  })
})
