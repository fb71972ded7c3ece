import { join } from 'node:path'
import { createMetricsLog, type MetricsLog } from '../metrics-log.js'
import type { RunLoggerV1 } from './run-logger.js'

/**
 * `metrics.jsonl` in the run directory (nothing without one): one JSON object per step, a value that is not finite
 * written `null`. The log never holds a step twice: the first line a process writes drops every line from that step
 * on, and a resumed run keeps the lines up to its checkpoint's step, rebuilding them from the checkpoint's history
 * when some are missing (a log cut short or deleted), saying so through `notify`.
 */
export function createJsonlLogger(): RunLoggerV1 {
  let metricsLog: MetricsLog | undefined
  let checked = false
  return {
    specificationVersion: 'v1',
    name: 'jsonl',
    async start(run) {
      metricsLog = run.directory === undefined ? undefined : createMetricsLog(join(run.directory, 'metrics.jsonl'))
      checked = false
      if (metricsLog === undefined || run.resumedAtStep === undefined) return
      const step = run.resumedAtStep
      const logged = await metricsLog.truncateAfter(step)
      checked = true
      const history = run.history ?? []
      const missing = history.filter((record) => !logged.some((line) => line.step === record.step)).map((record) => record.step)
      if (missing.length > 0) {
        await metricsLog.rewrite(history)
        run.notify(`metrics.jsonl lacked step(s) ${formatSteps(missing)} of checkpoint-${step}; rebuilt it from the checkpoint's history`)
      }
    },
    async log(metrics) {
      if (metricsLog === undefined) return
      if (!checked) await metricsLog.truncateAfter(metrics.step - 1)
      checked = true
      await metricsLog.append(metrics)
    },
    text() {},
    close() {
      metricsLog = undefined
    },
  }
}

/** Steps as ranges: `3-5, 8`. */
function formatSteps(steps: readonly number[]): string {
  const ranges: string[] = []
  for (let index = 0; index < steps.length; ) {
    let end = index
    while (end + 1 < steps.length && steps[end + 1] === steps[end]! + 1) end++
    ranges.push(end === index ? String(steps[index]) : `${steps[index]}-${steps[end]}`)
    index = end + 1
  }
  return ranges.join(', ')
}
