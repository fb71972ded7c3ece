import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { availableParallelism } from 'node:os'
import { InvalidArgumentError } from '@ludic/core'
import { activateBackend } from '../backend/init-tensors.js'
import { wantedWasmThreads } from './wasm-threads.js'

describe('the multithreaded wasm build under Node', () => {
  const saved = process.env.LUDIC_WASM_THREADS
  afterEach(() => {
    if (saved === undefined) delete process.env.LUDIC_WASM_THREADS
    else process.env.LUDIC_WASM_THREADS = saved
  })

  it('reads LUDIC_WASM_THREADS (max: the available parallelism, at most 8), else 1', () => {
    delete process.env.LUDIC_WASM_THREADS
    expect(wantedWasmThreads()).toBe(1)
    process.env.LUDIC_WASM_THREADS = '3'
    expect(wantedWasmThreads()).toBe(3)
    process.env.LUDIC_WASM_THREADS = 'max'
    expect(wantedWasmThreads()).toBe(Math.min(availableParallelism(), 8))
    for (const wrong of ['0', '9', '1.5', 'two']) {
      process.env.LUDIC_WASM_THREADS = wrong
      expect(() => wantedWasmThreads()).toThrow(InvalidArgumentError)
    }
  })

  it('starts with the threads asked for', async () => {
    const wanted = wantedWasmThreads()
    const runtime = await activateBackend('wasm')
    expect(runtime.threads).toBe(wanted)
  })

  it('runs the kernel fixes on 2 threads and lets Node exit (the pool does not hold the process)', () => {
    const module = fileURLToPath(new URL('./wasm-threads.ts', import.meta.url))
    const fixes = fileURLToPath(new URL('./index.ts', import.meta.url))
    // Products of ones: every entry is the depth. The large ones take XNNPACK's thread pool, the
    // batched one the SIMD gemm on the shared memory.
    const script = `
      import * as tf from '@tensorflow/tfjs-core'
      import * as wasm from '@tensorflow/tfjs-backend-wasm'
      import { createRequire } from 'node:module'
      import { dirname } from 'node:path'
      import { registerThreadedWasmBackend } from ${JSON.stringify(module)}
      import { applyKernelFixes } from ${JSON.stringify(fixes)}
      const require = createRequire(${JSON.stringify(module)})
      wasm.setWasmPaths(dirname(require.resolve('@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm')) + '/')
      await registerThreadedWasmBackend(2)
      await tf.setBackend('wasm')
      applyKernelFixes('wasm')
      const entries = (product) => [...new Set(product.dataSync())]
      console.log(JSON.stringify({
        threads: tf.backend().wasm.tfjs.getThreadsCount(),
        plain: entries(tf.matMul(tf.ones([256, 300]), tf.ones([300, 256]))),
        transposed: entries(tf.matMul(tf.ones([300, 256]), tf.ones([256, 300]), true, true)),
        batched: entries(tf.matMul(tf.ones([4, 33, 17]), tf.ones([4, 9, 17]), false, true)),
      }))
    `
    const child = spawnSync(process.execPath, ['--conditions=@ludic/source', '--import', 'tsx', '--input-type=module', '--eval', script], {
      cwd: fileURLToPath(new URL('.', import.meta.url)),
      encoding: 'utf8',
      timeout: 120_000, // a bound for a hung child (spawnSync holds this thread, so the test's own timeout cannot act), not a speed
    })
    expect(child.error, child.stderr).toBeUndefined()
    expect(child.status, child.stderr).toBe(0)
    expect(JSON.parse(child.stdout.trim().split('\n').at(-1)!)).toEqual({ threads: 2, plain: [300], transposed: [300], batched: [17] })
  })
})
