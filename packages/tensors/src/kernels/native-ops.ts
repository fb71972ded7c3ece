import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError } from '@ludic/core'

/**
 * TensorFlow's own ops, reached through the native backend (`@tensorflow/tfjs-node[-gpu]`), which runs any op of the
 * TensorFlow library by name (`executeSingleOutput` / `executeMultipleOutputs`) although TensorFlow.js wraps only
 * some: resource variables and `ResourceApplyAdam` / `ResourceApplyGradientDescent` on them (`NativeVariable`, used
 * by `createAdamW`'s fused path), a parameter's whole AdamW update in two in-place kernels instead of ~14 TensorFlow.js
 * kernels, each an eager C API call with its own allocation and pass over memory.
 */

interface NativeOpAttribute {
  name: string
  type: number
  value: string | number | boolean | readonly number[]
}

/** The part of tfjs-node's `NodeJSKernelBackend` used here (it is an optional peer: no import of its types). */
interface NativeBackend {
  binding: { TF_ATTR_STRING: number; TF_ATTR_BOOL: number; TF_ATTR_TYPE: number; TF_ATTR_SHAPE: number; TF_FLOAT: number }
  executeSingleOutput(name: string, attributes: NativeOpAttribute[], inputs: tf.TensorInfo[]): tf.Tensor
  executeMultipleOutputs(name: string, attributes: NativeOpAttribute[], inputs: tf.TensorInfo[], outputs: number): tf.Tensor[]
}

function asNativeBackend(backend: unknown): NativeBackend | undefined {
  const candidate = backend as Partial<NativeBackend> | undefined
  return typeof candidate?.executeSingleOutput === 'function' && typeof candidate.executeMultipleOutputs === 'function' && candidate.binding !== undefined
    ? (candidate as NativeBackend)
    : undefined
}

/** The current backend when it is TensorFlow native (CPU or GPU), else undefined. */
function currentNativeBackend(): NativeBackend | undefined {
  return tf.getBackend() === 'tensorflow' ? asNativeBackend(tf.backend()) : undefined
}

/** Whether the current backend runs TensorFlow's own ops (`NativeVariable`). */
export function hasNativeOps(): boolean {
  return currentNativeBackend() !== undefined
}

const counterKey = Symbol.for('@ludic/tensors/native-variable-counter')

/**
 * A float32 TensorFlow resource variable (the storage of `tf.Variable` in Python), living in the native backend
 * beside TensorFlow.js's tensors. `assign` and `read` share the buffer (TensorFlow copies it before an update
 * while a read is alive), so keeping a TensorFlow.js variable equal to it costs one copy a step, not one per op.
 */
export class NativeVariable {
  readonly shape: readonly number[]
  private readonly backend: NativeBackend
  private readonly handle: tf.Tensor
  private disposed = false

  /** A variable holding `initial`'s value (float32). Throws unless the current backend is TensorFlow native. */
  constructor(initial: tf.Tensor) {
    const backend = currentNativeBackend()
    if (backend === undefined) {
      throw new InvalidArgumentError({
        argument: 'backend',
        value: tf.getBackend(),
        message: "has no TensorFlow resource variables: NativeVariable needs the 'tensorflow' backend (@tensorflow/tfjs-node or -gpu)",
      })
    }
    if (initial.dtype !== 'float32') throw new InvalidArgumentError({ argument: 'initial', value: initial.dtype, message: 'must be a float32 tensor' })
    this.backend = backend
    this.shape = [...initial.shape]
    const { TF_ATTR_STRING, TF_ATTR_TYPE, TF_ATTR_SHAPE, TF_FLOAT } = backend.binding
    const global = globalThis as unknown as Record<symbol, number>
    global[counterKey] = (global[counterKey] ?? 0) + 1
    this.handle = backend.executeSingleOutput(
      'VarHandleOp',
      [
        { name: 'container', type: TF_ATTR_STRING, value: '' },
        { name: 'shared_name', type: TF_ATTR_STRING, value: `ludic_native_variable_${global[counterKey]}` },
        { name: 'dtype', type: TF_ATTR_TYPE, value: TF_FLOAT },
        { name: 'shape', type: TF_ATTR_SHAPE, value: this.shape },
      ],
      [],
    )
    tf.keep(this.handle)
    this.assign(initial)
  }

  /** A variable of zeros. */
  static zeros(shape: readonly number[]): NativeVariable {
    const zeros = tf.zeros([...shape])
    try {
      return new NativeVariable(zeros)
    } finally {
      zeros.dispose()
    }
  }

  /** Makes the variable hold `value` (same shape, float32; the buffer is shared, not copied). */
  assign(value: tf.Tensor): void {
    this.checkAlive()
    if (value.dtype !== 'float32' || !tf.util.arraysEqual(value.shape, [...this.shape])) {
      throw new InvalidArgumentError({
        argument: 'value',
        value: `${value.dtype} [${value.shape.join(', ')}]`,
        message: `must be float32 [${this.shape.join(', ')}]`,
      })
    }
    const { TF_ATTR_TYPE, TF_ATTR_BOOL, TF_FLOAT } = this.backend.binding
    this.backend.executeMultipleOutputs(
      'AssignVariableOp',
      [
        { name: 'dtype', type: TF_ATTR_TYPE, value: TF_FLOAT },
        { name: 'validate_shape', type: TF_ATTR_BOOL, value: false },
      ],
      [this.handle, value],
      0,
    )
  }

