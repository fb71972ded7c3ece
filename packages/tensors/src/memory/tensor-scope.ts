import * as tf from '@tensorflow/tfjs-core'

/**
 * A set of tensors to free together, usable across `await` (unlike `tf.tidy`, which only tracks
 * synchronous code). Each scope tracks only what is handed to it, so concurrent scopes never free
 * each other's tensors.
 */
export interface TensorScope {
  /** Tracks every tensor inside `value` (a tensor, an array, an object of tensors) and returns it. */
  track<T extends tf.TensorContainer>(value: T): T
  /** Runs `fn` under `tf.tidy` and tracks what it returns. */
  tidy<T extends tf.TensorContainer>(fn: () => T): T
  /** Stops tracking the tensors inside `value`, so they outlive the scope; returns it. */
  keep<T extends tf.TensorContainer>(value: T): T
  /** Frees every tracked tensor not yet freed. */
  dispose(): void
  /** How many tracked tensors are still alive. */
  readonly size: number
}

function tensorsOf(value: tf.TensorContainer): tf.Tensor[] {
  const found: tf.Tensor[] = []
  const visit = (item: unknown): void => {
    if (item instanceof tf.Tensor) found.push(item)
    else if (Array.isArray(item)) item.forEach(visit)
    else if (item !== null && typeof item === 'object' && !ArrayBuffer.isView(item)) Object.values(item).forEach(visit)
  }
  visit(value)
  return found
}

export function createTensorScope(): TensorScope {
  const tracked = new Set<tf.Tensor>()
  return {
    track(value) {
      for (const tensor of tensorsOf(value)) tracked.add(tensor)
      return value
    },
    tidy(fn) {
      const result = tf.tidy(fn)
      for (const tensor of tensorsOf(result)) tracked.add(tensor)
      return result
    },
    keep(value) {
      for (const tensor of tensorsOf(value)) tracked.delete(tensor)
      return value
    },
    dispose() {
      for (const tensor of tracked) if (!tensor.isDisposed) tensor.dispose()
      tracked.clear()
    },
    get size() {
      let alive = 0
      for (const tensor of tracked) if (!tensor.isDisposed) alive++
      return alive
    },
  }
}

/**
 * Runs an async function with a scope and frees what the scope tracked when it settles (also when
 * it throws), except the tensors inside the returned value, which the caller owns.
 *
 * ```ts
 * const loss = await withTensorScope(async (scope) => {
 *   const logits = scope.track(model.forward(ids))
 *   await reportProgress()
 *   return scope.tidy(() => tf.mean(logits))
 * })
 * ```
 */
export async function withTensorScope<T extends tf.TensorContainer | undefined>(fn: (scope: TensorScope) => Promise<T> | T): Promise<T> {
  const scope = createTensorScope()
  try {
    const result = await fn(scope)
    if (result !== undefined) scope.keep(result as tf.TensorContainer)
    return result
  } finally {
    scope.dispose()
  }
}
