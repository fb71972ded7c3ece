import * as tf from '@tensorflow/tfjs-core'
import { deriveSeed, InvalidArgumentError, parseArgument, ShapeError } from '@ludic/core'
import { z } from 'zod'
import type { CausalLanguageModel, ForwardOptions } from '../model/causal-language-model.js'
import { normalValues } from '../model/create-model.js'
import { readIntegerMatrix, type IntegerMatrix } from '../model/model-inputs.js'

/** The parameter name of a scalar head: transformers' `*ForSequenceClassification` `score` layer, `[1, hidden]`, no bias. */
export const scoreWeightName = 'score.weight'

export const scalarHeadOptionsSchema = z
  .object({
    /** Seed of the initialisation, normal(0, `initializerRange`) as transformers. Default: 0. */
    seed: z.number().int().default(0),
    /** Standard deviation of the initialisation. Default: the model's `initializerRange`. */
    initializerRange: z.number().positive().optional(),
  })
  .strict()
export type ScalarHeadOptions = z.input<typeof scalarHeadOptionsSchema>

/** A linear map from the final hidden state to one number, stored in the model as `score.weight`. */
interface ScalarHead {
  /** The `score.weight` variable `[1, hidden]` (also in `model.parameters()`, so optimizers and `saveModel` see it). */
  readonly weight: tf.Variable
  /** Scores of final hidden states `[batch, time, hidden]` → `[batch, time]`. */
  fromHidden(hidden: tf.Tensor3D): tf.Tensor2D
  /** Removes `score.weight` from the model and frees it. */
  dispose(): void
}

/** A value head (the critic of PPO): one value per token. */
export interface ValueHead extends ScalarHead {
  /** `[batch, time]` values of every position (differentiable). */
  values(inputIds: IntegerMatrix, options?: ForwardOptions): tf.Tensor2D
}

/** A reward head (a reward model): one score per sequence, read at its last attended token. */
export interface RewardHead extends ScalarHead {
  /** `[batch]` rewards, each read at the row's last attended token (differentiable). */
  rewards(inputIds: IntegerMatrix, options?: Omit<ForwardOptions, 'cache'>): tf.Tensor1D
}

function attachScore(model: CausalLanguageModel, options: ScalarHeadOptions): ScalarHead {
  const { seed, initializerRange } = parseArgument(scalarHeadOptionsSchema, options, 'options')
  const { hiddenSize } = model.config
  const existing = model.parameters().get(scoreWeightName)
  let weight: tf.Variable
  if (existing !== undefined) {
    if (existing.shape.length !== 2 || existing.shape[0] !== 1 || existing.shape[1] !== hiddenSize) {
      throw new ShapeError({
        argument: scoreWeightName,
        expected: [1, hiddenSize],
        actual: existing.shape,
        message: "the model's score.weight cannot be a scalar head",
      })
    }
    weight = existing
  } else {
    const initial = tf.tensor2d(normalValues(hiddenSize, initializerRange ?? model.config.initializerRange, deriveSeed(seed, scoreWeightName)), [1, hiddenSize])
    weight = model.addParameter(scoreWeightName, initial)
    initial.dispose()
  }
  return {
    weight,
    fromHidden(hidden) {
      const [batch, time, width] = hidden.shape
      return tf.tidy(() => tf.reshape(tf.matMul(tf.reshape(hidden, [batch * time, width]), weight, false, true), [batch, time])) as tf.Tensor2D // [batch, time]
    },
    dispose() {
      if (!model.isDisposed && model.parameters().has(scoreWeightName)) model.removeParameter(scoreWeightName)
    },
  }
}

/**
 * Checks that `valueHead` is a live value head of `model` (its `score.weight`, `[1, hidden]`), so values are
 * read from this model's trunk: a head made on another model (a separate critic's, a disposed one) is an
 * `InvalidArgumentError`, a head of another width a `ShapeError`, naming `argument`.
 */
export function checkValueHeadOf(model: CausalLanguageModel, valueHead: ValueHead, argument: string): void {
  const weight: unknown = (valueHead as Partial<ValueHead> | undefined)?.weight
  if (!(weight instanceof tf.Variable) || typeof valueHead.fromHidden !== 'function') {
    throw new InvalidArgumentError({ argument, value: valueHead, message: 'must be a value head (createValueHead(model))' })
  }
  if (weight.isDisposed) throw new InvalidArgumentError({ argument, value: weight.name, message: 'the value head was disposed' })
  const { hiddenSize } = model.config
  if (weight.shape.length !== 2 || weight.shape[0] !== 1 || weight.shape[1] !== hiddenSize) {
    throw new ShapeError({
      argument: `${argument}.weight`,
      expected: [1, hiddenSize],
      actual: weight.shape,
      message: `a value head of this model reads its hidden states of width ${hiddenSize}`,
    })
  }
  if (model.parameters().get(scoreWeightName) !== weight) {
    throw new InvalidArgumentError({
      argument,
      value: weight.name,
      message: `belongs to another model: it is not this model's ${scoreWeightName} (a value head reads the trunk of the model it was created on; make one with createValueHead(model))`,
    })
  }
}

/**
 * Adds a value head to a model: `score.weight` `[1, hidden]` (transformers' `score` layer, as TRL's value
 * models use), reusing one the model already has (a checkpoint saved with it). `head.values(ids)` gives a
 * value per position.
 */
export function createValueHead(model: CausalLanguageModel, options: ScalarHeadOptions = {}): ValueHead {
  const head = attachScore(model, options)
  return {
    ...head,
    values(inputIds, forwardOptions = {}) {
      return tf.tidy(() => head.fromHidden(model.hiddenStates(inputIds, forwardOptions)))
    },
  }
}

/**
 * Adds a reward head to a model: the same `score.weight` layer, read at each row's last attended token (the
 * last column where `attentionMask` is 1, or the last column without a mask), as transformers'
 * sequence-classification models pool.
 */
export function createRewardHead(model: CausalLanguageModel, options: ScalarHeadOptions = {}): RewardHead {
  const head = attachScore(model, options)
  return {
    ...head,
    rewards(inputIds, forwardOptions = {}) {
      const ids = readIntegerMatrix(inputIds, 'inputIds')
      const mask = forwardOptions.attentionMask === undefined ? undefined : readIntegerMatrix(forwardOptions.attentionMask, 'attentionMask', [0, 2])
      const last = new Int32Array(ids.rows)
      for (let row = 0; row < ids.rows; row++) {
        let column = ids.columns - 1
        if (mask !== undefined) while (column >= 0 && mask.data[row * mask.columns + column] === 0) column--
        if (column < 0) throw new InvalidArgumentError({ argument: `attentionMask[${row}]`, value: 0, message: 'a row needs at least one attended token' })
        last[row] = row * ids.columns + column
      }
      return tf.tidy(() => {
        const scores = head.fromHidden(model.hiddenStates(inputIds, forwardOptions)) // [batch, time]
        return tf.gather(tf.reshape(scores, [ids.rows * ids.columns]), tf.tensor1d(last, 'int32')) as tf.Tensor1D // [batch]
      })
    },
  }
}