  /** The current value as a new tensor (the caller disposes it). */
  read(): tf.Tensor {
    this.checkAlive()
    const { TF_ATTR_TYPE, TF_FLOAT } = this.backend.binding
    return this.backend.executeSingleOutput('ReadVariableOp', [{ name: 'dtype', type: TF_ATTR_TYPE, value: TF_FLOAT }], [this.handle])
  }

  /** `θ ← θ − alpha · delta` in place (TensorFlow's `ResourceApplyGradientDescent`). */
  applyGradientDescent(alpha: tf.Scalar, delta: tf.Tensor): void {
    this.checkOperands({ alpha }, { delta })
    this.run('ResourceApplyGradientDescent', [this.handle, alpha, delta], [])
  }

  /**
   * One Adam update in place (TensorFlow's `ResourceApplyAdam`), with this variable as θ:
   * `m ← m + (g − m)(1 − β1)`, `v ← v + (g² − v)(1 − β2)`, `θ ← θ − lr · m / (√v + ε)`. The bias corrections are the
   * caller's (folded into `lr` and `ε`; the op's own powers of β are passed as zero).
   */
  applyAdam(
    firstMoment: NativeVariable,
    secondMoment: NativeVariable,
    scalars: { zero: tf.Scalar; learningRate: tf.Scalar; beta1: tf.Scalar; beta2: tf.Scalar; epsilon: tf.Scalar },
    gradient: tf.Tensor,
  ): void {
    firstMoment.checkAlive()
    secondMoment.checkAlive()
    for (const [argument, moment] of Object.entries({ firstMoment, secondMoment })) {
      if (!tf.util.arraysEqual([...moment.shape], [...this.shape])) {
        throw new InvalidArgumentError({
          argument,
          value: `[${moment.shape.join(', ')}]`,
          message: `must have the variable's shape [${this.shape.join(', ')}]`,
        })
      }
    }
    this.checkOperands(scalars, { gradient })
    const { zero, learningRate, beta1, beta2, epsilon } = scalars
    const { TF_ATTR_BOOL } = this.backend.binding
    this.run(
      'ResourceApplyAdam',
      [this.handle, firstMoment.handle, secondMoment.handle, zero, zero, learningRate, beta1, beta2, epsilon, gradient],
      [{ name: 'use_nesterov', type: TF_ATTR_BOOL, value: false }],
    )
  }

  /** Frees the variable's buffer. Idempotent. */
  dispose(): void {
    if (this.disposed) return
    this.disposed = true
    const { TF_ATTR_BOOL } = this.backend.binding
    this.backend.executeMultipleOutputs('DestroyResourceOp', [{ name: 'ignore_lookup_error', type: TF_ATTR_BOOL, value: true }], [this.handle], 0)
    this.handle.dispose()
  }

  private run(op: string, inputs: tf.TensorInfo[], attributes: NativeOpAttribute[]): void {
    this.checkAlive()
    const { TF_ATTR_TYPE, TF_ATTR_BOOL, TF_FLOAT } = this.backend.binding
    this.backend.executeMultipleOutputs(
      op,
      [{ name: 'T', type: TF_ATTR_TYPE, value: TF_FLOAT }, { name: 'use_locking', type: TF_ATTR_BOOL, value: false }, ...attributes],
      inputs,
      0,
    )
  }

  /** float32 scalars, and float32 tensors of the variable's shape: named errors before TensorFlow's own. */
  private checkOperands(scalars: Record<string, tf.Tensor>, tensors: Record<string, tf.Tensor>): void {
    for (const [argument, tensor] of Object.entries(scalars)) {
      if (!(tensor instanceof tf.Tensor) || tensor.dtype !== 'float32' || tensor.rank !== 0) {
        throw new InvalidArgumentError({
          argument,
          value: tensor instanceof tf.Tensor ? `${tensor.dtype} [${tensor.shape.join(', ')}]` : tensor,
          message: 'must be a float32 scalar',
        })
      }
    }
    for (const [argument, tensor] of Object.entries(tensors)) {
      if (!(tensor instanceof tf.Tensor) || tensor.dtype !== 'float32' || !tf.util.arraysEqual(tensor.shape, [...this.shape])) {
        throw new InvalidArgumentError({
          argument,
          value: tensor instanceof tf.Tensor ? `${tensor.dtype} [${tensor.shape.join(', ')}]` : tensor,
          message: `must be float32 [${this.shape.join(', ')}], the variable's shape`,
        })
      }
    }
  }

  private checkAlive(): void {
    if (this.disposed) throw new InvalidArgumentError({ argument: 'variable', value: 'disposed', message: 'was disposed' })
  }
}
