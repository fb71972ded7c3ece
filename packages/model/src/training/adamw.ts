import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError, parseArgument } from '@ludic/core'
import { NativeVariable, hasNativeOps } from '@ludic/tensors'
import { z } from 'zod'
import { checkGradientMap } from './gradient-map.js'
import { matchesParameterNamePattern, parameterNamePatternSchema } from '../parameter-name-pattern.js'

/** Options of `createAdamW`; the defaults are `torch.optim.AdamW`'s. */
export const adamWOptionsSchema = z.strictObject({
  /** Base learning rate (torch `lr`), used when `step` is given none. Default 1e-3. */
  learningRate: z.number().nonnegative().finite().default(1e-3),
  /** Decay of the first-moment average (torch `betas[0]`). Default 0.9. */
  beta1: z.number().min(0).lt(1).default(0.9),
  /** Decay of the second-moment average (torch `betas[1]`). Default 0.999. */
  beta2: z.number().min(0).lt(1).default(0.999),
  /** Added to the bias-corrected root of the second moment (torch `eps`, outside the root). Default 1e-8. */
  epsilon: z.number().nonnegative().finite().default(1e-8),
  /** Weight decay coefficient (torch `weight_decay`). Default 0.01 (torch AdamW's). */
  weightDecay: z.number().nonnegative().finite().default(0.01),
  /**
   * `true` (AdamW, Loshchilov & Hutter 2019): before the Adam update, θ ← θ·(1 − lr·weightDecay).
   * `false` (torch `Adam` with `weight_decay`): the L2 term weightDecay·θ is added to the gradient.
   * Default `true`.
   */
  decoupled: z.boolean().default(true),
  /**
   * Parameters that get no weight decay (as a second torch parameter group with `weight_decay=0`): name
   * patterns (`ParameterNamePattern`: a glob over the whole name, `*` within a segment and `**` across, or a
   * `RegExp`). Default `[]` (torch decays everything); a common choice is `['**norm.weight', '**.bias']`.
   */
  excludeFromWeightDecay: z.array(parameterNamePatternSchema).default([]),
  /**
   * Each parameter's update as TensorFlow's own fused ops (torch's `fused`): decay and Adam in two in-place kernels
   * (`ResourceApplyGradientDescent`, `ResourceApplyAdam`) instead of ~14 TensorFlow.js kernels, the parameter and its
   * moments kept in TensorFlow resource variables. Needs the native backend (`tensorflow`); `true` on another is
   * refused. The same update (the bias corrections folded into the op's step size and ε) except that TensorFlow's
   * kernel takes the moments' rates 1 − β in float32 from a float32 β, as TensorFlow's and Keras's Adam do
   * (1 − float32(0.999) is 1.3e-5 relative off 1e-3): parameters within ~10 ulp of torch's over the tested steps.
   * Default: fused where the backend has it.
   */
  fused: z.boolean().optional(),
})
export type AdamWOptions = z.input<typeof adamWOptionsSchema>
export type AdamWHyperparameters = z.output<typeof adamWOptionsSchema>

export const adamWStepOptionsSchema = z.strictObject({
  /** This step's learning rate, e.g. `baseLearningRate * schedule(step)`. Default: `options.learningRate`. */
  learningRate: z.number().nonnegative().finite().optional(),
})
export type AdamWStepOptions = z.input<typeof adamWStepOptionsSchema>

/**
 * The optimizer state as plain data, for checkpoints: `step` (updates taken, torch `state['step']`, the
 * same for every parameter) and the moments as named Float32Arrays, `${parameter}.exp_avg` and
 * `${parameter}.exp_avg_sq` (torch's state keys), each shaped like its parameter.
 */
export interface AdamWState {
  step: number
  tensors: Map<string, { shape: number[]; data: Float32Array }>
}

