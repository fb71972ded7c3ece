/**
 * `kernels` benchmark: GFLOP/s of the matmul shapes Ludic's models run (plain, transposed — every
 * matmul gradient — and batched attention products), on every backend that starts here (cpu, wasm,
 * tensorflow). For wasm it measures the stock kernels ("before", fixes removed) and the kernel fixes
 * ("after") alternately in one process, single-threaded, then the fixes on the multithreaded build
 * (opt-in in `initTensors`, see the package README) in a child process; it prints the acceptance ratios with
 * PASS/FAIL.
 *
 *   cd packages/tensors && node --import tsx bench/kernels.ts [--quick]
 *
 * Writes `<repository root>/bench-results/kernels.{json,md}`. Medians of several repetitions after
 * warm-up; compare ratios measured in the same run, not absolute figures across machines.
 */
import { spawnSync } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import * as tf from '@tensorflow/tfjs-core'

const thisFile = fileURLToPath(import.meta.url)
const repositoryRoot = resolve(dirname(thisFile), '../../..')
const sourceCondition = '--conditions=@ludic/source'

// The package source imports `@ludic/core`, which resolves to its build unless the `@ludic/source`
// export condition is on: run again with it, so the benchmark needs no build.
if (!process.execArgv.includes(sourceCondition)) {
  const child = spawnSync(process.execPath, [sourceCondition, ...process.execArgv, thisFile, ...process.argv.slice(2)], { stdio: 'inherit' })
  process.exit(child.status ?? 1)
}

const { startBackend } = await import('./bench-backends.js')
const { applyKernelFixes, removeKernelFixes } = await import('../src/kernels/index.js')

type VariantName = 'cpu' | 'wasm before' | 'wasm after' | 'wasm threads' | 'tensorflow'

interface Shape {
  name: string
  group: 'acceptance' | 'preset' | 'large'
  a: number[]
  b: number[]
  transposeA: boolean
  transposeB: boolean
}

const quick = process.argv.includes('--quick')
const childMode = process.argv.includes('--wasm-threads-child')

function shape(group: Shape['group'], name: string, a: number[], b: number[], transposeA = false, transposeB = false): Shape {
  return { name, group, a, b, transposeA, transposeB }
}

/** FLOPs of one product: 2 · batches · rows · depth · columns. */
function flopsOf(s: Shape): number {
  const rows = s.transposeA ? s.a.at(-1)! : s.a.at(-2)!
  const depth = s.transposeA ? s.a.at(-2)! : s.a.at(-1)!
  const columns = s.transposeB ? s.b.at(-2)! : s.b.at(-1)!
  const batches = tf.util.sizeFromShape(tf.broadcast_util.assertAndGetBroadcastShape(s.a.slice(0, -2), s.b.slice(0, -2)))
  return 2 * batches * rows * depth * columns
}

const acceptanceShapes: Shape[] = [
  shape('acceptance', 'plain [512,128]·[128,512]', [512, 128], [128, 512]),
  shape('acceptance', '[512,128]·[512,128]ᵀ', [512, 128], [512, 128], false, true),
  shape('acceptance', '[128,512]ᵀ·[128,512]', [128, 512], [128, 512], true, false),
  shape('acceptance', 'batched [32,64,16]·[32,64,16]ᵀ', [32, 64, 16], [32, 64, 16], false, true),
  shape('acceptance', 'plain 2-D [256,128]·[128,64]', [256, 128], [128, 64]),
]

/** Model presets (tiny d=128/4 heads, small d=256/4 heads, base d=512/8 heads), batch 8 × 128 tokens. */
function presetShapes(): Shape[] {
  const rows = 8 * 128
  const shapes: Shape[] = []
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

const shapes: Shape[] = [...acceptanceShapes, ...(quick ? [] : presetShapes()), shape('large', 'plain [1024,1024]·[1024,1024]', [1024, 1024], [1024, 1024])]

function seededTensor(dimensions: number[], seed: number): tf.Tensor {
  const size = tf.util.sizeFromShape(dimensions)
  const values = new Float32Array(size)
  for (let index = 0; index < size; index++) values[index] = Math.sin(seed * 7919 + index * 0.618) // in [-1, 1]
  return tf.tensor(values, dimensions)
}

/** A configuration measured side by side with others: `prepare` switches to it (e.g. kernel fixes on/off). */
interface Variant {
  name: VariantName
  prepare(): void
}

/**
 * GFLOP/s of every shape under every variant, on the active backend (kernels run synchronously on
 * cpu, wasm and tensorflow). Shape by shape: warm-up, then repetitions that alternate the variants,
 * so that "before" and "after" see the same load and the same warm caches; at least
 * `minimumRepetitions`, then until `budgetMs` is spent on the shape (50 at most); medians.
 */
function measureShapes(variants: Variant[], minimumRepetitions: number, budgetMs: number): Partial<Record<VariantName, Record<string, number>>> {
  const results: Partial<Record<VariantName, Record<string, number>>> = {}
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
      const sorted = times[index]!.sort((x, y) => x - y)
      results[variant.name]![s.name] = flopsOf(s) / sorted[Math.floor(sorted.length / 2)]! / 1e6
    })
    tf.dispose([a, b])
  }
  return results
}

