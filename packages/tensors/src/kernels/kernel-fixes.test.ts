import { describe, expect, it } from 'vitest'
import * as tf from '@tensorflow/tfjs-core'
import { activateBackend } from '../backend/init-tensors.js'
import { appliedKernelFixes, applyKernelFixes, removeKernelFixes } from './index.js'

const fixedOnWasm = [tf.BatchMatMul, tf._FusedMatMul, tf.UnsortedSegmentSum, tf.OneHot]

describe('kernel fixes', () => {
  it('are installed on wasm when it starts, idempotently', async () => {
    await activateBackend('wasm')
    expect(appliedKernelFixes('wasm').sort()).toEqual([...fixedOnWasm].sort())
    const installed = tf.getKernel(tf.BatchMatMul, 'wasm')
    applyKernelFixes('wasm')
    expect(tf.getKernel(tf.BatchMatMul, 'wasm')).toBe(installed)
  })

  it('can be removed (stock kernels back, working) and applied again', async () => {
    await activateBackend('wasm')
    const fixed = tf.getKernel(tf.BatchMatMul, 'wasm')
    removeKernelFixes('wasm')
    removeKernelFixes('wasm')
    expect(appliedKernelFixes('wasm')).toEqual([])
    expect(tf.getKernel(tf.BatchMatMul, 'wasm')).not.toBe(fixed)
    expect(tf.getKernel(tf.UnsortedSegmentSum, 'wasm')).toBeUndefined()
    // The stock transposed product (its slow loop) still runs: its setup was re-run.
    const product = tf.tidy(() =>
      tf
        .matMul(
          tf.tensor2d([
            [1, 2],
            [3, 4],
          ]),
          tf.tensor2d([
            [1, 0],
            [1, 1],
          ]),
          false,
          true,
        )
        .arraySync(),
    )
    expect(product).toEqual([
      [1, 3],
      [3, 7],
    ])
    applyKernelFixes('wasm')
    expect(appliedKernelFixes('wasm').sort()).toEqual([...fixedOnWasm].sort())
    expect(tf.getKernel(tf.UnsortedSegmentSum, 'wasm')).toBeDefined()
  })

  it('do nothing for backends without fixes', () => {
    applyKernelFixes('cpu')
    removeKernelFixes('cpu')
    expect(appliedKernelFixes('cpu')).toEqual([])
  })
})