export interface AdamW {
  /** The optimized parameters' names, in the order of the parameters map. */
  readonly parameterNames: readonly string[]
  /** Updates taken so far (torch `state['step']`). */
  readonly stepCount: number
  readonly hyperparameters: Readonly<AdamWHyperparameters>
  /** Whether each update runs as TensorFlow's fused ops (`options.fused`, or its default: the native backend). */
  readonly fused: boolean
  /** Whether the named parameter gets weight decay (false for `excludeFromWeightDecay` matches). */
  decays(name: string): boolean
  /**
   * One update of every parameter in place, from `gradients` (one float32 tensor per parameter, same
   * name and shape; the caller keeps and disposes them). Returns the step number after the update and
   * the learning rate used. Leaves `tf.memory().numTensors` unchanged.
   */
  step(gradients: ReadonlyMap<string, tf.Tensor>, options?: AdamWStepOptions): { step: number; learningRate: number }
  /** A copy of the state as plain data (reads the moments back from the backend). */
  exportState(): Promise<AdamWState>
  /** Replaces the state; checks every name and shape before changing anything. */
  importState(state: AdamWState): void
  /** Frees the moment tensors. The optimizer cannot be used afterwards. */
  dispose(): void
}

interface Slot {
  name: string
  parameter: tf.Variable
  decays: boolean
  /** Composed path: the moments as TensorFlow.js variables. */
  firstMoment?: tf.Variable
  secondMoment?: tf.Variable
  /** Fused path: the parameter and its moments as TensorFlow resource variables. */
  native?: NativeSlot
}

interface NativeSlot {
  parameter: NativeVariable
  firstMoment: NativeVariable
  secondMoment: NativeVariable
  /** The TensorFlow.js variable's data when the resource variable last matched it (another: assigned from outside). */
  dataId: object
}

/**
 * AdamW with exactly `torch.optim.AdamW`'s update (single-tensor CPU path) on a `Map` of variables:
 *
 * ```
 * t ← t + 1
 * θ ← θ·(1 − lr·λ)                          (decoupled; coupled: g ← g + λ·θ)
 * m ← m + (1 − β1)·(g − m)                  (torch `lerp_`)
 * v ← β2·v + (1 − β2)·g²
 * θ ← θ − lr/(1 − β1ᵗ) · m / (√v / √(1 − β2ᵗ) + ε)
 * ```
 *
 * Scalars are computed in double precision as Python does, then used as float32 as torch does. The
 * moments live in variables made here (zeros), so a step creates no lasting tensor. On the native backend the
 * update is TensorFlow's fused Adam (`options.fused`), with lr/(1 − β1ᵗ)·√(1 − β2ᵗ) as its step size and ε·√(1 − β2ᵗ)
 * as its ε — the same update, with float32 rates 1 − β.
 */
export function createAdamW(parameters: ReadonlyMap<string, tf.Variable>, options: AdamWOptions = {}): AdamW {
  const hyperparameters = parseArgument(adamWOptionsSchema, options, 'options')
  if (!(parameters instanceof Map)) {
    throw new InvalidArgumentError({ argument: 'parameters', value: parameters, message: 'must be a Map from names to tf.Variable' })
  }
  const namesByVariable = new Map<tf.Variable, string>()
  for (const [name, parameter] of parameters) {
    if (!(parameter instanceof tf.Variable) || parameter.isDisposed || parameter.dtype !== 'float32') {
      throw new InvalidArgumentError({
        argument: `parameters[${JSON.stringify(name)}]`,
        value: parameter instanceof tf.Tensor ? `${parameter.dtype} tensor` : parameter,
        message: 'must be a live float32 tf.Variable',
      })
    }
    const sameVariable = namesByVariable.get(parameter)
    if (sameVariable !== undefined) {
      throw new InvalidArgumentError({
        argument: `parameters[${JSON.stringify(name)}]`,
        value: name,
        message: `is the same variable as ${JSON.stringify(sameVariable)} (tied weights): list each variable once, or it would be updated twice`,
      })
    }
    namesByVariable.set(parameter, name)
  }
  if (hyperparameters.fused === true && !hasNativeOps()) {
    throw new InvalidArgumentError({
      argument: 'options.fused',
      value: true,
      message: `needs the native TensorFlow backend ('tensorflow'), not '${tf.getBackend()}': leave it unset to fuse where possible`,
    })
  }
  return new AdamWOptimizer(new Map(parameters), hyperparameters, hyperparameters.fused ?? hasNativeOps())
}

