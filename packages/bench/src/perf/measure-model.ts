/**
 * What the `train-step` and `decode` suites measure inside a child process, one backend per process: one training
 * step (forward, next-token cross-entropy, backward, AdamW) and batched sampling with a key/value cache, per
 * preset, medians after warm-up. Also the inputs the PyTorch peer reads (the model's own initial weights and the
 * batch), so the peer computes exactly what Ludic computes and the first loss or logits show it.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createRandom, deriveSeed } from '@ludic/core'
import {
  computeGradients,
  createAdamW,
  createModel,
  GenerationEngine,
  generate,
  generationEngineOptionsSchema,
  kvPageBytes,
  type CausalLanguageModel,
  type PresetName,
} from '@ludic/model'
import { initTensors, tokenLogprobs, writeSafetensorsFile, type InitTensorsOptions } from '@ludic/tensors'
import * as tf from '@tensorflow/tfjs-core'

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

/** A deterministic `[rows, columns]` batch of token ids in `[0, vocab)`. */
export function tokenBatch(rows: number, columns: number, vocab: number, seed: number): Int32Array<ArrayBuffer>[] {
  const random = createRandom(seed)
  return Array.from({ length: rows }, () => Int32Array.from({ length: columns }, () => random.nextInt(vocab)))
}

/** The shape of one training-step measurement (the same for Ludic and the peer). */
export interface TrainStepSettings {
  presets: PresetName[]
  batchSize: number
  sequenceLength: number
  vocabSize: number
  learningRate: number
  weightDecay: number
  warmup: number
  /** Timed repetitions per preset (`base` takes `Math.max(1, ⌈repetitions · 3/5⌉)`). */
  repetitions: number
  /** `createAdamW`'s `fused` (absent: its default, fused on the native backend). */
  fusedOptimizer?: boolean
}

export interface TrainStepMeasurement {
  parameters: number
  initialLoss: number
  medianStepMs: number
  medianOptimizerMs: number
  stepMs: number[]
  tokensPerSecond: number
  tensorsStable: boolean
  /** Whether AdamW ran as TensorFlow's fused ops (Ludic only; the peer's is torch's single-tensor AdamW). */
  fusedOptimizer?: boolean
}

export interface BackendMeasurements<Entry> {
  backend: string
  device: string
  threads: number
  presets: Record<string, Entry | { error: string }>
}

/** The batch every side trains on: input ids and independent next-token targets. */
export function trainingBatch(settings: Pick<TrainStepSettings, 'batchSize' | 'sequenceLength' | 'vocabSize'>): {
  inputIds: Int32Array[]
  targets: Int32Array[]
} {
  return {
    inputIds: tokenBatch(settings.batchSize, settings.sequenceLength, settings.vocabSize, 11),
    targets: tokenBatch(settings.batchSize, settings.sequenceLength, settings.vocabSize, 12),
  }
}

export function repetitionsOf(preset: string, repetitions: number): number {
  return preset === 'base' ? Math.max(1, Math.ceil((repetitions * 3) / 5)) : repetitions
}

