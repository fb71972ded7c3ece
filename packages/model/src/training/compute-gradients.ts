import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError } from '@ludic/core'
import { tapeGradients } from '@ludic/tensors'

/**
 * The loss and its gradients with respect to named parameters (keyed by the parameters' own names). The
 * caller disposes `loss` and every gradient; intermediate tensors are freed.
 *
 * The gradients are `tf.variableGrads`'s, but the backward pass frees memory as it goes, as PyTorch's
 * autograd does: what an operation saved for its gradient is freed once that gradient is computed (at once
 * for operations no gradient flows through, e.g. those on frozen weights only), and the gradient of each
 * intermediate tensor once it has been passed to its inputs. tfjs keeps both until the whole backward pass
 * ends, so its peak holds every activation and every activation's gradient at once. Only the trainable
 * `parameters` get gradients: a frozen weight (a tied, frozen embedding) gets none computed. The tape walk is
 * `tapeGradients` of `@ludic/tensors`, where every use of tfjs-core's private engine internals lives (it throws
 * `EngineInternalsError` on another tfjs-core than the one it was written for).
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
