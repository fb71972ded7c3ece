import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError } from '@ludic/core'

/**
 * Checks that `gradients` is a `Map` from names to live float32 tensors; returns its entries. With
 * `parameters`, also that it has exactly the parameters' names, each gradient shaped like its parameter,
 * naming every missing, unexpected or misshaped entry.
 */
export function checkGradientMap(gradients: unknown, argument: string, parameters?: ReadonlyMap<string, tf.Variable>): [string, tf.Tensor][] {
  if (!(gradients instanceof Map)) {
    throw new InvalidArgumentError({ argument, value: gradients, message: 'must be a Map from parameter names to gradient tensors' })
  }
  const entries: [string, tf.Tensor][] = []
  for (const [name, gradient] of gradients as Map<unknown, unknown>) {
    if (typeof name !== 'string') throw new InvalidArgumentError({ argument, value: name, message: 'keys must be parameter names (strings)' })
    if (!(gradient instanceof tf.Tensor)) {
      throw new InvalidArgumentError({ argument: `${argument}[${JSON.stringify(name)}]`, value: gradient, message: 'must be a tf.Tensor' })
    }
    if (gradient.isDisposed) {
      throw new InvalidArgumentError({ argument: `${argument}[${JSON.stringify(name)}]`, value: name, message: 'was disposed' })
    }
    if (gradient.dtype !== 'float32') {
      throw new InvalidArgumentError({
        argument: `${argument}[${JSON.stringify(name)}]`,
        value: gradient.dtype,
        message: 'must be a float32 tensor',
      })
    }
    entries.push([name, gradient])
  }
  if (parameters === undefined) return entries
  const missing = [...parameters.keys()].filter((name) => !gradients.has(name))
  const unexpected = entries.map(([name]) => name).filter((name) => !parameters.has(name))
  const misshaped = entries
    .filter(([name, gradient]) => parameters.has(name) && !tf.util.arraysEqual(gradient.shape, parameters.get(name)!.shape))
    .map(([name, gradient]) => `${name} (gradient [${gradient.shape.join(', ')}], parameter [${parameters.get(name)!.shape.join(', ')}])`)
  const problems = [
    missing.length > 0 ? `missing gradients for ${missing.join(', ')}` : '',
    unexpected.length > 0 ? `gradients for unknown parameters ${unexpected.join(', ')}` : '',
    misshaped.length > 0 ? `misshaped gradients ${misshaped.join(', ')}` : '',
  ].filter((problem) => problem !== '')
  if (problems.length > 0) {
    throw new InvalidArgumentError({
      argument,
      value: [...gradients.keys()],
      message: `must hold one gradient per optimized parameter, shaped like it: ${problems.join('; ')}`,
    })
  }
  return entries
}
