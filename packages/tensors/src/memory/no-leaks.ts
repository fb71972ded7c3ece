import * as tf from '@tensorflow/tfjs-core'
import { LudicError } from '@ludic/core'

export interface NoLeaksOptions {
  /** Calls before counting, so one-time allocations (optimizer slots, kernel constants) settle. Default: 1. */
  warmup?: number
  /** Calls that are counted. Default: 1. */
  repeats?: number
}

const marker = Symbol.for('ludic.error.TensorLeakError')

/** `tf.memory().numTensors` grew across calls that should free what they allocate (see `expectNoLeaks`). */
export class TensorLeakError extends LudicError {
  private readonly [marker] = true
  override readonly name = 'TensorLeakError'
  readonly before: number
  readonly after: number

  constructor(before: number, after: number, label: string) {
    super(`${label} leaked ${after - before} tensor(s): tf.memory().numTensors went from ${before} to ${after}`)
    this.before = before
    this.after = after
  }

  static override isInstance(error: unknown): error is TensorLeakError {
    return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[marker] === true
  }
}

function disposeResult(value: unknown): void {
  if (value instanceof tf.Tensor) value.dispose()
  else if (Array.isArray(value)) value.forEach(disposeResult)
  else if (value !== null && typeof value === 'object' && !ArrayBuffer.isView(value) && !(value instanceof Promise)) {
    Object.values(value).forEach(disposeResult)
  }
}

/**
 * Calls `fn` (sync or async) and throws a `TensorLeakError` if `tf.memory().numTensors` grew.
 * Tensors inside the value `fn` returns are disposed first (they are the caller's). Works in any test
 * framework. Returns the number of tensors alive after the check.
 */
export async function expectNoLeaks(fn: () => unknown, options: NoLeaksOptions & { label?: string } = {}): Promise<number> {
  const warmup = options.warmup ?? 1
  const repeats = options.repeats ?? 1
  for (let index = 0; index < warmup; index++) disposeResult(await fn())
  const before = tf.memory().numTensors
  for (let index = 0; index < repeats; index++) disposeResult(await fn())
  const after = tf.memory().numTensors
  if (after !== before) throw new TensorLeakError(before, after, options.label ?? 'the function')
  return after
}