function machine(): Record<string, string | number> {
  const info = readFileOrEmpty('/proc/cpuinfo')
  const model = /^model name\s*:\s*(.*)$/m.exec(info)?.[1] ?? cpus()[0]?.model ?? 'unknown'
  const flags = (/^flags\s*:\s*(.*)$/m.exec(info)?.[1] ?? '').split(' ')
  const simdFlags = flags.filter((flag) => /^(sse4_2|avx|avx2|fma|avx512f|avx512bw|avx512vl|avx512_vnni|amx_tile)$/.test(flag))
  return {
    cores: availableParallelism(),
    cpu: model,
    simdFlags: simdFlags.join(' '),
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    /** One-minute load average at the start: other processes skew absolute figures (ratios less so). */
    loadAverage: Number(loadavg()[0]!.toFixed(2)),
    node: process.version,
    tfjs: tf.version_core,
  }
}

function readFileOrEmpty(path: string): string {
  try {
    return readFileSync(path, 'utf8')
  } catch {
    return ''
  }
}

/** The multithreaded wasm build in a child process (a process holds one `wasm` backend). */
function measureWasmThreadsInChild(): { threads: number; results: Record<string, number> } | { error: string } {
  const child = spawnSync(process.execPath, [...process.execArgv, thisFile, '--wasm-threads-child', ...(quick ? ['--quick'] : [])], {
    encoding: 'utf8',
    maxBuffer: 1 << 24,
  })
  const line = child.stdout.split('\n').find((text) => text.startsWith('{'))
  if (child.status !== 0 || line === undefined) return { error: (child.stderr || child.stdout).trim().split('\n').slice(-3).join(' ') }
  return JSON.parse(line) as { threads: number; results: Record<string, number> }
}

if (childMode) {
  const { wantedWasmThreads } = await import('../src/kernels/wasm-threads.js')
  const threads = process.env.LUDIC_WASM_THREADS ? wantedWasmThreads() : Math.min(availableParallelism(), 8)
  const runtime = await startBackend('wasm', Math.max(2, threads))
  const results = measureShapes([{ name: 'wasm threads', prepare: () => {} }], 7, 300)['wasm threads']
  console.log(JSON.stringify({ threads: runtime.threads, results }))
  process.exit(0)
}

const started = performance.now()
const info = machine()
console.log(
  `kernels benchmark — ${info.cpu}, ${info.cores} cores, flags: ${info.simdFlags}; Node ${info.node}, tfjs ${info.tfjs}; load average ${info.loadAverage}`,
)

let columns: Partial<Record<VariantName, Record<string, number>>> = {}
const notes: string[] = []
let threadsUsed = 1

// CPU (pure JavaScript): the reference, slow.
await startBackend('cpu')
columns = { ...columns, ...measureShapes([{ name: 'cpu', prepare: () => {} }], 3, 0) }
console.log(`cpu done (${((performance.now() - started) / 1000).toFixed(0)} s)`)

// WebAssembly, single-threaded: stock kernels and the fixes, alternating.
const wasmRuntime = await startBackend('wasm', 1)
columns = {
  ...columns,
  ...measureShapes(
    [
      { name: 'wasm before', prepare: () => removeKernelFixes('wasm') },
      { name: 'wasm after', prepare: () => applyKernelFixes('wasm') },
    ],
    7,
    600,
  ),
}
applyKernelFixes('wasm')
console.log(`wasm done (${wasmRuntime.device}, ${wasmRuntime.threads} thread) (${((performance.now() - started) / 1000).toFixed(0)} s)`)

const threaded = measureWasmThreadsInChild()
if ('error' in threaded) notes.push(`wasm threads: not measured (${threaded.error})`)
else {
  columns['wasm threads'] = threaded.results
  threadsUsed = threaded.threads
  console.log(`wasm threads done (${threaded.threads} threads) (${((performance.now() - started) / 1000).toFixed(0)} s)`)
}

