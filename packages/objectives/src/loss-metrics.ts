import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError } from '@ludic/core'
import { describeIndex, type ValueChecks } from './tensor-checks.js'

/**
 * Metrics without a device read inside the loss. A loss call computes its metrics, and the checks of its
 * input values (a 0/1 mask, finite values at valid tokens…), as scalar tensors beside the loss, from the
 * same tensors (a clipped token is the one the loss clipped); the caller reads them all in one `data()`
 * after the step with `readLossMetrics`, which also throws if a check failed. So the loss, its gradient
 * and the optimizer step run without waiting for the device.
 */

/** What one row of `LossMetricTensors.checkResults` checks: the argument and the message of its error. */
export interface InputCheck {
  /** The argument the error names, e.g. `inputs.mask`. */
  readonly argument: string
  /** The shape of the checked tensor, to turn the flat index of the first failure into a position. */
  readonly shape: readonly number[]
  /** The message after the argument, at that position (`[row, column]`). */
  readonly message: (position: string) => string
}

/**
 * The metrics of one loss call as tensors, and the checks of its input values.
 *
 * Contract: the loss makes them inside the caller's `tf.tidy` / `computeGradients` and keeps them
 * (`tf.keep`), so they outlive it; the caller passes them to `readLossMetrics` once, after the step, which
 * reads them in one `data()` and disposes them. Metrics that are never read leak their tensors and skip
 * the input checks. The loss tensor and any per-token tensors of the result follow `tf.tidy` as usual.
 * A bad input value throws at the read: read before the optimizer step to keep it out of the weights.
 */
export interface LossMetricTensors<Metrics extends { [Name in keyof Metrics]: number }> extends AnyLossMetricTensors {
  /** One float32 scalar per metric (exact for counts below 2^24). */
  readonly values: { readonly [Name in keyof Metrics]: tf.Scalar }
  /**
   * `[checks, 3]` float32, one row per input check: the number of failing positions, the flat index of the
   * first (exact below 2^24), and its value. A row with 0 failures passed.
   */
  readonly checkResults: tf.Tensor2D
  /** What each row of `checkResults` checks, in order. */
  readonly checks: readonly InputCheck[]
}

/** The metrics of any loss call (what `readLossMetrics` accepts in a group). */
export interface AnyLossMetricTensors {
  readonly values: { readonly [name: string]: tf.Scalar }
  readonly checkResults: tf.Tensor2D
  readonly checks: readonly InputCheck[]
}

/** The plain metrics that `LossMetricTensors<Metrics>` reads to (undefined for an absent entry of a group). */
export type ReadLossMetrics<T> = T extends LossMetricTensors<infer Metrics> ? Metrics : undefined

/**
 * Keeps metric scalars and the results of `checks` for `readLossMetrics`. Call inside the loss's `tf.tidy`:
 * the check results are computed here, as tensors, and everything returned survives the tidy.
 */
export function keepLossMetrics<Metrics extends { [Name in keyof Metrics]: number }>(
  values: { [Name in keyof Metrics]: tf.Scalar },
  checks: readonly (ValueChecks | undefined)[],
): LossMetricTensors<Metrics> {
  const present = checks.filter((check): check is ValueChecks => check !== undefined)
  const checkResults = tf.keep(checkRows(present))
  for (const value of Object.values(values) as tf.Scalar[]) tf.keep(value)
  return {
    values,
    checkResults,
    checks: present.flatMap(({ entries, shape }) => entries.map(({ argument, message }) => ({ argument, shape, message }))),
  }
}

/** `[rows, 3]`: failures, flat index of the first, its value; consecutive checks of one size are reduced together. */
function checkRows(checks: readonly ValueChecks[]): tf.Tensor2D {
  const rows: tf.Tensor[] = []
  let start = 0
  while (start < checks.length) {
    const size = checks[start]!.failed.shape[1]!
    let end = start
    while (end < checks.length && checks[end]!.failed.shape[1] === size) end++
    const group = checks.slice(start, end)
    const count = group.reduce((total, check) => total + check.entries.length, 0)
    if (size === 0) rows.push(tf.zeros([count, 3]))
    else if (size === 1)
      rows.push(tf.concat([tf.concat(group.map((check) => check.failed)), tf.zeros([count, 1]), tf.concat(group.map((check) => check.values))], 1))
    else {
      const failed = group.length === 1 ? group[0]!.failed : tf.concat(group.map((check) => check.failed)) // [count, size]
      const values = group.length === 1 ? group[0]!.values : tf.concat(group.map((check) => check.values)) // [count, size]
      const first = tf.argMax(failed, 1) // [count] int32: the first failing position (0 when none fails)
      // A flat gather: the wasm backend's gather with batchDims reads out of bounds.
      const flatIndex = tf.add(first, tf.range(0, count * size, size, 'int32')) // [count]
      const firstValue = tf.gather(tf.reshape(values, [count * size]), flatIndex) // [count]
      rows.push(tf.stack([tf.sum(failed, 1), tf.cast(first, 'float32'), firstValue], 1)) // [count, 3]
    }
    start = end
  }
  if (rows.length === 0) return tf.zeros([0, 3])
  return (rows.length === 1 ? rows[0]! : tf.concat(rows)) as tf.Tensor2D
}

