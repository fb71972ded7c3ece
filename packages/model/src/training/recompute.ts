import * as tf from '@tensorflow/tfjs-core'
import { gradientsOf } from '@ludic/tensors'

/**
 * `f(inputs)` whose intermediates are not kept for the gradient: the backward pass runs `f` again from the
 * saved `inputs` and backpropagates through that (activation recomputation, Chen et al., 2016, "Training Deep
 * Nets with Sublinear Memory Cost"; PyTorch's `torch.utils.checkpoint`). Memory: the inputs instead of every
 * intermediate; time: one more forward pass of `f`.
 *
 * `inputs[0]` is the one that gets a gradient; the others are tensors `f` reads (kept alive by the save, so `f`
 * must read them from its argument, not from a closure). `parameters` are the trainable variables `f` uses:
 * their gradients flow through; frozen variables may be read from a closure. `f` must be deterministic (no
 * dropout drawn per call), or the recomputed pass differs from the first.
 */
export function recomputed(f: (inputs: tf.Tensor[]) => tf.Tensor, inputs: readonly tf.Tensor[], parameters: readonly tf.Variable[]): tf.Tensor {
  const count = inputs.length
  const run = tf.customGrad((...args) => {
    const tensors = args.slice(0, count) as tf.Tensor[]
    const save = args[args.length - 1] as tf.GradSaveFunc
    save(tensors)
    return {
      value: f(tensors),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const { value, grads } = gradientsOf(() => f(saved), [saved[0]!, ...parameters], dy)
        value.dispose()
        const [inputGradient, ...parameterGradients] = grads
        return [
          inputGradient ?? tf.zerosLike(saved[0]!),
          ...saved.slice(1).map((tensor) => tf.zerosLike(tensor)),
          ...parameters.map((parameter, index) => parameterGradients[index] ?? tf.zerosLike(parameter)),
        ]
      },
    }
  })
  return run(...inputs, ...parameters)
}
