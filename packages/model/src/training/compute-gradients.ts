import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError } from '@ludic/core'

/**
 * The loss and its gradients with respect to named parameters (keyed by the parameters' own names). The
 * caller disposes `loss` and every gradient; intermediate tensors are freed.
 *
 * The gradients are `tf.variableGrads`'s, but the backward pass frees memory as it goes, as PyTorch's
 * autograd does: what an operation saved for its gradient is freed once that gradient is computed (at once
 * for operations no gradient flows through, e.g. those on frozen weights only), and the gradient of each
 * intermediate tensor once it has been passed to its inputs. tfjs keeps both until the whole backward pass
 * ends, so its peak holds every activation and every activation's gradient at once. Only the trainable
 * `parameters` get gradients: a frozen weight (a tied, frozen embedding) gets none computed.
 */
export function computeGradients(
  lossFunction: () => tf.Scalar,
  parameters: ReadonlyMap<string, tf.Variable>,
): { loss: tf.Scalar; gradients: Map<string, tf.Tensor> } {
  if (typeof lossFunction !== 'function') {
    throw new InvalidArgumentError({ argument: 'lossFunction', value: lossFunction, message: 'must be a function returning a scalar loss' })
  }
  if (!(parameters instanceof Map) || parameters.size === 0) {
    throw new InvalidArgumentError({ argument: 'parameters', value: parameters, message: 'must be a non-empty Map from names to tf.Variable' })
  }
  const frozen = [...parameters].filter(([, variable]) => !variable.trainable).map(([name]) => name)
  if (frozen.length > 0) {
    throw new InvalidArgumentError({
      argument: 'parameters',
      value: frozen,
      message: `${frozen.join(', ')} ${frozen.length === 1 ? 'is' : 'are'} frozen (trainable = false): pass only the parameters being trained (model.trainableParameters())`,
    })
  }
  const names = [...parameters.keys()]
  const { value, grads } = tapeGradients(lossFunction, [...parameters.values()])
  const gradients = new Map<string, tf.Tensor>()
  const unconnected: string[] = []
  names.forEach((name, index) => {
    const gradient = grads[index]
    if (gradient === undefined) unconnected.push(name)
    else gradients.set(name, gradient)
  })
  if (unconnected.length > 0) {
    tf.dispose([value, ...gradients.values()])
    throw new InvalidArgumentError({
      argument: 'parameters',
      value: unconnected,
      message: `the loss does not depend on ${unconnected.join(', ')}: pass only the parameters being trained`,
    })
  }
  return { loss: value, gradients }
}

/** What tfjs-core 4.22 records for one operation while a gradient tape is on (`tape.ts`'s `TapeNode`). */
interface TapeNode {
  kernelName: string
  inputs: Record<string, tf.Tensor>
  outputs: tf.Tensor[]
  gradient?: (dys: (tf.Tensor | null)[]) => Record<string, () => tf.Tensor>
  saved?: tf.Tensor[]
}

/** The parts of tfjs-core's engine that `engine.gradients` uses (not in its public types). */
interface TapeEngine {
  state: { activeTape: TapeNode[] | null; gradientDepth: number }
  startTape(): void
  endTape(): void
}

/**
 * `engine.gradients(f, xs)` of tfjs-core 4.22, with the backward pass freeing what it no longer needs (see
 * `computeGradients`). `grads[i]` is undefined where the loss does not depend on `xs[i]`. Inside another
 * gradient (a higher-order one), or with an engine that lacks the tape, it is `tf.variableGrads` itself.
 */
function tapeGradients(f: () => tf.Scalar, xs: tf.Variable[]): { value: tf.Scalar; grads: (tf.Tensor | undefined)[] } {
  const engine = tf.engine() as unknown as Partial<TapeEngine>
  const trainable = xs.filter((x) => x.trainable)
  if (!canRecord(engine) || trainable.length === 0) {
    const { value, grads } = tf.variableGrads(f, xs)
    return { value, grads: xs.map((x) => grads[x.name] ?? undefined) }
  }
  const { value, grads } = recordAndBackpropagate(engine, f, trainable, undefined)
  if (value.rank !== 0) {
    tf.dispose([value, ...grads.filter((gradient) => gradient !== undefined)])
    throw new InvalidArgumentError({ argument: 'lossFunction', value: value.shape, message: 'must return a scalar tf.Tensor' })
  }
  const byId = new Map(trainable.map((x, index) => [x.id, grads[index]]))
  return { value: value as tf.Scalar, grads: xs.map((x) => byId.get(x.id)) }
}

function canRecord(engine: Partial<TapeEngine>): engine is TapeEngine {
  return typeof engine.startTape === 'function' && typeof engine.endTape === 'function' && engine.state?.gradientDepth === 0
}

/**
 * Runs `f` on a fresh tape and walks it back from `dy` (ones when undefined) to `xs`. The engine's tape of an
 * enclosing backward pass (when called from a gradient function) is put back afterwards.
 */
