import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError } from '@ludic/core'
import { beforeAll, describe, expect, it } from 'vitest'
import { applyLora } from '../lora/apply-lora.js'
import type { CausalLanguageModel } from '../model/causal-language-model.js'
import { createModel } from '../model/create-model.js'
import { sequenceLogprobs } from '../sequence-logprobs.js'
import { sequenceValues } from '../sequence-values.js'
import { initTestBackend } from '../test/init-test-backend.js'
import { createTinyQwen3 } from '../test/tiny-qwen3.js'
import { computeGradients } from '../training/compute-gradients.js'
import { createAdamW } from '../training/adamw.js'
import { createCriticModel } from './critic-model.js'
import { createRewardHead, createValueHead } from './scalar-heads.js'

beforeAll(initTestBackend)

const promptIds = [[3, 7, 1], [9]]
const responseIds = [
  [5, 2],
  [10, 0, 3],
]
const inputIds = [
  [0, 0, 3, 7, 1, 5, 2],
  [0, 0, 0, 0, 9, 10, 0],
]
const attentionMask = [
  [0, 0, 1, 1, 1, 1, 1],
  [0, 0, 0, 0, 1, 1, 1],
]

const qwen3 = (seed: number, tied: boolean): CausalLanguageModel => createTinyQwen3(seed, { tie_word_embeddings: tied }, { maxContextTokens: 64 })

function gpt2(seed: number): CausalLanguageModel {
  return createModel({ model_type: 'gpt2', vocab_size: 11, n_embd: 8, n_inner: 12, n_layer: 2, n_head: 2, n_positions: 16, initializer_range: 0.5 }, { seed })
}

const snapshot = (model: CausalLanguageModel) => new Map([...model.parameters()].map(([name, variable]) => [name, Array.from(variable.dataSync())]))

function maxDifference(a: tf.Tensor, b: tf.Tensor): number {
  return tf.tidy(() => tf.max(tf.abs(tf.sub(a, b))).dataSync()[0]!)
}