/** Training steps of every preset on `backend`, in this process. */
export async function measureTrainSteps(backend: string, settings: TrainStepSettings): Promise<BackendMeasurements<TrainStepMeasurement>> {
  const runtime = await initTensors({ backend: backend as InitTensorsOptions['backend'], verbose: false })
  const result: BackendMeasurements<TrainStepMeasurement> = { backend, device: runtime.device, threads: runtime.threads, presets: {} }
  const { inputIds, targets: targetRows } = trainingBatch(settings)
  const tokensPerStep = settings.batchSize * settings.sequenceLength
  for (const preset of settings.presets) {
    const model = createModel(preset, { vocabSize: settings.vocabSize, seed: 0 })
    const targets = tf.tensor2d(Int32Array.from(targetRows.flatMap((row) => [...row])), [settings.batchSize, settings.sequenceLength], 'int32')
    try {
      const parameters = model.trainableParameters()
      const optimizer = createAdamW(parameters, {
        learningRate: settings.learningRate,
        weightDecay: settings.weightDecay,
        ...(settings.fusedOptimizer === undefined ? {} : { fused: settings.fusedOptimizer }),
      })
      // Mean next-token cross-entropy: −mean log p(target).
      const lossOf = () => tf.tidy(() => tf.neg(tf.mean(tokenLogprobs(model.forward(inputIds), targets))) as tf.Scalar)
      const initialLoss = tf.tidy(() => lossOf().dataSync()[0]!)
      const step = (): { totalMs: number; optimizerMs: number } => {
        const begin = performance.now()
        const { loss, gradients } = computeGradients(lossOf, parameters)
        const value = loss.dataSync()[0]!
        const optimizerBegin = performance.now()
        optimizer.step(gradients)
        const end = performance.now()
        tf.dispose([loss, ...gradients.values()])
        if (!Number.isFinite(value)) throw new Error(`loss is ${value}`)
        return { totalMs: end - begin, optimizerMs: end - optimizerBegin }
      }
      for (let index = 0; index < settings.warmup; index++) step()
      const before = tf.memory().numTensors
      const times = Array.from({ length: repetitionsOf(preset, settings.repetitions) }, step)
      const stepMs = times.map((time) => time.totalMs)
      const medianStepMs = median(stepMs)
      result.presets[preset] = {
        parameters: model.numParameters,
        initialLoss,
        medianStepMs,
        medianOptimizerMs: median(times.map((time) => time.optimizerMs)),
        stepMs,
        tokensPerSecond: tokensPerStep / (medianStepMs / 1000),
        tensorsStable: tf.memory().numTensors === before,
        fusedOptimizer: optimizer.fused,
      }
      optimizer.dispose()
    } catch (error) {
      result.presets[preset] = { error: (error as Error).message }
    } finally {
      targets.dispose()
      model.dispose()
    }
    console.error(`  ${backend} ${preset}: ${JSON.stringify(result.presets[preset]).slice(0, 160)}`)
  }
  return result
}

export interface DecodeSettings {
  presets: PresetName[]
  batchSizes: number[]
  promptLength: number
  newTokens: number
  /** `generate`, or every row on a fresh `GenerationEngine`. */
  sampler: 'generate' | 'engine'
  /** The engine's `products`. */
  engineProducts: 'host' | 'backend'
  engineThreads: number
  enginePrefillChunkTokens?: number
  enginePageTokens?: number
  vocabSize: number
  warmup: number
  repetitions: number
}

export interface DecodeMeasurement {
  medianGenerationMs: number
  generationMs: number[]
  tokensPerSecond: number
  /** Σ of the prompt's last-position logits of every row, and the first four of row 0 (to compare with the peer). */
  lastLogitsSum: number
  lastLogitsFirst: number[]
  tensorsStable: boolean
}

/** The prompts every side decodes from: `max(batchSizes)` rows of `promptLength` tokens. */
export function decodePrompts(settings: Pick<DecodeSettings, 'batchSizes' | 'promptLength' | 'vocabSize'>): Int32Array<ArrayBuffer>[] {
  return tokenBatch(Math.max(...settings.batchSizes), settings.promptLength, settings.vocabSize, 21)
}

/** Batched sampling of every preset and batch size on `backend`, in this process (entries keyed `<preset>/<batch>`). */
export async function measureDecode(backend: string, settings: DecodeSettings): Promise<BackendMeasurements<DecodeMeasurement>> {
  const runtime = await initTensors({ backend: backend as InitTensorsOptions['backend'], verbose: false })
  const result: BackendMeasurements<DecodeMeasurement> = { backend, device: runtime.device, threads: runtime.threads, presets: {} }
  const prompts = decodePrompts(settings)
  for (const preset of settings.presets) {
    const model = createModel(preset, { vocabSize: settings.vocabSize, seed: 0 })
    for (const batch of settings.batchSizes) {
      const key = `${preset}/${batch}`
      try {
        const inputIds = prompts.slice(0, batch)
        const lastLogits = tf.tidy(() => {
          const logits = model.forward(inputIds) // [batch, promptLength, vocab]
          return tf.squeeze(tf.slice(logits, [0, settings.promptLength - 1, 0], [batch, 1, settings.vocabSize]), [1]).arraySync() as number[][]
        })
        const run = async (): Promise<number> => {
          const begin = performance.now()
          const sequences =
            settings.sampler === 'engine'
              ? await engineSample(model, inputIds, settings)
              : await generate(model, { inputIds, maxNewTokens: settings.newTokens, temperature: 1, seed: 0, stopTokenIds: [] })
          const elapsed = performance.now() - begin
          for (const sequence of sequences) {
            if (sequence.tokenIds.length !== settings.newTokens) throw new Error(`generated ${sequence.tokenIds.length} tokens, not ${settings.newTokens}`)
          }
          return elapsed
        }
        for (let index = 0; index < settings.warmup; index++) await run()
        const before = tf.memory().numTensors
        const generationMs: number[] = []
        for (let index = 0; index < settings.repetitions; index++) generationMs.push(await run())
        const medianGenerationMs = median(generationMs)
        result.presets[key] = {
          medianGenerationMs,
          generationMs,
          tokensPerSecond: (batch * settings.newTokens) / (medianGenerationMs / 1000),
          lastLogitsSum: lastLogits.flat().reduce((total, value) => total + value, 0),
          lastLogitsFirst: lastLogits[0]!.slice(0, 4),
          tensorsStable: tf.memory().numTensors === before,
        }
      } catch (error) {
        result.presets[key] = { error: (error as Error).message }
      }
      console.error(`  ${backend} ${preset} batch ${batch}: ${JSON.stringify(result.presets[key]).slice(0, 160)}`)
    }
    model.dispose()
  }
  return result
}