function recordAndBackpropagate(
  engine: TapeEngine,
  f: () => tf.Tensor,
  xs: readonly tf.Tensor[],
  dy: tf.Tensor | undefined,
): { value: tf.Tensor; grads: (tf.Tensor | undefined)[] } {
  const outer = engine.state.activeTape
  let value: tf.Tensor
  let tape: TapeNode[] = []
  engine.startTape()
  try {
    value = tf.tidy('forward', f)
  } finally {
    engine.endTape()
    tape = engine.state.activeTape ?? []
    engine.state.activeTape = outer
  }
  try {
    if (!(value instanceof tf.Tensor)) throw new InvalidArgumentError({ argument: 'lossFunction', value, message: 'must return a scalar tf.Tensor' })
    let gradientOf: Map<number, tf.Tensor>
    try {
      gradientOf = backpropagate(tape, xs, value, dy)
    } catch (error) {
      value.dispose()
      throw error
    }
    return { value, grads: xs.map((x) => gradientOf.get(x.id)) }
  } finally {
    for (const node of tape) tf.dispose(node.saved ?? [])
  }
}

/**
 * The gradients of `f()` with respect to `xs` (tensors or variables), seeded with `dy` — for a gradient
 * function that recomputes its forward pass (`recomputed`). Freed as `computeGradients` frees; `value` is
 * returned too (the caller disposes it). Unconnected `xs` get undefined.
 */
export function gradientsOf(f: () => tf.Tensor, xs: readonly tf.Tensor[], dy: tf.Tensor): { value: tf.Tensor; grads: (tf.Tensor | undefined)[] } {
  const engine = tf.engine() as unknown as Partial<TapeEngine>
  if (!canRecord(engine)) {
    const { value, grads } = tf.engine().gradients(f, xs as tf.Tensor[], dy, true)
    return { value, grads: grads.map((gradient) => gradient ?? undefined) }
  }
  return recordAndBackpropagate(engine, f, xs, dy)
}

/**
 * Walks the tape backward from `y` (as tfjs-core's `backpropagateGradients`), freeing each operation's saved
 * tensors and its outputs' gradients once its inputs' gradients are computed. Returns the gradients of `xs`
 * by tensor id.
 */
function backpropagate(tape: readonly TapeNode[], xs: readonly tf.Tensor[], y: tf.Tensor, dy: tf.Tensor | undefined): Map<number, tf.Tensor> {
  // Operations reachable from xs, then those that lead to y; only inputs reachable from xs get a gradient.
  const fromX = new Set(xs.map((x) => x.id))
  const reachable = tape.map((node) => {
    const reached = Object.values(node.inputs).some((input) => fromX.has(input.id))
    if (reached) for (const output of node.outputs) fromX.add(output.id)
    return reached
  })
  const leadsToY = new Set([y.id])
  const needed = new Array<boolean>(tape.length).fill(false)
  for (let index = tape.length - 1; index >= 0; index--) {
    const node = tape[index]!
    if (!node.outputs.some((output) => leadsToY.has(output.id))) continue
    needed[index] = reachable[index]!
    for (const input of Object.values(node.inputs)) leadsToY.add(input.id)
  }
  tape.forEach((node, index) => {
    if (!needed[index]) tf.dispose(node.saved ?? [])
  })

  const gradientOf = new Map<number, tf.Tensor>([[y.id, dy === undefined ? tf.onesLike(y) : tf.clone(dy)]])
  try {
    walkBackward(tape, needed, fromX, gradientOf)
  } catch (error) {
    tf.dispose([...gradientOf.values()])
    throw error
  }
  const wanted = new Set(xs.map((x) => x.id))
  for (const [id, gradient] of gradientOf) if (!wanted.has(id)) gradient.dispose()
  return gradientOf
}

/** The backward walk of `backpropagate`: accumulates into `gradientOf` (by tensor id), freeing as it goes. */
function walkBackward(tape: readonly TapeNode[], needed: readonly boolean[], fromX: ReadonlySet<number>, gradientOf: Map<number, tf.Tensor>): void {
  for (let index = tape.length - 1; index >= 0; index--) {
    if (!needed[index]) continue
    const node = tape[index]!
    const inputs = Object.entries(node.inputs).filter(([, input]) => fromX.has(input.id))
    const dys = node.outputs.map((output) => gradientOf.get(output.id) ?? null)
    const gradient = node.gradient
    if (gradient === undefined)
      throw new InvalidArgumentError({ argument: 'lossFunction', value: node.kernelName, message: 'uses an operation with no gradient' })
    const dxs = tf.tidy(() => {
      const functions = gradient(dys)
      const result: tf.Tensor[] = []
      for (const [name, input] of inputs) {
        let dx = functions[name]?.()
        if (dx === undefined)
          throw new InvalidArgumentError({ argument: 'lossFunction', value: node.kernelName, message: `has no gradient for its input ${name}` })
        // A gradient that is a tensor freed below (an output's gradient, a saved tensor) or another input's is copied.
        if (dys.includes(dx) || node.saved?.includes(dx) || result.includes(dx)) dx = tf.clone(dx)
        if (dx.dtype !== 'float32' || !tf.util.arraysEqual(dx.shape, input.shape)) {
          throw new InvalidArgumentError({
            argument: 'lossFunction',
            value: node.kernelName,
            message: `the gradient of its input ${name} is ${dx.dtype} [${dx.shape.join(', ')}], not float32 [${input.shape.join(', ')}]`,
          })
        }
        result.push(dx)
      }
      return result
    })
    for (const output of node.outputs) {
      gradientOf.get(output.id)?.dispose()
      gradientOf.delete(output.id)
    }
    tf.dispose(node.saved ?? [])
    inputs.forEach(([, input], position) => {
      const dx = dxs[position]!
      const accumulated = gradientOf.get(input.id)
      if (accumulated === undefined) gradientOf.set(input.id, dx)
      else {
        gradientOf.set(input.id, tf.add(accumulated, dx))
        tf.dispose([accumulated, dx])
      }
    })
  }
}
