import { describe, expect, it } from 'vitest'
import { yieldToEventLoop } from './event-loop.js'

describe('yieldToEventLoop', () => {
  it('lets a pending macrotask run, which awaiting a resolved promise does not', async () => {
    let ran = false
    setImmediate(() => {
      ran = true
    })
    await Promise.resolve()
    expect(ran).toBe(false)
    await yieldToEventLoop()
    expect(ran).toBe(true)
  })
})
