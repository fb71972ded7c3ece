import type { PerfChildTask } from '../perf-child.js'
import { runJsonProcess, type ChildAnswer } from './child-process.js'
import { perfChildPath } from './package-paths.js'

/**
 * Runs a task of the speed suites in a child process (`dist/perf-child.js`, plain Node): one backend per process.
 * The child picks its backend itself: `LUDIC_BACKEND` and `LUDIC_WASM_THREADS` are not passed on.
 */
export function runPerfChild<Result>(
  task: PerfChildTask,
  options: { timeoutMs: number; signal?: AbortSignal; log?: (line: string) => void },
): Promise<ChildAnswer<Result>> {
  const env = { ...process.env }
  delete env.LUDIC_BACKEND
  delete env.LUDIC_WASM_THREADS
  return runJsonProcess<Result>(process.execPath, [perfChildPath(), JSON.stringify(task)], {
    timeoutMs: options.timeoutMs,
    env,
    ...(options.signal === undefined ? {} : { signal: options.signal }),
    ...(options.log === undefined ? {} : { onLine: options.log }),
  })
}
