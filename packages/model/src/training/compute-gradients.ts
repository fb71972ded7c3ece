import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError } from '@ludic/core'

/**
 * The loss and its gradients with respect to named parameters: `tf.variableGrads` keyed by the
 * parameters' own names (it keys them by the variables' tfjs names). The caller disposes `loss` and
 * every gradient; intermediate tensors are freed.
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
  const variables = [...parameters.values()]
  const { value, grads } = tf.variableGrads(lossFunction, variables)
  const gradients = new Map<string, tf.Tensor>()
  const unconnected: string[] = []
  for (const [name, variable] of parameters) {
    const gradient = grads[variable.name]
    if (gradient === undefined) unconnected.push(name)
    else gradients.set(name, gradient)
  }
  if (unconnected.length > 0) {
    tf.dispose([value, ...Object.values(grads)])
    throw new InvalidArgumentError({
      argument: 'parameters',
      value: unconnected,
      message: `the loss does not depend on ${unconnected.join(', ')}: pass only the parameters being trained`,
    })
  }
  return { loss: value, gradients }
}
