import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError, parseArgument } from '@ludic/core'
import { CausalLanguageModel } from '../model/causal-language-model.js'
import { parameterSpecs } from '../model/parameter-shapes.js'
import { createValueHead, scalarHeadOptionsSchema, scoreWeightName, type ScalarHeadOptions, type ValueHead } from './scalar-heads.js'

/** Options of `createCriticModel`: the value head's initialisation (see `createValueHead`). */
export type CriticModelOptions = ScalarHeadOptions

/** A separate critic: a model of the policy's architecture and its value head (`model.parameters()` has `score.weight`). */
export interface CriticModel {
  readonly model: CausalLanguageModel
  readonly valueHead: ValueHead
}

/**
 * A separate value model made from a policy (verl's critic started from the actor's checkpoint): a new
 * `CausalLanguageModel` with the policy's config, context and weights, its own variables, and a value head.
 *
 * - The weights are what the policy computes with now: its base parameters (`parameterSpecs`), with each attached,
 *   unmerged adapter's update (LoRA's `B A · scale`) added into the weight it adapts. Adapters are not carried
 *   over (apply LoRA to the critic as to the policy), nor are any other added parameters. A `score.weight` the
 *   policy has (a reward model, or a checkpoint saved with a head) becomes the critic's value head; otherwise one
 *   is drawn from `options.seed` as `createValueHead` does.
 * - Every parameter is trainable except the untied output projection (`lm_head.*`), frozen because a critic
 *   computes no logits: `model.trainableParameters()` is what a value loss trains.
 * - Memory: TensorFlow.js variables made from the same tensor share its buffer until one is assigned, so the
 *   critic costs nothing at first (an adapter's folded weights and the head excepted); each weight gets its own
 *   buffer at the first update of either model (an optimizer step assigns it). Full fine-tuning of both is
 *   therefore a full second copy of the weights after the first step (plus the critic's optimizer moments,
 *   twice that again for AdamW); weights neither model trains (a frozen base under LoRA) stay shared.
 *
 * Training either model never changes the other. The caller disposes `critic.model` (the head with it).
 */
export function createCriticModel(policy: CausalLanguageModel, options: CriticModelOptions = {}): CriticModel {
  const headOptions = parseArgument(scalarHeadOptionsSchema, options, 'options')
  if (!(policy instanceof CausalLanguageModel)) {
    throw new InvalidArgumentError({ argument: 'policy', value: policy, message: 'must be a CausalLanguageModel' })
  }
  const parameters = policy.parameters()
  const names = parameterSpecs(policy.config).map((spec) => spec.name)
  if (parameters.has(scoreWeightName)) names.push(scoreWeightName)
  const adapters = policy.linearAdapters()
  const folded: tf.Tensor[] = []
  try {
    const weights = new Map<string, tf.Tensor>()
    for (const name of names) weights.set(name, policy.parameter(name))
    for (const [layer, adapter] of adapters) {
      if (adapter.merged) continue
      const { inputs, inputMajor } = policy.linearLayout(layer)
      const weight = policy.parameter(`${layer}.weight`)
      const effective = tf.tidy(() => {
        const update = adapter.apply(tf.eye(inputs), false) // [in, out]: the adapter's output for each unit input
        return tf.add(weight, inputMajor ? update : tf.transpose(update)) // GPT-2's Conv1D stores [in, out]
      })
      folded.push(effective)
      weights.set(`${layer}.weight`, effective)
    }
    const model = new CausalLanguageModel(policy.config, weights, {
      ...(policy.sourceConfig === undefined ? {} : { sourceConfig: { ...policy.sourceConfig } }),
      maxContextTokens: policy.maxContextTokens,
    })
    try {
      if ([...weights.keys()].some((name) => name.startsWith('lm_head.'))) model.freeze('lm_head.*')
      const valueHead = createValueHead(model, headOptions)
      return { model, valueHead }
    } catch (error) {
      model.dispose()
      throw error
    }
  } finally {
    tf.dispose(folded)
  }
}