class AdamWOptimizer implements AdamW {
  readonly parameterNames: readonly string[]
  private readonly slots: Slot[]
  private steps = 0
  private disposed = false
  /** float32 constants shared by every step, made for the path taken. */
  private readonly composedConstants?: { oneMinusBeta1: tf.Scalar; beta2: tf.Scalar; oneMinusBeta2: tf.Scalar; epsilon: tf.Scalar }
  private readonly fusedConstants?: { zero: tf.Scalar; beta1: tf.Scalar; beta2: tf.Scalar }

  constructor(
    private readonly parameters: Map<string, tf.Variable>,
    readonly hyperparameters: Readonly<AdamWHyperparameters>,
    readonly fused: boolean,
  ) {
    this.parameterNames = Object.freeze([...parameters.keys()])
    // Inside tidy: the zeros tensors go, their data stays with the variables.
    this.slots = [...parameters].map(([name, parameter]): Slot => {
      const decays = !matchesParameterNamePattern(name, hyperparameters.excludeFromWeightDecay)
      if (!fused) {
        return {
          name,
          parameter,
          decays,
          firstMoment: tf.tidy(() => tf.variable(tf.zeros(parameter.shape), false)),
          secondMoment: tf.tidy(() => tf.variable(tf.zeros(parameter.shape), false)),
        }
      }
      const native: NativeSlot = {
        parameter: new NativeVariable(parameter),
        firstMoment: NativeVariable.zeros(parameter.shape),
        secondMoment: NativeVariable.zeros(parameter.shape),
        dataId: parameter.dataId,
      }
      return { name, parameter, decays, native }
    })
    const { beta1, beta2, epsilon } = hyperparameters
    if (fused) this.fusedConstants = { zero: tf.scalar(0), beta1: tf.scalar(beta1), beta2: tf.scalar(beta2) }
    else {
      this.composedConstants = {
        oneMinusBeta1: tf.scalar(1 - beta1),
        beta2: tf.scalar(beta2),
        oneMinusBeta2: tf.scalar(1 - beta2),
        epsilon: tf.scalar(epsilon),
      }
    }
  }

  get stepCount(): number {
    return this.steps
  }

  decays(name: string): boolean {
    const slot = this.slots.find((candidate) => candidate.name === name)
    if (slot === undefined) throw new InvalidArgumentError({ argument: 'name', value: name, message: 'is not a parameter of this optimizer' })
    return slot.decays && this.hyperparameters.weightDecay !== 0
  }

  step(gradients: ReadonlyMap<string, tf.Tensor>, options: AdamWStepOptions = {}): { step: number; learningRate: number } {
    this.checkAlive()
    const learningRate = parseArgument(adamWStepOptionsSchema, options, 'options').learningRate ?? this.hyperparameters.learningRate
    checkGradientMap(gradients, 'gradients', this.parameters)
    for (const slot of this.slots) {
      if (slot.parameter.isDisposed) {
        throw new InvalidArgumentError({ argument: `parameters[${JSON.stringify(slot.name)}]`, value: slot.name, message: 'was disposed' })
      }
    }
    const step = this.steps + 1
    if (this.fused) this.fusedStep(gradients, learningRate, step)
    else this.composedStep(gradients, learningRate, step)
    this.steps = step
    return { step, learningRate }
  }

