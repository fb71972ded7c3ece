import { describe, expect, it } from 'vitest'
import * as tf from '@tensorflow/tfjs-core'
import { initTensors } from './init-tensors.js'

describe('initTensors', () => {
  it('starts wasm', async () => {
    const runtime = await initTensors({ backend: 'wasm' })
    expect(runtime.backend).toBe('wasm')
    expect(tf.getBackend()).toBe('wasm')
    console.log(runtime)
  })
  it('auto', async () => {
    const lines: string[] = []
    const runtime = await initTensors({ log: (l) => lines.push(l) })
    console.log(runtime, lines)
  })
})
