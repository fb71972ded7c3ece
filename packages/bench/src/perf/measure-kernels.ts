/**
 * What the `kernels` suite measures inside a child process: GFLOP/s of the matmul shapes Ludic's models run
 * (plain, transposed — every matmul gradient — and batched attention products) on one backend. On `wasm` the
 * stock kernels ("before", fixes removed) and Ludic's kernel fixes ("after") alternate repetition by repetition,
 * so both see the same load and warm caches; medians of the repetitions after warm-up.
 */
import { applyKernelFixes, initTensors, removeKernelFixes } from '@ludic/tensors'
import * as tf from '@tensorflow/tfjs-core'
import { median } from './measure-model.js'

export interface KernelShape {
  name: string
  group: 'acceptance' | 'preset' | 'large'
  a: number[]
  b: number[]
  transposeA: boolean
  transposeB: boolean
}

/** The backends the suite measures, each in its own process: `wasm` measures "wasm before" and "wasm after". */
export const kernelBackends = ['cpu', 'wasm', 'wasm-threads', 'tensorflow'] as const
export type KernelBackend = (typeof kernelBackends)[number]

function shape(group: KernelShape['group'], name: string, a: number[], b: number[], transposeA = false, transposeB = false): KernelShape {
  return { name, group, a, b, transposeA, transposeB }
}

/** The shapes of the acceptance ratios (tensors' issue): transposed ≥ 80% of plain, batched ≥ 50% of a plain 2-D product. */
export const acceptanceShapes: readonly KernelShape[] = [
  shape('acceptance', 'plain [512,128]·[128,512]', [512, 128], [128, 512]),
  shape('acceptance', '[512,128]·[512,128]ᵀ', [512, 128], [512, 128], false, true),
  shape('acceptance', '[128,512]ᵀ·[128,512]', [128, 512], [128, 512], true, false),
  shape('acceptance', 'batched [32,64,16]·[32,64,16]ᵀ', [32, 64, 16], [32, 64, 16], false, true),
  shape('acceptance', 'plain 2-D [256,128]·[128,64]', [256, 128], [128, 64]),
]

/** Model presets (tiny d=128/4 heads, small d=256/4 heads, base d=512/8 heads), batch 8 × 128 tokens. */
function presetShapes(): KernelShape[] {
  const rows = 8 * 128
  const shapes: KernelShape[] = []
  for (const [preset, width, heads] of [
    ['tiny', 128, 4],
    ['small', 256, 4],
    ['base', 512, 8],
  ] as const) {
    const headWidth = width / heads
    const slices = 8 * heads
    shapes.push(
      shape('preset', `${preset} projection [${rows},${width}]·[${width},${width}]`, [rows, width], [width, width]),
      shape('preset', `${preset} projection dX [${rows},${width}]·[${width},${width}]ᵀ`, [rows, width], [width, width], false, true),
      shape('preset', `${preset} projection dW [${rows},${width}]ᵀ·[${rows},${width}]`, [rows, width], [rows, width], true, false),
      shape('preset', `${preset} MLP up [${rows},${width}]·[${width},${4 * width}]`, [rows, width], [width, 4 * width]),
      shape('preset', `${preset} attention QKᵀ [${slices},128,${headWidth}]·ᵀ`, [slices, 128, headWidth], [slices, 128, headWidth], false, true),
      shape('preset', `${preset} attention AV [${slices},128,128]·[${slices},128,${headWidth}]`, [slices, 128, 128], [slices, 128, headWidth]),
    )
  }
  return shapes
}

/** The shapes measured: the acceptance shapes, the presets' (unless `quick`), and a large plain product (unless `quick`). */
export function kernelShapes(quick: boolean): KernelShape[] {
  return [...acceptanceShapes, ...(quick ? [] : [...presetShapes(), shape('large', 'plain [1024,1024]·[1024,1024]', [1024, 1024], [1024, 1024])])]
}