  private composedStep(gradients: ReadonlyMap<string, tf.Tensor>, learningRate: number, step: number): void {
    const { beta1, beta2, weightDecay, decoupled } = this.hyperparameters
    // Python floats (double), as torch's `_single_tensor_adam` computes them.
    const biasCorrection1 = 1 - beta1 ** step
    const biasCorrection2Root = Math.sqrt(1 - beta2 ** step)
    const stepSize = learningRate / biasCorrection1
    const { oneMinusBeta1, beta2: beta2Scalar, oneMinusBeta2, epsilon } = this.composedConstants!
    tf.tidy(() => {
      const negativeStepSize = tf.scalar(-stepSize)
      const rootCorrection = tf.scalar(biasCorrection2Root)
      const decayFactor = tf.scalar(1 - learningRate * weightDecay)
      const decayCoefficient = tf.scalar(weightDecay)
      for (const slot of this.slots) {
        let parameter: tf.Tensor = slot.parameter
        let gradient = gradients.get(slot.name)!
        if (weightDecay !== 0 && slot.decays) {
          if (decoupled) parameter = tf.mul(parameter, decayFactor)
          else gradient = tf.add(gradient, tf.mul(parameter, decayCoefficient))
        }
        const firstMoment = tf.add(slot.firstMoment!, tf.mul(tf.sub(gradient, slot.firstMoment!), oneMinusBeta1))
        const secondMoment = tf.add(tf.mul(slot.secondMoment!, beta2Scalar), tf.mul(tf.square(gradient), oneMinusBeta2))
        const denominator = tf.add(tf.div(tf.sqrt(secondMoment), rootCorrection), epsilon)
        slot.parameter.assign(tf.add(parameter, tf.mul(tf.div(firstMoment, denominator), negativeStepSize)))
        slot.firstMoment!.assign(firstMoment)
        slot.secondMoment!.assign(secondMoment)
      }
    })
  }

  /**
   * The same update as TensorFlow's fused ops, in place on the resource variables, then the TensorFlow.js variable
   * pointed at the result (shared buffer): θ ← θ − (lr·λ)·θ; Adam with step size lr/(1 − β1ᵗ)·√(1 − β2ᵗ) and ε·√(1 − β2ᵗ),
   * which is torch's θ − lr/(1 − β1ᵗ) · m / (√v / √(1 − β2ᵗ) + ε).
   */
  private fusedStep(gradients: ReadonlyMap<string, tf.Tensor>, learningRate: number, step: number): void {
    const { beta1, beta2, epsilon, weightDecay, decoupled } = this.hyperparameters
    const biasCorrection2Root = Math.sqrt(1 - beta2 ** step)
    tf.tidy(() => {
      const scalars = {
        ...this.fusedConstants!,
        learningRate: tf.scalar((learningRate / (1 - beta1 ** step)) * biasCorrection2Root),
        epsilon: tf.scalar(epsilon * biasCorrection2Root),
      }
      const decay = tf.scalar(learningRate * weightDecay)
      const decayCoefficient = tf.scalar(weightDecay)
      for (const slot of this.slots) {
        const native = slot.native!
        // The TensorFlow.js variable was assigned from outside since the last step (a checkpoint loaded, a merge): follow it.
        if (slot.parameter.dataId !== native.dataId) native.parameter.assign(slot.parameter)
        let gradient = gradients.get(slot.name)!
        if (weightDecay !== 0 && slot.decays) {
          if (decoupled) native.parameter.applyGradientDescent(decay, slot.parameter)
          else gradient = tf.add(gradient, tf.mul(slot.parameter, decayCoefficient))
        }
        native.parameter.applyAdam(native.firstMoment, native.secondMoment, scalars, gradient)
        slot.parameter.assign(native.parameter.read())
        native.dataId = slot.parameter.dataId
      }
    })
  }