/** `inputIds` sampled on a fresh engine (every row at once, temperature 1, no stop token; seeds as `generate`'s). */
async function engineSample(model: CausalLanguageModel, inputIds: readonly Int32Array[], settings: DecodeSettings) {
  const { newTokens } = settings
  const pageTokens = settings.enginePageTokens ?? generationEngineOptionsSchema.shape.pageTokens.parse(undefined)
  const sequenceLength = inputIds[0]!.length + newTokens
  const engine = new GenerationEngine(model, {
    maxRows: inputIds.length,
    maxSequenceLength: sequenceLength,
    // The pages the rows take (all their positions in distinct pages) and no more: the engine allocates its whole pool,
    // and one far larger than a run needs costs it (a 2 GiB pool ran the decode suite's 128-row batch ~30 % slower).
    kvCacheBytes: Math.max(2 ** 20, inputIds.length * Math.ceil(sequenceLength / pageTokens) * kvPageBytes(model.config, pageTokens)),
    pageTokens,
    products: settings.engineProducts,
    threads: settings.engineThreads,
    ...(settings.enginePrefillChunkTokens === undefined ? {} : { prefillChunkTokens: settings.enginePrefillChunkTokens }),
  })
  try {
    return await Promise.all(
      inputIds.map((promptIds, index) =>
        engine.submit({
          promptIds,
          sampling: { temperature: 1, topK: 0, topP: 1, minP: 0 },
          maxNewTokens: newTokens,
          stopTokenIds: new Set(),
          stopStrings: [],
          random: createRandom(deriveSeed(0, index)),
        }),
      ),
    )
  } finally {
    engine.dispose()
  }
}

/**
 * Writes what the peer needs to compute exactly what the TypeScript model computes, per preset: the model's
 * parameters (Hugging Face names) and the batch tensors as `__batch__.<name>` in `<preset>.safetensors`, and the
 * configuration in `<preset>.config.json`. Runs on the CPU backend (the weights come from the seed, not the backend).
 */
export async function writePeerInputs(
  directory: string,
  presets: readonly PresetName[],
  vocabSize: number,
  batch: Record<string, Int32Array[]>,
): Promise<void> {
  await initTensors({ backend: 'cpu', verbose: false })
  mkdirSync(directory, { recursive: true })
  for (const preset of presets) {
    const model: CausalLanguageModel = createModel(preset, { vocabSize, seed: 0 })
    const tensors = new Map<string, { shape: number[]; data: Float32Array } | { shape: number[]; data: Int32Array }>()
    for (const [name, variable] of model.parameters()) tensors.set(name, { shape: [...variable.shape], data: Float32Array.from(await variable.data()) })
    for (const [name, rows] of Object.entries(batch)) {
      const columns = rows[0]!.length
      const data = new Int32Array(rows.length * columns)
      rows.forEach((row, index) => data.set(row, index * columns))
      tensors.set(`__batch__.${name}`, { shape: [rows.length, columns], data })
    }
    await writeSafetensorsFile(join(directory, `${preset}.safetensors`), tensors)
    writeFileSync(join(directory, `${preset}.config.json`), JSON.stringify(model.config))
    model.dispose()
  }
}
