import { availableParallelism } from 'node:os'
import { z } from 'zod'
import { numberCell, ratioCell, type BenchCell, type BenchReport } from '../bench-report.js'
import { defineBenchSuite, startClock, type BenchContext } from '../bench-suite.js'
import { describeMachine } from '../machine.js'
import { isChildError, type ChildAnswer } from './child-process.js'
import { acceptanceShapes, kernelBackends, kernelShapes, type KernelBackend, type KernelMeasurement } from './measure-kernels.js'
import { installedVersion } from './package-version.js'
import { runPerfChild } from './run-perf-child.js'
import { speedChart } from './train-step-suite.js'

export const kernelsOptionsSchema = z.strictObject({
  /** Only the acceptance shapes (no preset or large shapes), fewer repetitions. Default false. */
  quick: z.boolean().default(false),
  /** Backends, each in its own process: `wasm` measures the stock kernels and Ludic's fixes alternately. Default all. */
  backends: z
    .array(z.enum(kernelBackends))
    .min(1)
    .default([...kernelBackends]),
  /** Threads of the multithreaded WebAssembly build (`wasm-threads`), 2 to 8. Default: the cores available, at most 8. */
  wasmThreads: z
    .number()
    .int()
    .min(2)
    .max(8)
    .default(() => Math.max(2, Math.min(8, availableParallelism()))),
})
export type KernelsOptions = z.input<typeof kernelsOptionsSchema>

const columnOrder = ['cpu', 'wasm before', 'wasm after', 'wasm threads', 'tensorflow'] as const

const acceptance = [
  { criterion: '[512,128]·[512,128]ᵀ ≥ 80% of plain [512,128]·[128,512]', shape: acceptanceShapes[1]!.name, base: acceptanceShapes[0]!.name, threshold: 0.8 },
  { criterion: '[128,512]ᵀ·[128,512] ≥ 80% of plain [512,128]·[128,512]', shape: acceptanceShapes[2]!.name, base: acceptanceShapes[0]!.name, threshold: 0.8 },
  {
    criterion: 'batched [32,64,16]·[32,64,16]ᵀ ≥ 50% of plain 2-D [256,128]·[128,64]',
    shape: acceptanceShapes[3]!.name,
    base: acceptanceShapes[4]!.name,
    threshold: 0.5,
  },
]

/**
 * `kernels`: GFLOP/s of the matmul shapes Ludic's models run on every backend (each in its own process). On wasm
 * the stock tfjs-backend-wasm kernels ("before", the peer) and Ludic's kernel fixes ("after") alternate repetition
 * by repetition in one process, single-threaded; the ratio is after / before. Also the acceptance ratios of the
 * fixes (transposed and batched products against plain ones) with PASS/FAIL.
 */
export const kernelsSuite = defineBenchSuite({
  name: 'kernels',
  description: "Matmul GFLOP/s per backend; Ludic's WebAssembly kernel fixes beside the stock tfjs kernels in one process.",
  optionsSchema: kernelsOptionsSchema,
  async run(options, context: BenchContext): Promise<BenchReport> {
    const clock = startClock()
    const log = context.log ?? (() => {})
    const shapes = kernelShapes(options.quick)
    const answers: Partial<Record<KernelBackend, ChildAnswer<KernelMeasurement>>> = {}
    for (const [index, backend] of options.backends.entries()) {
      context.signal?.throwIfAborted()
      log(`${backend}…`)
      answers[backend] = await runPerfChild<KernelMeasurement>(
        { task: 'kernels', backend, quick: options.quick, wasmThreads: options.wasmThreads },
        { timeoutMs: 30 * 60_000, ...(context.signal === undefined ? {} : { signal: context.signal }), log },
      )
      context.onProgress?.(index + 1, options.backends.length, backend)
    }
    const columns: Record<string, Record<string, number>> = {}
    const notes: string[] = []
    let threads = options.wasmThreads
    for (const backend of options.backends) {
      const answer = answers[backend]!
      if (isChildError(answer)) {
        notes.push(`${backend}: not measured (${answer.error.slice(0, 200)})`)
        continue
      }
      Object.assign(columns, answer.columns)
      if (backend === 'wasm-threads') threads = answer.threads
    }
    const measuredColumns = columnOrder.filter((name) => columns[name] !== undefined)
    const before = columns['wasm before']
    const after = columns['wasm after']
    const stockUnavailable = before === undefined ? 'wasm was not measured' : undefined
    const rows: BenchCell[][] = shapes.map((shape) => [
      shape.name,
      ...measuredColumns.map((name) => numberCell(columns[name]![shape.name], 2)),
      ratioCell(after?.[shape.name], before?.[shape.name], stockUnavailable, 2),
    ])
    const acceptanceRows: BenchCell[][] = acceptance.map((entry) => {
      const ratioAfter = after === undefined ? undefined : after[entry.shape]! / after[entry.base]!
      const ratioBefore = before === undefined ? undefined : before[entry.shape]! / before[entry.base]!
      return [
        entry.criterion,
        numberCell(ratioBefore === undefined ? undefined : 100 * ratioBefore, 0),
        numberCell(ratioAfter === undefined ? undefined : 100 * ratioAfter, 0),
        ratioAfter === undefined ? 'not measured' : ratioAfter >= entry.threshold ? 'PASS' : 'FAIL',
      ]
    })
    const wasmVersion = installedVersion('@tensorflow/tfjs-backend-wasm')
    return {
      suite: 'kernels',
      title: 'Matmul kernels: GFLOP/s per backend',
      startedAt: clock.startedAt,
      durationSeconds: clock.seconds(),
      machine: describeMachine(options.backends.filter((backend) => !isChildError(answers[backend])).join(', ') || 'none'),
      peers: {
        'tfjs-backend-wasm stock kernels':
          before === undefined
            ? { available: false, reason: stockUnavailable ?? 'not measured' }
            : {
                available: true,
                ...(wasmVersion === undefined ? {} : { version: wasmVersion }),
                reason: 'the kernels Ludic replaces, measured in the same process',
              },
      },
      tables: [
        {
          title: 'GFLOP/s, median of several repetitions after warm-up',
          columns: ['shape', ...measuredColumns.map((name) => (name === 'wasm threads' ? `wasm threads (${threads})` : name)), 'wasm after / before'],
          rows,
          notes: [
            '"wasm before": stock tfjs-backend-wasm kernels; "wasm after": Ludic\'s kernel fixes; both single-threaded, alternating repetition by repetition in one process. "wasm threads": the fixes on the multithreaded build (initTensors\' wasmThreads).',
            ...notes,
          ],
        },
        {
          title: 'Acceptance (wasm, single-threaded): ratios of GFLOP/s at equal FLOPs, in %',
          columns: ['criterion', 'before %', 'after %', 'result'],
          rows: acceptanceRows,
        },
      ],
      chart: speedChart(
        'Matmul GFLOP/s',
        shapes.flatMap((shape) => measuredColumns.map((name) => ({ group: shape.name, implementation: name, value: columns[name]![shape.name] }))),
        'GFLOP/s',
      ),
      raw: {
        shapes,
        columns,
        threads,
        answers: Object.fromEntries(
          Object.entries(answers).map(([name, answer]) => [name, isChildError(answer) ? answer : { device: answer!.device, threads: answer!.threads }]),
        ),
      },
    }
  },
})