try {
  await startBackend('tensorflow')
  columns = { ...columns, ...measureShapes([{ name: 'tensorflow', prepare: () => {} }], 7, 300) }
  console.log(`tensorflow done (${((performance.now() - started) / 1000).toFixed(0)} s)`)
} catch (error) {
  notes.push(`tensorflow: not measured (${error instanceof Error ? error.message.split('\n')[0] : String(error)})`)
}

// Acceptance criteria, on wasm (same FLOPs on each side of every ratio).
const after = columns['wasm after']!
const before = columns['wasm before']!
const acceptance = [
  { criterion: '[512,128]·[512,128]ᵀ ≥ 80% of plain [512,128]·[128,512]', shape: acceptanceShapes[1]!.name, base: acceptanceShapes[0]!.name, threshold: 0.8 },
  { criterion: '[128,512]ᵀ·[128,512] ≥ 80% of plain [512,128]·[128,512]', shape: acceptanceShapes[2]!.name, base: acceptanceShapes[0]!.name, threshold: 0.8 },
  {
    criterion: 'batched [32,64,16]·[32,64,16]ᵀ ≥ 50% of plain 2-D [256,128]·[128,64]',
    shape: acceptanceShapes[3]!.name,
    base: acceptanceShapes[4]!.name,
    threshold: 0.5,
  },
].map((entry) => {
  const ratioAfter = after[entry.shape]! / after[entry.base]!
  const ratioBefore = before[entry.shape]! / before[entry.base]!
  return { ...entry, ratioBefore, ratioAfter, pass: ratioAfter >= entry.threshold }
})

const order: VariantName[] = ['cpu', 'wasm before', 'wasm after', 'wasm threads', 'tensorflow']
const variants = order.filter((variant) => columns[variant] !== undefined)
const header = ['shape', ...variants.map((variant) => (variant === 'wasm threads' ? `wasm threads (${threadsUsed})` : variant)), 'after/before']
const rows = shapes.map((s) => [
  s.name,
  ...variants.map((variant) => columns[variant]![s.name]!.toFixed(2)),
  `${(after[s.name]! / before[s.name]!).toFixed(1)}×`,
])
const table = [header, header.map(() => '---'), ...rows].map((cells) => `| ${cells.join(' | ')} |`).join('\n')
const acceptanceTable = [
  '| criterion | before | after | result |',
  '| --- | --- | --- | --- |',
  ...acceptance.map(
    (entry) => `| ${entry.criterion} | ${(100 * entry.ratioBefore).toFixed(0)}% | ${(100 * entry.ratioAfter).toFixed(0)}% | ${entry.pass ? 'PASS' : 'FAIL'} |`,
  ),
].join('\n')
const seconds = (performance.now() - started) / 1000

const markdown = [
  '# kernels benchmark',
  '',
  `Machine: ${info.cpu}, ${info.cores} cores (${info.simdFlags}), ${info.memoryGiB} GiB; Node ${info.node}, tfjs ${info.tfjs}; load average ${info.loadAverage} at the start.`,
  '',
  'GFLOP/s, median of several repetitions after warm-up. "wasm before": stock tfjs-backend-wasm kernels; "wasm after": Ludic kernel fixes; both single-threaded, alternating repetition by repetition in one process. "wasm threads": the fixes on the multithreaded build (`LUDIC_WASM_THREADS`, child process).',
  '',
  table,
  '',
  '## Acceptance (wasm, single-threaded, ratios of GFLOP/s at equal FLOPs)',
  '',
  acceptanceTable,
  '',
  ...notes.map((note) => `- ${note}`),
  `Total time: ${seconds.toFixed(0)} s.`,
  '',
].join('\n')

console.log(`\n${table}\n\n${acceptanceTable}\n${notes.map((note) => `- ${note}`).join('\n')}\nTotal time: ${seconds.toFixed(0)} s`)
const outputDirectory = join(repositoryRoot, 'bench-results')
mkdirSync(outputDirectory, { recursive: true })
writeFileSync(
  join(outputDirectory, 'kernels.json'),
  `${JSON.stringify({ suite: 'kernels', date: new Date().toISOString(), machine: info, unit: 'GFLOP/s', threads: threadsUsed, shapes, results: columns, acceptance, notes, seconds }, null, 2)}\n`,
)
writeFileSync(join(outputDirectory, 'kernels.md'), markdown)
console.log(`wrote ${join(outputDirectory, 'kernels.json')} and kernels.md`)
process.exit(0)