function isLossMetricTensors(value: unknown): value is AnyLossMetricTensors {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { checkResults?: unknown }).checkResults instanceof tf.Tensor &&
    typeof (value as { values?: unknown }).values === 'object' &&
    Array.isArray((value as { checks?: unknown }).checks)
  )
}

/**
 * Reads the metrics of one loss call, or of several at once (`{ policy: pg.metrics, kl: kl.metrics }`; an
 * `undefined` entry reads as `undefined`), as plain numbers: one `data()` of all their scalars stacked.
 * Disposes every tensor of `metrics`, then throws an `InvalidArgumentError` naming the input and the first
 * failing position if an input check of the call failed (the first failing check, in argument order).
 * Call it once per loss call, after the step (see `LossMetricTensors`).
 *
 * ```ts
 * const { policy, kl } = await readLossMetrics({ policy: pg.metrics, kl: klTerm.metrics })
 * ```
 */
export function readLossMetrics<Metrics extends { [Name in keyof Metrics]: number }>(metrics: LossMetricTensors<Metrics>): Promise<Metrics>
export function readLossMetrics<Group extends { readonly [key: string]: AnyLossMetricTensors | undefined }>(
  group: Group,
): Promise<{ [Key in keyof Group]: ReadLossMetrics<Group[Key]> }>
export async function readLossMetrics(metrics: unknown): Promise<unknown> {
  const single = isLossMetricTensors(metrics)
  if (!single && (typeof metrics !== 'object' || metrics === null)) {
    throw new InvalidArgumentError({
      argument: 'metrics',
      value: metrics,
      message: `passed to 'readLossMetrics' must be the metrics of a loss call, or an object of them`,
    })
  }
  const entries = (single ? [['', metrics]] : Object.entries(metrics as Record<string, unknown>)) as [string, unknown][]
  const present: [string, AnyLossMetricTensors][] = []
  for (const [key, entry] of entries) {
    if (entry === undefined) continue
    const argument = single ? 'metrics' : `metrics.${key}`
    if (!isLossMetricTensors(entry)) {
      throw new InvalidArgumentError({
        argument,
        value: entry,
        message: `passed to 'readLossMetrics' must be the metrics of a loss call (its result's \`metrics\`)`,
      })
    }
    if ([...Object.values(entry.values), entry.checkResults].some((tensor) => tensor.isDisposed)) {
      throw new InvalidArgumentError({
        argument,
        value: key,
        message: `passed to 'readLossMetrics' was already read (or disposed): read each loss call's metrics once`,
      })
    }
    present.push([key, entry])
  }
  const data = await readAndDispose(present.flatMap(([, entry]) => [...Object.values(entry.values), entry.checkResults]))
  const read: Record<string, Record<string, number>> = {}
  let offset = 0
  let failure: InvalidArgumentError | undefined
  for (const [key, entry] of present) {
    const values: Record<string, number> = {}
    for (const name of Object.keys(entry.values)) values[name] = data[offset++]!
    for (const check of entry.checks) {
      const [failed, index, value] = [data[offset]!, data[offset + 1]!, data[offset + 2]!]
      offset += 3
      if (failed === 0 || failure !== undefined) continue
      const more = failed > 1 ? ` (and ${failed - 1} more)` : ''
      failure = new InvalidArgumentError({ argument: check.argument, value, message: check.message(describeIndex(index, check.shape)) + more })
    }
    read[key] = values
  }
  if (failure !== undefined) throw failure
  return single ? read[''] : Object.fromEntries(entries.map(([key]) => [key, read[key]]))
}

/** The values of `tensors`, flattened and concatenated, in one `data()`; disposes them (also on failure). */
async function readAndDispose(tensors: tf.Tensor[]): Promise<Float32Array> {
  try {
    if (tensors.length === 0) return new Float32Array(0)
    const stacked = tf.tidy(() => tf.concat(tensors.map((tensor) => tf.reshape(tensor, [-1]))))
    try {
      return (await stacked.data()) as Float32Array
    } finally {
      stacked.dispose()
    }
  } finally {
    tf.dispose(tensors)
  }
}
