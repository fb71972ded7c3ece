import * as tf from '@tensorflow/tfjs-core'
import { vi } from 'vitest'

/**
 * How many tensors `call` made (the engine's `makeTensor`, `makeVariable`, `makeTensorFromDataId`) and kernels it
 * ran, and what it returned or threw. A refusal "before allocating" makes none: the check of the property
 * itself, where a clock would only tell that the allocation was slow on this machine.
 */
export async function tensorAllocations(call: () => unknown): Promise<{ allocations: number; error: unknown }> {
  const engine = tf.engine()
  const spies = [vi.spyOn(engine, 'makeTensor'), vi.spyOn(engine, 'makeVariable'), vi.spyOn(engine, 'makeTensorFromDataId'), vi.spyOn(engine, 'runKernel')]
  let error: unknown
  try {
    await call()
  } catch (caught) {
    error = caught
  }
  const allocations = spies.reduce((total, spy) => total + spy.mock.calls.length, 0)
  for (const spy of spies) spy.mockRestore()
  return { allocations, error }
}
