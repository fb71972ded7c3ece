import * as tf from '@tensorflow/tfjs-core'
import { createRandom, deriveSeed, InvalidArgumentError, parseArgument, tokenizerSchema, type Random } from '@ludic/core'
import { maskedMean } from '@ludic/tensors'
import {
  CausalLanguageModel,
  checkVocabularyFits,
  clipGradientsByGlobalNorm,
  computeGradients,
  createAdamW,
  sequenceLogprobs,
  type AdamW,
  type LearningRateSchedule,
} from '@ludic/model'
import { z } from 'zod'
import { optimizerConfigSchema } from './optimizer-config.js'
import { plainConfig } from './loggers/run-loggers.js'
import type { UpdateStepMetrics } from './metrics-log.js'
import { resolveSchedule, scheduleConfigSchema } from './schedule.js'
import { raggedOf, type TokenSequence } from './sequences.js'
import { createDataOrder } from './data-order.js'
import { createTrainerSkeleton, runConfigFields, trainerWith, type TrainerControls, type TrainerRunOptions } from './skeleton.js'

/** A supervised example: token ids, or text (encoded with the trainer's tokenizer, no special tokens added). */
export type SftExample = TokenSequence | { prompt: string; response: string }

const int32Array = z.custom<Int32Array>((value) => value instanceof Int32Array, 'must be an Int32Array')
const exampleSchema = z.union([
  z.strictObject({ promptIds: int32Array, responseIds: int32Array }),
  z.strictObject({ prompt: z.string(), response: z.string() }),
])

export const sftTrainerConfigSchema = z.strictObject({
  model: z.instanceof(CausalLanguageModel, { message: 'must be a CausalLanguageModel (createModel, loadModel)' }),
  /** Needed for text examples; a tokenizer's EOS is appended to each text response (so the model learns to stop). */
  tokenizer: tokenizerSchema.optional(),
  examples: z.array(exampleSchema).min(1, 'needs at least one example'),
  /** Examples per update. Default 16. */
  batchSize: z.number().int().positive().default(16),
  optimizer: optimizerConfigSchema.prefault({ learningRate: 1e-3 }),
  schedule: z.union([scheduleConfigSchema, z.custom<LearningRateSchedule>((value) => typeof value === 'function', 'must be a function')]).optional(),
  /** Seeds the order of examples (a fresh permutation each epoch). Default 0. */
  seed: z.number().int().default(0),
  ...runConfigFields,
})
export type SftTrainerConfig = z.input<typeof sftTrainerConfigSchema>

/** One update's metrics; `loss` is the token-mean negative log-likelihood of the response tokens (TRL's SFT `loss`). */
export type SftStepMetrics = UpdateStepMetrics & {
  /** Response tokens in the batch. */
  tokens: number
}

/**
 * One supervised update: masked negative log-likelihood of the response tokens given their prompts
 * (token mean over the batch), gradients clipped to `maxGradNorm`, one AdamW step. Returns plain numbers;
 * leaves `tf.memory().numTensors` unchanged.
 */
export function sftStep(
  model: CausalLanguageModel,
  optimizer: AdamW,
  batch: readonly TokenSequence[],
  options: { learningRate: number; maxGradNorm: number },
): { loss: number; grad_norm: number; tokens: number } {
  const parameters = model.trainableParameters()
  const { loss, gradients } = computeGradients(
    () =>
      tf.tidy(() => {
        const { logprobs, responseMask } = sequenceLogprobs(model, raggedOf(batch))
        return tf.neg(maskedMean(logprobs, responseMask)) as tf.Scalar // NLL, token mean
      }),
    parameters,
  )
  const clipped = clipGradientsByGlobalNorm(gradients, options.maxGradNorm)
  optimizer.step(clipped.gradients, { learningRate: options.learningRate })
  const nll = loss.dataSync()[0]!
  tf.dispose([loss, ...gradients.values(), ...clipped.gradients.values()])
  return { loss: nll, grad_norm: clipped.norm, tokens: batch.reduce((total, s) => total + s.responseIds.length, 0) }
}

export interface SftTrainer extends TrainerControls<SftStepMetrics> {
  /** Updates until `steps` have been taken in total (a resumed run continues to it); returns this call's metrics. */
  run(options: TrainerRunOptions<SftStepMetrics> & { steps: number }): Promise<SftStepMetrics[]>
}

/**
 * Supervised fine-tuning (e.g. a warm-up on transcripts of legal play, so a model made from scratch starts
 * with legal moves): shuffled mini-batches of examples, masked NLL on the responses, AdamW.
 */
export function createSftTrainer(config: SftTrainerConfig): SftTrainer {
  const parsed = parseArgument(sftTrainerConfigSchema, config, 'config')
  const { model, tokenizer, batchSize, seed } = parsed
  if (tokenizer !== undefined) checkVocabularyFits(tokenizer, model.config)
  const { maxGradNorm, learningRate, ...adamW } = parsed.optimizer
  const schedule = resolveSchedule(parsed.schedule)
  const examples: TokenSequence[] = parsed.examples.map((example, index) => {
    if ('promptIds' in example) return example
    if (tokenizer === undefined)
      throw new InvalidArgumentError({ argument: 'config.tokenizer', value: undefined, message: `is needed for text examples (config.examples[${index}])` })
    const responseIds = [...tokenizer.encode(example.response, { addSpecialTokens: false })]
    if (tokenizer.eosTokenId !== undefined) responseIds.push(tokenizer.eosTokenId)
    return { promptIds: tokenizer.encode(example.prompt, { addSpecialTokens: false }), responseIds: Int32Array.from(responseIds) }
  })
  examples.forEach((example, index) => {
    if (example.promptIds.length === 0 || example.responseIds.length === 0) {
      throw new InvalidArgumentError({ argument: `config.examples[${index}]`, value: example, message: 'needs a non-empty prompt and response' })
    }
  })
  const optimizer = createAdamW(model.trainableParameters(), { ...adamW, learningRate })
  let random: Random = createRandom(deriveSeed('ludic.sft', seed))
  const order = createDataOrder(examples.length, batchSize)
  const skeleton = createTrainerSkeleton<SftStepMetrics>({
    name: 'sft',
    model,
    optimizer,
    run: parsed,
    plainConfig: () => plainConfig(parsed, ['model', 'tokenizer', 'examples', 'loggers', 'loggedConfig']),
    async update(stepIndex) {
      const rate = learningRate * schedule(stepIndex)
      const result = sftStep(
        model,
        optimizer,
        order.next(random).map((index) => examples[index]!),
        { learningRate: rate, maxGradNorm },
      )
      return { metrics: { step: stepIndex + 1, ...result, learning_rate: rate } }
    },
    random: () => random,
    saveState: () => ({ order: order.getState() }),
    restoreState(state, restored) {
      random = restored
      order.setState((state as { order?: number[] } | undefined)?.order)
    },
    progressFields: (metrics) => ({ loss: metrics.loss }),
    dispose: () => optimizer.dispose(),
  })
  return trainerWith(skeleton, { optimizer, run: skeleton.run })
}