  async exportState(): Promise<AdamWState> {
    this.checkAlive()
    const tensors = new Map<string, { shape: number[]; data: Float32Array }>()
    const read = async (moment: tf.Variable | NativeVariable): Promise<Float32Array> => {
      const tensor = moment instanceof NativeVariable ? moment.read() : moment
      try {
        return Float32Array.from(await tensor.data())
      } finally {
        if (tensor !== moment) tensor.dispose()
      }
    }
    for (const slot of this.slots) {
      tensors.set(`${slot.name}.exp_avg`, { shape: [...slot.parameter.shape], data: await read(slot.native?.firstMoment ?? slot.firstMoment!) })
      tensors.set(`${slot.name}.exp_avg_sq`, { shape: [...slot.parameter.shape], data: await read(slot.native?.secondMoment ?? slot.secondMoment!) })
    }
    return { step: this.steps, tensors }
  }

  importState(state: AdamWState): void {
    this.checkAlive()
    if (typeof state !== 'object' || state === null) {
      throw new InvalidArgumentError({ argument: 'state', value: state, message: 'must be { step, tensors }' })
    }
    if (!Number.isSafeInteger(state.step) || state.step < 0) {
      throw new InvalidArgumentError({ argument: 'state.step', value: state.step, message: 'must be a non-negative integer' })
    }
    if (!(state.tensors instanceof Map)) {
      throw new InvalidArgumentError({ argument: 'state.tensors', value: state.tensors, message: 'must be a Map of named Float32Arrays' })
    }
    const expected = new Set(this.slots.flatMap((slot) => [`${slot.name}.exp_avg`, `${slot.name}.exp_avg_sq`]))
    const missing = [...expected].filter((name) => !state.tensors.has(name))
    const unexpected = [...state.tensors.keys()].filter((name) => !expected.has(name))
    const misshaped: string[] = []
    for (const slot of this.slots) {
      for (const key of [`${slot.name}.exp_avg`, `${slot.name}.exp_avg_sq`]) {
        const tensor = state.tensors.get(key)
        if (tensor === undefined) continue
        const shapeMatches = Array.isArray(tensor.shape) && tf.util.arraysEqual(tensor.shape, slot.parameter.shape)
        if (!shapeMatches || !(tensor.data instanceof Float32Array) || tensor.data.length !== slot.parameter.size) {
          misshaped.push(`${key} (shape ${JSON.stringify(tensor.shape)}, parameter [${slot.parameter.shape.join(', ')}])`)
        }
      }
    }
    if (missing.length + unexpected.length + misshaped.length > 0) {
      const problems = [
        missing.length > 0 ? `missing ${missing.join(', ')}` : '',
        unexpected.length > 0 ? `unexpected ${unexpected.join(', ')}` : '',
        misshaped.length > 0 ? `misshaped ${misshaped.join(', ')}` : '',
      ].filter((problem) => problem !== '')
      throw new InvalidArgumentError({ argument: 'state.tensors', value: [...state.tensors.keys()], message: problems.join('; ') })
    }
    for (const slot of this.slots) {
      tf.tidy(() => {
        ;(slot.native?.firstMoment ?? slot.firstMoment!).assign(tf.tensor(state.tensors.get(`${slot.name}.exp_avg`)!.data, slot.parameter.shape, 'float32'))
        ;(slot.native?.secondMoment ?? slot.secondMoment!).assign(
          tf.tensor(state.tensors.get(`${slot.name}.exp_avg_sq`)!.data, slot.parameter.shape, 'float32'),
        )
      })
    }
    this.steps = state.step
  }

  dispose(): void {
    if (this.disposed) return
    this.disposed = true
    for (const slot of this.slots) {
      tf.dispose([slot.firstMoment, slot.secondMoment].filter((moment) => moment !== undefined))
      if (slot.native !== undefined) for (const variable of [slot.native.parameter, slot.native.firstMoment, slot.native.secondMoment]) variable.dispose()
    }
    tf.dispose([...Object.values(this.composedConstants ?? {}), ...Object.values(this.fusedConstants ?? {})])
  }

  private checkAlive(): void {
    if (this.disposed) throw new InvalidArgumentError({ argument: 'optimizer', value: 'disposed', message: 'was disposed' })
  }
}