/** FLOPs of one product: 2 · batches · rows · depth · columns. */
export function flopsOf(s: KernelShape): number {
  const rows = s.transposeA ? s.a.at(-1)! : s.a.at(-2)!
  const depth = s.transposeA ? s.a.at(-2)! : s.a.at(-1)!
  const columns = s.transposeB ? s.b.at(-2)! : s.b.at(-1)!
  const batches = tf.util.sizeFromShape(tf.broadcast_util.assertAndGetBroadcastShape(s.a.slice(0, -2), s.b.slice(0, -2)))
  return 2 * batches * rows * depth * columns
}

function seededTensor(dimensions: number[], seed: number): tf.Tensor {
  const size = tf.util.sizeFromShape(dimensions)
  const values = new Float32Array(size)
  for (let index = 0; index < size; index++) values[index] = Math.sin(seed * 7919 + index * 0.618) // in [-1, 1]
  return tf.tensor(values, dimensions)
}

interface Variant {
  name: string
  prepare(): void
}

/**
 * GFLOP/s of every shape under every variant on the active backend, shape by shape: warm-up, then repetitions that
 * alternate the variants, at least `minimumRepetitions`, then until `budgetMs` is spent on the shape (50 at most).
 */
function measureShapes(
  shapes: readonly KernelShape[],
  variants: readonly Variant[],
  minimumRepetitions: number,
  budgetMs: number,
): Record<string, Record<string, number>> {
  const results: Record<string, Record<string, number>> = {}
  for (const variant of variants) results[variant.name] = {}
  for (const s of shapes) {
    const a = seededTensor(s.a, 1)
    const b = seededTensor(s.b, 2)
    const run = (): number => {
      const begin = performance.now()
      tf.matMul(a, b, s.transposeA, s.transposeB).dispose()
      return performance.now() - begin
    }
    for (const variant of variants) {
      variant.prepare()
      if (run() < 50) run() // warm-up
    }
    const times = variants.map((): number[] => [])
    const start = performance.now()
    for (let repetition = 0; repetition < 50 && (repetition < minimumRepetitions || performance.now() - start < budgetMs); repetition++) {
      variants.forEach((variant, index) => {
        variant.prepare()
        times[index]!.push(run())
      })
    }
    variants.forEach((variant, index) => {
      results[variant.name]![s.name] = flopsOf(s) / median(times[index]!) / 1e6
    })
    tf.dispose([a, b])
  }
  return results
}

export interface KernelMeasurement {
  backend: KernelBackend
  device: string
  threads: number
  /** GFLOP/s by column (`cpu`, `wasm before`, `wasm after`, `wasm threads`, `tensorflow`) and shape name. */
  columns: Record<string, Record<string, number>>
}

/** Measures one backend of the suite in this process. */
export async function measureKernels(backend: KernelBackend, options: { quick: boolean; wasmThreads: number }): Promise<KernelMeasurement> {
  const shapes = kernelShapes(options.quick)
  switch (backend) {
    case 'cpu': {
      const runtime = await initTensors({ backend: 'cpu', verbose: false })
      return { backend, device: runtime.device, threads: runtime.threads, columns: measureShapes(shapes, [{ name: 'cpu', prepare: () => {} }], 3, 0) }
    }
    case 'wasm': {
      const runtime = await initTensors({ backend: 'wasm', wasmThreads: 1, verbose: false })
      const columns = measureShapes(
        shapes,
        [
          { name: 'wasm before', prepare: () => removeKernelFixes('wasm') },
          { name: 'wasm after', prepare: () => applyKernelFixes('wasm') },
        ],
        options.quick ? 5 : 7,
        options.quick ? 200 : 600,
      )
      applyKernelFixes('wasm')
      return { backend, device: runtime.device, threads: runtime.threads, columns }
    }
    case 'wasm-threads': {
      const runtime = await initTensors({ backend: 'wasm', wasmThreads: Math.max(2, options.wasmThreads), verbose: false })
      return {
        backend,
        device: runtime.device,
        threads: runtime.threads,
        columns: measureShapes(shapes, [{ name: 'wasm threads', prepare: () => {} }], 7, 300),
      }
    }
    case 'tensorflow': {
      const runtime = await initTensors({ backend: 'tensorflow', verbose: false })
      return { backend, device: runtime.device, threads: runtime.threads, columns: measureShapes(shapes, [{ name: 'tensorflow', prepare: () => {} }], 7, 300) }
    }
  }
}
