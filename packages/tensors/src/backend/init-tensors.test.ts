import * as tf from '@tensorflow/tfjs-core'
import { afterEach, describe, expect, it } from 'vitest'
import { BackendError, InvalidArgumentError } from '@ludic/core'
import { activateBackend, backendFromEnvironment, currentRuntime, initTensors } from './init-tensors.js'

// An isolated-test: the native backend's test below needs TensorFlow's first start in the process (it reads its
// thread pools once), which a file run before it in a shared worker would already have made.
const savedBackend = process.env.LUDIC_BACKEND
afterEach(() => {
  if (savedBackend === undefined) delete process.env.LUDIC_BACKEND
  else process.env.LUDIC_BACKEND = savedBackend
})

function isInstalled(moduleName: string): boolean {
  try {
    import.meta.resolve(moduleName)
    return true
  } catch {
    return false
  }
}

describe('initTensors', () => {
  it('starts the CPU and WebAssembly backends on request and reports what it chose', async () => {
    delete process.env.LUDIC_BACKEND
    const cpu = await initTensors({ backend: 'cpu' })
    expect(cpu).toMatchObject({ backend: 'cpu', tfBackend: 'cpu', threads: 1, skipped: [] })
    expect(tf.getBackend()).toBe('cpu')
    const wasm = await initTensors({ backend: 'wasm' })
    expect(wasm.backend).toBe('wasm')
    expect(wasm.device).toMatch(/WebAssembly/)
    expect(wasm.threads).toBeGreaterThanOrEqual(1)
    expect(tf.getBackend()).toBe('wasm')
    expect(currentRuntime()).toEqual(wasm)
    expect(
      tf.tidy(() =>
        tf
          .matMul(
            tf.tensor2d([
              [1, 2],
              [3, 4],
            ]),
            tf.tensor2d([
              [5, 6],
              [7, 8],
            ]),
          )
          .arraySync(),
      ),
    ).toEqual([
      [19, 22],
      [43, 50],
    ])
  })

  it('LUDIC_BACKEND overrides the option; a bad value names the variable', async () => {
    process.env.LUDIC_BACKEND = 'cpu'
    expect((await initTensors({ backend: 'wasm' })).backend).toBe('cpu')
    process.env.LUDIC_BACKEND = 'tpu'
    expect(() => backendFromEnvironment()).toThrow(InvalidArgumentError)
    await expect(initTensors()).rejects.toThrow(/'LUDIC_BACKEND' \(value: "tpu"\): must be one of auto, tensorflow-gpu/)
  })

  it('rejects unknown options with InvalidArgumentError naming them', async () => {
    delete process.env.LUDIC_BACKEND
    await expect(initTensors({ backend: 'gpu' as never })).rejects.toThrow(/'options.backend' \(value: "gpu"\)/)
    await expect(initTensors({ backnd: 'cpu' } as never)).rejects.toThrow(InvalidArgumentError)
    await expect(initTensors({ backend: 'wasm', wasmThreads: 0 })).rejects.toThrow(/'options.wasmThreads' \(value: 0\)/)
    await expect(initTensors({ backend: 'cpu', nativeThreads: { intraOp: 0 } })).rejects.toThrow(/'options.nativeThreads.intraOp' \(value: 0\)/)
    process.env.LUDIC_WASM_THREADS = 'lots'
    try {
      await expect(initTensors({ backend: 'wasm' })).rejects.toThrow(/'LUDIC_WASM_THREADS' \(value: "lots"\): must be max or an integer from 1 to 8/)
    } finally {
      delete process.env.LUDIC_WASM_THREADS
    }
  })

  it.skipIf(isInstalled('@tensorflow/tfjs-node-gpu'))('a requested backend that is missing gives a BackendError saying what to install', async () => {
    delete process.env.LUDIC_BACKEND
    const error = await initTensors({ backend: 'tensorflow-gpu' }).catch((caught: unknown) => caught)
    expect(BackendError.isInstance(error)).toBe(true)
    expect((error as BackendError).backend).toBe('tensorflow-gpu')
    expect((error as Error).message).toMatch(/is not installed: install @tensorflow\/tfjs-node-gpu/)
  })

  it.skipIf(isInstalled('webgpu'))('WebGPU without its packages gives a BackendError naming them', async () => {
    await expect(activateBackend('webgpu')).rejects.toThrow(/install @tensorflow\/tfjs-backend-webgpu@4.22.0 and webgpu/)
  })

  it.runIf(isInstalled('@tensorflow/tfjs-node'))(
    "[opt-in] nativeThreads sizes TensorFlow's pools on its first start (runs where @tensorflow/tfjs-node is installed)",
    async () => {
      delete process.env.LUDIC_BACKEND
      const saved = [process.env.TF_NUM_INTRAOP_THREADS, process.env.TF_NUM_INTEROP_THREADS] as const
      delete process.env.TF_NUM_INTRAOP_THREADS
      delete process.env.TF_NUM_INTEROP_THREADS
      try {
        const runtime = await initTensors({ backend: 'tensorflow', nativeThreads: { intraOp: 1, interOp: 1 } })
        expect(runtime.threads).toBe(1)
        expect([process.env.TF_NUM_INTRAOP_THREADS, process.env.TF_NUM_INTEROP_THREADS]).toEqual(['1', '1'])
        // Read once: a later start in the same process reports the pool TensorFlow already has.
        expect((await initTensors({ backend: 'tensorflow', nativeThreads: { intraOp: 2 } })).threads).toBe(1)
        expect(tf.tidy(() => tf.matMul(tf.tensor2d([[1, 2]]), tf.tensor2d([[3], [4]])).arraySync())).toEqual([[11]])
      } finally {
        if (saved[0] === undefined) delete process.env.TF_NUM_INTRAOP_THREADS
        else process.env.TF_NUM_INTRAOP_THREADS = saved[0]
        if (saved[1] === undefined) delete process.env.TF_NUM_INTEROP_THREADS
        else process.env.TF_NUM_INTEROP_THREADS = saved[1]
      }
    },
  )

  it('auto takes the first backend that starts, in order, with a one-line notice', async () => {
    delete process.env.LUDIC_BACKEND
    const lines: string[] = []
    const runtime = await initTensors({ log: (line) => lines.push(line) })
    const order = ['tensorflow-gpu', 'tensorflow', 'wasm', 'cpu']
    expect(runtime.skipped.map((skip) => skip.backend)).toEqual(order.slice(0, order.indexOf(runtime.backend)))
    if (!isInstalled('@tensorflow/tfjs-node-gpu')) expect(runtime.skipped[0]?.reason).toMatch(/tfjs-node-gpu/)
    if (!isInstalled('@tensorflow/tfjs-node')) expect(runtime.backend).toBe('wasm')
    expect(lines).toHaveLength(runtime.skipped.length > 0 ? 1 : 0)
    if (lines[0] !== undefined)
      expect(lines[0]).toMatch(new RegExp(`^\\[ludic\\] TensorFlow.js backend: ${runtime.backend} \\(skipped tensorflow-gpu not installed`))
    const quiet: string[] = []
    await initTensors({ verbose: false, log: (line) => quiet.push(line) })
    expect(quiet).toEqual([])
  })
})
