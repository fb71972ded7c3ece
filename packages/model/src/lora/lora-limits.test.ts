import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError } from '@ludic/core'
import { beforeAll, describe, expect, it } from 'vitest'
import type { CausalLanguageModel } from '../model/causal-language-model.js'
import { createModel } from '../model/create-model.js'
import { initTestBackend } from '../test/init-test-backend.js'
import { applyLora } from './apply-lora.js'

beforeAll(initTestBackend)

function base(): CausalLanguageModel {
  return createModel('tiny', { vocabSize: 40, seed: 7, overrides: { hiddenSize: 32, intermediateSize: 48, numKeyValueHeads: 2, initializerRange: 0.2 } })
}

/** What a failed applyLora or loadLoraAdapter must leave as it was. */
function snapshot(model: CausalLanguageModel) {
  return {
    parameters: [...model.parameters().keys()],
    trainable: [...model.trainableParameters().keys()],
    adapters: [...model.linearAdapters().keys()],
    numTensors: tf.memory().numTensors,
  }
}

describe('LoRA limits and all-or-nothing', () => {
  it('refuses a rank past min(in, out) of a targeted layer before allocating, leaving the base as it was', () => {
    const model = base()
    model.freeze('model.embed_tokens.weight') // frozen by the user: must stay so, and the rest trainable
    const before = snapshot(model)
    for (const rank of [3e6, 1e9]) {
      const started = performance.now()
      const error = (() => {
        try {
          applyLora(model, { rank })
        } catch (caught) {
          return caught
        }
      })()
      expect(InvalidArgumentError.isInstance(error)).toBe(true)
      expect((error as Error).message).toMatch(/options\.rank.*at most 16.*model\.layers\.0\.self_attn\.v_proj \(in 32, out 16\)/)
      expect(performance.now() - started).toBeLessThan(500)
      expect(snapshot(model)).toEqual(before)
    }
    const adapters = applyLora(model, { rank: 16 }) // the largest that fits is fine
    adapters.remove()
    expect(snapshot(model)).toEqual(before)
    model.dispose()
  })

  it('refuses adapters whose parameters would exceed maxParameterBytes, counting the model', () => {
    const model = base()
    const before = snapshot(model)
    const modelBytes = 4 * model.numParameters
    expect(() => applyLora(model, { rank: 8, targetModules: 'all-linear', maxParameterBytes: modelBytes + 1000 })).toThrow(
      /options\.rank.*the adapters add \d+ parameters .* more than maxParameterBytes/,
    )
    expect(snapshot(model)).toEqual(before)
    applyLora(model, { rank: 1, targetModules: ['q_proj'], maxParameterBytes: modelBytes + 1000 }).remove()
    model.dispose()
  })

  it('applyLora is all-or-nothing: a failure while allocating detaches, frees and unfreezes everything it did', () => {
    const model = base()
    const before = snapshot(model)
    const addParameter = model.addParameter.bind(model)
    let calls = 0
    model.addParameter = (...args: Parameters<CausalLanguageModel['addParameter']>) => {
      if (++calls === 3) throw new Error('out of memory')
      return addParameter(...args)
    }
    expect(() => applyLora(model, { rank: 4 })).toThrow('out of memory')
    expect(snapshot(model)).toEqual(before)
    model.dispose()
  })
})
