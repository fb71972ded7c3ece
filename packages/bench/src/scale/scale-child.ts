import { buildScaleCheckpoint, measureScale, type ScaleMeasureSettings, type ScaleShape } from './measure-scale.js'

/** A task of the `scale` suite's child processes: one measurement, or the checkpoint when the peer cannot build it. */
export type ScaleChildTask = ({ task: 'measure' } & ScaleMeasureSettings) | { task: 'build'; directory: string; shape: ScaleShape; seed: number }

/**
 * Runs one task of the `scale` suite in this process (the suite starts a fresh Node process per task, which imports
 * the built package and calls this, so each measurement's peak resident memory is its own).
 */
export function runScaleTask(task: ScaleChildTask): Promise<unknown> {
  return task.task === 'build' ? buildScaleCheckpoint(task.directory, task.shape, task.seed) : measureScale(task)
}

/** The child's program (`node --input-type=module -e <this> <dist/index.js> <task JSON>`): the result as one JSON line. */
export const scaleChildProgram = `
const [entry, task] = process.argv.slice(1)
try {
  const { runScaleTask } = await import(entry)
  console.log(JSON.stringify(await runScaleTask(JSON.parse(task))))
  process.exit(0)
} catch (error) {
  console.error(error instanceof Error ? (error.stack ?? error.message) : String(error))
  console.error(error instanceof Error ? error.message : String(error)) // last: the suite reports the last lines
  process.exit(1)
}
`
