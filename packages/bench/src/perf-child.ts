/**
 * The child process of the speed suites (`dist/perf-child.js`): measures one backend, or writes the PyTorch
 * peer's inputs, and prints the result as one JSON line. Its argument is the task as JSON; progress goes to
 * standard error. Run by `runPerfChild`, never imported.
 */
import { measureKernels, type KernelBackend } from './perf/measure-kernels.js'
import { measureDecode, measureTrainSteps, writePeerInputs, type DecodeSettings, type TrainStepSettings } from './perf/measure-model.js'

export type PerfChildTask =
  | { task: 'kernels'; backend: KernelBackend; quick: boolean; wasmThreads: number }
  | { task: 'train-step'; backend: string; settings: TrainStepSettings }
  | { task: 'decode'; backend: string; settings: DecodeSettings }
  | { task: 'peer-inputs'; directory: string; presets: TrainStepSettings['presets']; vocabSize: number; batch: Record<string, number[][]> }

async function main(task: PerfChildTask): Promise<unknown> {
  switch (task.task) {
    case 'kernels':
      return measureKernels(task.backend, { quick: task.quick, wasmThreads: task.wasmThreads })
    case 'train-step':
      return measureTrainSteps(task.backend, task.settings)
    case 'decode':
      return measureDecode(task.backend, task.settings)
    case 'peer-inputs': {
      const batch = Object.fromEntries(Object.entries(task.batch).map(([name, rows]) => [name, rows.map((row) => Int32Array.from(row))]))
      await writePeerInputs(task.directory, task.presets, task.vocabSize, batch)
      return { written: task.directory }
    }
  }
}

const argument = process.argv[2]
if (argument === undefined) {
  console.error('perf-child: expected the task as a JSON argument')
  process.exit(2)
}
try {
  console.log(JSON.stringify(await main(JSON.parse(argument) as PerfChildTask)))
  process.exit(0)
} catch (error) {
  console.error(error instanceof Error ? (error.stack ?? error.message) : String(error))
  process.exit(1)
}