describe('createCriticModel', () => {
  it("is a model of the policy's config and weights, in variables of its own, with a value head and its lm_head frozen", () => {
    for (const tied of [true, false]) {
      const policy = qwen3(1, tied)
      const before = tf.memory().numTensors
      const { model: critic, valueHead } = createCriticModel(policy, { seed: 4 })
      expect(critic.config).toEqual(policy.config)
      expect(critic.maxContextTokens).toBe(64)
      const policyParameters = policy.parameters()
      const criticParameters = critic.parameters()
      expect([...criticParameters.keys()]).toEqual([...policyParameters.keys(), 'score.weight'])
      expect(criticParameters.get('score.weight')).toBe(valueHead.weight)
      for (const [name, variable] of policyParameters) {
        const copy = criticParameters.get(name)!
        expect(copy, name).not.toBe(variable)
        expect(copy.name).not.toBe(variable.name)
        expect(Array.from(copy.dataSync()), name).toEqual(Array.from(variable.dataSync()))
      }
      // The untied output projection is frozen (a critic computes no logits), so the value loss trains every
      // trainable parameter: computeGradients refuses parameters the loss does not depend on.
      expect([...critic.trainableParameters().keys()]).toEqual([...criticParameters.keys()].filter((name) => !name.startsWith('lm_head.')))
      const { loss, gradients } = computeGradients(
        () => tf.sum(sequenceValues(critic, valueHead, { promptIds, responseIds }).values) as tf.Scalar,
        critic.trainableParameters(),
      )
      expect(gradients.size).toBe(critic.trainableParameters().size)
      tf.dispose([loss, ...gradients.values()])
      // The same hidden states as the policy: its values are those of a head of the same weight on the policy.
      const policyHead = createValueHead(policy)
      policyHead.weight.assign(valueHead.weight)
      const fromCritic = sequenceValues(critic, valueHead, { promptIds, responseIds })
      const fromPolicy = sequenceValues(policy, policyHead, { promptIds, responseIds })
      expect(Array.from(fromCritic.values.dataSync())).toEqual(Array.from(fromPolicy.values.dataSync()))
      tf.dispose([fromCritic, fromPolicy] as unknown as tf.TensorContainer)
      policyHead.dispose()
      critic.dispose()
      expect(tf.memory().numTensors, 'after the critic is disposed').toBe(before)
      policy.dispose()
    }
  })

  it('and the policy train apart: updating either leaves the other unchanged', () => {
    const policy = qwen3(2, false)
    const { model: critic, valueHead } = createCriticModel(policy, { seed: 5 })
    const policyOptimizer = createAdamW(policy.trainableParameters(), { learningRate: 1e-2, weightDecay: 0.1 })
    const criticOptimizer = createAdamW(critic.trainableParameters(), { learningRate: 1e-2, weightDecay: 0.1 })
    const criticStart = snapshot(critic)
    const policyStart = snapshot(policy)
    const step = (model: CausalLanguageModel, optimizer: typeof policyOptimizer, loss: () => tf.Scalar) => {
      const { loss: value, gradients } = computeGradients(loss, model.trainableParameters())
      optimizer.step(gradients)
      tf.dispose([value, ...gradients.values()])
    }
    for (let iteration = 0; iteration < 2; iteration++) {
      step(policy, policyOptimizer, () => tf.neg(tf.sum(sequenceLogprobs(policy, { promptIds, responseIds }).logprobs)) as tf.Scalar)
    }
    expect(snapshot(critic), 'the critic after policy updates').toEqual(criticStart)
    const policyTrained = snapshot(policy)
    expect(policyTrained.get('model.layers.0.self_attn.q_proj.weight')).not.toEqual(policyStart.get('model.layers.0.self_attn.q_proj.weight'))
    for (let iteration = 0; iteration < 2; iteration++) {
      step(critic, criticOptimizer, () => tf.sum(tf.square(sequenceValues(critic, valueHead, { promptIds, responseIds }).values)) as tf.Scalar)
    }
    expect(snapshot(policy), 'the policy after critic updates').toEqual(policyTrained)
    expect(snapshot(critic).get('model.layers.0.self_attn.q_proj.weight')).not.toEqual(criticStart.get('model.layers.0.self_attn.q_proj.weight'))
    // The frozen lm_head stays the policy's starting one.
    expect(snapshot(critic).get('lm_head.weight')).toEqual(policyStart.get('lm_head.weight'))
    policyOptimizer.dispose()
    criticOptimizer.dispose()
    critic.dispose()
    policy.dispose()
  })

  it.each(['qwen3', 'gpt2'])(
    'computes what a %s policy with LoRA computes (unmerged adapters folded in, merged ones already there), without the adapters',
    (architecture) => {
      const policy = architecture === 'qwen3' ? qwen3(3, false) : gpt2(3)
      const adapters = applyLora(policy, {
        rank: 2,
        alpha: 4,
        targetModules: architecture === 'qwen3' ? ['q_proj', 'v_proj', 'down_proj'] : ['c_attn', 'c_fc'],
      })
      for (const [name, variable] of adapters.parameters()) if (name.includes('lora_B')) variable.assign(tf.randomNormal(variable.shape, 0, 0.5, 'float32', 6))
      const policyHidden = policy.hiddenStates(inputIds, { attentionMask })
      for (const merge of [false, true]) {
        if (merge) adapters.merge()
        const before = tf.memory().numTensors
        const { model: critic } = createCriticModel(policy)
        expect(critic.linearAdapters().size).toBe(0)
        expect([...critic.parameters().keys()].some((name) => name.includes('lora_'))).toBe(false)
        expect([...critic.trainableParameters().keys()].some((name) => name !== 'score.weight' && !name.startsWith('lm_head.'))).toBe(true)
        const criticHidden = critic.hiddenStates(inputIds, { attentionMask })
        expect(maxDifference(criticHidden, policyHidden), `merged: ${merge}`).toBeLessThan(1e-5)
        tf.dispose(criticHidden)
        critic.dispose()
        expect(tf.memory().numTensors).toBe(before)
      }
      // The adapters change what the policy computes, so copying the base weights alone would fail the checks above.
      adapters.remove()
      const baseHidden = policy.hiddenStates(inputIds, { attentionMask })
      expect(maxDifference(baseHidden, policyHidden)).toBeGreaterThan(1e-3)
      tf.dispose([policyHidden, baseHidden])
      policy.dispose()
    },
  )

  it("keeps a head the policy has (a reward model's) as its value head, and trains it under LoRA", () => {
    const policy = qwen3(4, true)
    const rewardHead = createRewardHead(policy, { seed: 9 })
    const { model: critic, valueHead } = createCriticModel(policy, { seed: 1 })
    expect(valueHead.weight).not.toBe(rewardHead.weight)
    expect(Array.from(valueHead.weight.dataSync())).toEqual(Array.from(rewardHead.weight.dataSync()))
    applyLora(critic, { rank: 2, alpha: 4 })
    expect([...critic.trainableParameters().keys()]).toContain('score.weight')
    const head = Array.from(valueHead.weight.dataSync())
    const optimizer = createAdamW(critic.trainableParameters(), { learningRate: 1e-2 })
    const { loss, gradients } = computeGradients(
      () => tf.sum(tf.square(sequenceValues(critic, valueHead, { promptIds, responseIds }).values)) as tf.Scalar,
      critic.trainableParameters(),
    )
    optimizer.step(gradients)
    tf.dispose([loss, ...gradients.values()])
    expect(Array.from(valueHead.weight.dataSync())).not.toEqual(head)
    expect(Array.from(rewardHead.weight.dataSync())).toEqual(head)
    optimizer.dispose()
    critic.dispose()
    policy.dispose()
  })

  it('refuses what is not a live model and bad head options, allocating nothing', () => {
    const policy = qwen3(5, true)
    const before = tf.memory().numTensors
    const argumentOf = (run: () => unknown): string | undefined => {
      try {
        run()
      } catch (error) {
        expect(InvalidArgumentError.isInstance(error), String(error)).toBe(true)
        return (error as InvalidArgumentError).argument
      }
      return undefined
    }
    expect(argumentOf(() => createCriticModel({} as never))).toBe('policy')
    expect(argumentOf(() => createCriticModel(policy, { seed: 1.5 }))).toBe('options.seed')
    expect(argumentOf(() => createCriticModel(policy, { initializerRange: -1 }))).toBe('options.initializerRange')
    expect(argumentOf(() => createCriticModel(policy, { lora: true } as never))).toBe('options')
    expect(tf.memory().numTensors).toBe(before)
    policy.dispose()
    expect(() => createCriticModel(policy)).toThrow(/disposed/)
  })
})
