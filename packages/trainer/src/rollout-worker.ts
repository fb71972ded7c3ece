/**
 * The worker module the RL trainer's asynchronous mode gives `createAsyncCollector` (built to
 * `dist/rollout-worker.js`): in each worker thread it initialises its own TensorFlow.js backend, builds a copy
 * of the model from the weights the trainer sent, and plays the environments of the user's setup module with
 * a local policy; pushed weights are assigned to that copy between batches.
 */
import type { Sample } from '@ludic/core'
import { CausalLanguageModel, createLocalPolicy, type GenerationEngineOptions, type ModelConfig } from '@ludic/model'
import type { RolloutWorkerContext, RolloutWorkerSetup } from '@ludic/rollout'
import { initTensors } from '@ludic/tensors'
import * as tf from '@tensorflow/tfjs-core'
import { loadRolloutSetup } from './rollout-setup.js'
import { responseLogprobs } from './sequences.js'

export type { CreateRlRolloutSetup, RlRolloutSetup } from './rollout-setup.js'

/** Weights as plain data (one entry per parameter): what crosses to the worker threads. */
export interface WeightsPayload {
  names: string[]
  shapes: number[][]
  values: Float32Array[]
}

export interface ModelRolloutWorkerData {
  setupModule: string
  setupData: unknown
  modelConfig: ModelConfig
  weights: WeightsPayload
  /** The worker's backend (`wasm`, `cpu`, `tensorflow`…). */
  backend: string
  maxBatch: number
  seed: number
  /** The trainer tokenizer's vocabulary size, checked against the setup's. */
  vocabSize: number
  /**
   * The KL term's reference weights: the worker computes every batch's reference log-probs (its `annotation`,
   * in the trainer's sample order and chunking), a forward pass the trainer's thread then skips.
   */
  reference?: WeightsPayload
  /** Sequences per reference forward pass (the trainer's mini-batch size). */
  chunkSize: number
  /** The sampling temperature: the reference's log-probs are those of softmax(logits / T), as the policy's. */
  temperature: number
  /** The trainer's `batch.engine`: the worker's policy runs on a `GenerationEngine` (its rows `maxBatch` unless set). */
  engine?: false | true | GenerationEngineOptions
}

/** A batch's annotation from the trainer's rollout worker. */
export interface RolloutAnnotation {
  /** Per sample with a non-empty response, in order: its response tokens' log-probs under the reference model. */
  referenceLogprobs?: Float32Array[]
}

/** The model's weights as plain data (copies; no tensor leaves the call). */
export function weightsPayload(parameters: ReadonlyMap<string, tf.Variable>): WeightsPayload {
  const payload: WeightsPayload = { names: [], shapes: [], values: [] }
  for (const [name, variable] of parameters) {
    payload.names.push(name)
    payload.shapes.push([...variable.shape])
    payload.values.push(Float32Array.from(variable.dataSync() as Float32Array))
  }
  return payload
}

export async function createRolloutWorker(data: ModelRolloutWorkerData, context: RolloutWorkerContext): Promise<RolloutWorkerSetup> {
  await initTensors({ backend: data.backend as never, verbose: false })
  const setup = await loadRolloutSetup(data.setupModule, data.setupData)
  if (setup.tokenizer.vocabSize !== data.vocabSize) {
    throw new RangeError(`the setup module's tokenizer has ${setup.tokenizer.vocabSize} ids, the trainer's ${data.vocabSize}: they must be the same tokenizer`)
  }
  const model = modelOf(data.modelConfig, data.weights)
  const reference = data.reference === undefined ? undefined : modelOf(data.modelConfig, data.reference)
  const policy = createLocalPolicy({
    model,
    tokenizer: setup.tokenizer,
    maxBatch: data.maxBatch,
    seed: data.seed + context.workerIndex,
    ...(data.engine === undefined || data.engine === false ? {} : { engine: { maxRows: data.maxBatch, ...(data.engine === true ? {} : data.engine) } }),
    ...(setup.chatTemplate === undefined ? {} : { chatTemplate: setup.chatTemplate }),
  })
  return {
    environments: setup.environments,
    policy,
    ...(setup.prompt === undefined ? {} : { prompt: setup.prompt }),
    setWeights(weights) {
      const payload = weights as WeightsPayload
      payload.names.forEach((name, index) => {
        const variable = model.parameter(name)
        const value = tf.tensor(payload.values[index]!, payload.shapes[index]!, 'float32')
        variable.assign(value)
        value.dispose()
      })
    },
    ...(reference === undefined
      ? {}
      : {
          async annotate(result: { samples: readonly Sample[] }): Promise<RolloutAnnotation> {
            const sequences = result.samples
              .filter((sample) => sample.responseTokenIds.length > 0)
              .map((sample) => ({ promptIds: sample.promptTokenIds, responseIds: sample.responseTokenIds }))
            return { referenceLogprobs: await responseLogprobs(reference, sequences, data.chunkSize, { temperature: data.temperature }) }
          },
        }),
    dispose() {
      model.dispose()
      reference?.dispose()
    },
  }
}

function modelOf(config: ModelConfig, weights: WeightsPayload): CausalLanguageModel {
  const initial = new Map(weights.names.map((name, index) => [name, tf.tensor(weights.values[index]!, weights.shapes[index]!, 'float32')]))
  const model = new CausalLanguageModel(config, initial)
  tf.dispose([...initial.values()])
  return model
}
