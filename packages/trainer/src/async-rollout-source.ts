import * as tf from '@tensorflow/tfjs-core'
import { deriveSeed, LudicError, type Sample } from '@ludic/core'
import { createAsyncCollector, type AsyncCollector } from '@ludic/rollout'
import { builtModulePath } from '@ludic/rollout/worker'
import { createRunEngine, trainableSamples, type RolloutSource, type RolloutSourceContext } from './rollout-source.js'
import { weightsPayload, type ModelRolloutWorkerData, type RolloutAnnotation } from './rollout-worker.js'

/**
 * Rollout workers (`createAsyncCollector`) playing with weights at most `maxStaleness` steps old (`config.asyncRollout`):
 * the Node entry's, registered in `node-platform.ts`.
 */
export function createAsyncRolloutSource({ config, model, reference }: RolloutSourceContext): RolloutSource {
  const settings = config.asyncRollout!
  const { batch, seed } = config
  if (batch.engine !== false) createRunEngine(model, config).dispose() // settings the workers' engines cannot run (too small a kvCacheBytes): refused now
  let collector: AsyncCollector | undefined
  const start = async (stepIndex: number): Promise<AsyncCollector> => {
    const data: ModelRolloutWorkerData = {
      setupModule: settings.setupModule instanceof URL ? settings.setupModule.href : settings.setupModule,
      setupData: settings.setupData,
      modelConfig: model.config,
      weights: weightsPayload(model.parameters()),
      backend: settings.backend ?? tf.getBackend(),
      maxBatch: batch.maxGenerationBatch,
      seed: deriveSeed('ludic.policy', seed),
      vocabSize: config.tokenizer.vocabSize,
      ...(reference === undefined ? {} : { reference: weightsPayload(reference.parameters()) }),
      chunkSize: batch.miniBatchSize,
      temperature: batch.temperature,
      engine: batch.engine,
    }
    const started = createAsyncCollector({
      worker: builtModulePath(import.meta.url, 'rollout-worker', '@ludic/trainer'),
      workerData: data,
      workers: settings.workers,
      episodesPerBatch: batch.episodesPerStep,
      groupSize: batch.groupSize,
      concurrency: batch.concurrency,
      maxTurns: batch.maxTurns,
      maxBatchSize: batch.maxGenerationBatch,
      generation: { maxTokens: batch.maxTokens, temperature: batch.temperature },
      // On the engine each episode steps as soon as its own completion is back.
      ...(batch.engine === false ? {} : { stepping: 'per-trajectory' as const }),
      ...(config.trainRoles === undefined ? {} : { trainRoles: config.trainRoles }),
      // Batches continue from the step reached, so a resumed run plays new seeds.
      seed: deriveSeed('ludic.async', seed, stepIndex),
      initialVersion: stepIndex,
      maxStaleness: settings.maxStaleness,
      prefetch: settings.prefetch,
      ...(settings.execArgv === undefined ? {} : { execArgv: settings.execArgv }),
    })
    try {
      await started.start()
    } catch (error) {
      await started.close()
      throw error
    }
    return started
  }
  return {
    offPolicy: true,
    async next(stepIndex) {
      collector ??= await start(stepIndex)
      const received = await collector.next(stepIndex)
      const samples = trainableSamples(received)
      const referenceLogprobs = workerReferenceLogprobs(received.annotation as RolloutAnnotation | undefined, samples)
      return {
        trajectories: received.trajectories,
        samples,
        generationSeconds: received.seconds,
        offPolicy: {
          policyVersion: received.policyVersion,
          dropped: collector.stats.batchesDropped,
          importanceCap: settings.importanceCap,
          ...(referenceLogprobs === undefined ? {} : { referenceLogprobs }),
        },
      }
    },
    updated(stepCount) {
      if (collector !== undefined && stepCount % settings.pushEvery === 0) collector.pushWeights(stepCount, weightsPayload(model.parameters()))
    },
    async close() {
      const running = collector
      collector = undefined
      await running?.close()
    },
  }
}

/** The worker's reference log-probs of these samples, when it sent them (checked against the response lengths). */
function workerReferenceLogprobs(annotation: RolloutAnnotation | undefined, samples: readonly Sample[]): Float32Array[] | undefined {
  const logprobs = annotation?.referenceLogprobs
  if (logprobs === undefined) return undefined
  if (logprobs.length !== samples.length || logprobs.some((row, index) => row.length !== samples[index]!.responseTokenIds.length)) {
    throw new LudicError(`the rollout worker's reference log-probs do not match the batch (${logprobs.length} rows for ${samples.length} samples)`)
  }
  return logprobs
}
