/**
 * What the `scale` suite measures inside a child process, one kind of work per process so that each peak resident
 * memory (`VmHWM`) is that work's own: loading the checkpoint, a prefill, a batched generation, or a LoRA step.
 * Also the checkpoint itself when the PyTorch peer cannot build it (Ludic then writes the same shape with its own
 * random weights, bf16, sharded).
 */
import { readFileSync } from 'node:fs'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { applyLora, computeGradients, createAdamW, createModel, generate, loadModel, saveModel, sequenceLogprobs, type CausalLanguageModel } from '@ludic/model'
import { initTensors, type InitTensorsOptions } from '@ludic/tensors'
import * as tf from '@tensorflow/tfjs-core'
import { median, tokenBatch } from '../perf/measure-model.js'

/** The kinds of work the suite measures, each in its own process. */
export const scaleWorks = ['load', 'prefill', 'decode', 'lora', 'lora-recompute'] as const
export type ScaleWork = (typeof scaleWorks)[number]

/** The token ids every measurement of both sides uses (`inputs.json` beside the checkpoint). */
export interface ScaleInputs {
  /** `[128]`: the prefill's prompt. */
  prompt: number[]
  /** `[8, 8]`: the generations' prompts (the first `batch` rows are used). */
  decode_prompts: number[][]
  /** `[4, 128]`: the LoRA step's sequences; the last `response_length` tokens of each are the response. */
  train_ids: number[][]
  response_length: number
  /** One per training sequence. */
  advantages: number[]
}

/** One measurement, the same fields from Ludic's child and from the peer (`peers/scale.py`). */
export interface ScaleMeasurement {
  what: ScaleWork
  /** Load: the load; otherwise the median of the timed repetitions. */
  seconds: number
  times?: number[]
  /** Decode: new tokens per second over the batch. */
  tokensPerSecond?: number
  batch?: number
  /** Prefill: the sum of the last position's logits (the two sides compute the same model). */
  lastLogitsSum?: number
  /** LoRA: the loss of the first step, and the adapters' parameter count. */
  initialLoss?: number
  trainable?: number
  parameters?: number
  /** The process's peak resident memory. */
  peakRssBytes: number
  threads: number
  device?: string
  /** Ludic: `tf.memory().numTensors` equal before and after the timed repetitions. */
  tensorsStable?: boolean
}

/** A measurement task of the child. */
export interface ScaleMeasureSettings {
  backend: string
  directory: string
  what: ScaleWork
  batch: number
  newTokens: number
  warmup: number
  repetitions: number
}

/** Hugging Face config fields of the checkpoint (the Qwen3-0.6B shape, or a smaller one). */
export type ScaleShape = Record<string, unknown>

/** Peak resident memory of this process (`VmHWM`), in bytes; 0 where `/proc` has none. */
export function peakResidentBytes(): number {
  try {
    const match = /VmHWM:\s+(\d+)\s*kB/.exec(readFileSync('/proc/self/status', 'utf8'))
    return match === null ? 0 : Number(match[1]) * 1024
  } catch {
    return 0
  }
}

async function timed(run: () => Promise<void>, warmup: number, repetitions: number): Promise<number[]> {
  for (let index = 0; index < warmup; index++) await run()
  const times: number[] = []
  for (let index = 0; index < repetitions; index++) {
    const start = performance.now()
    await run()
    times.push((performance.now() - start) / 1000)
  }
  return times
}

/** One kind of work on `backend`, in this process. */
export async function measureScale(settings: ScaleMeasureSettings): Promise<ScaleMeasurement> {
  const runtime = await initTensors({ backend: settings.backend as InitTensorsOptions['backend'], verbose: false })
  const inputs = JSON.parse(await readFile(join(settings.directory, 'inputs.json'), 'utf8')) as ScaleInputs
  const base = { what: settings.what, threads: runtime.threads, device: runtime.device }
  if (settings.what === 'load') {
    const start = performance.now()
    const model = await loadModel(settings.directory)
    const seconds = (performance.now() - start) / 1000
    const result = { ...base, seconds, parameters: model.numParameters, peakRssBytes: peakResidentBytes() }
    model.dispose()
    return result
  }
  const model = await loadModel(settings.directory)
  try {
    const before = tf.memory().numTensors
    let extra: Partial<ScaleMeasurement> = {}
    let times: number[]
    if (settings.what === 'prefill') {
      const lastLogits = () =>
        tf.tidy(() => {
          const hidden = model.hiddenStates([inputs.prompt])
          const last = tf.slice(hidden, [0, hidden.shape[1] - 1, 0], [1, 1, hidden.shape[2]])
          return tf.sum(model.logitsFromHidden(last as tf.Tensor3D))
        })
      times = await timed(
        async () => {
          const sum = lastLogits()
          await sum.data()
          sum.dispose()
        },
        settings.warmup,
        settings.repetitions,
      )
      const sum = lastLogits()
      extra = { lastLogitsSum: (await sum.data())[0]! }
      sum.dispose()
    } else if (settings.what === 'decode') {
      const prompts = inputs.decode_prompts.slice(0, settings.batch)
      let generated = 0
      times = await timed(
        async () => {
          const sequences = await generate(model, { inputIds: prompts, maxNewTokens: settings.newTokens, stopTokenIds: [], seed: 0 })
          generated = sequences.reduce((total, sequence) => total + sequence.tokenIds.length, 0)
        },
        settings.warmup,
        settings.repetitions,
      )
      extra = { batch: prompts.length, tokensPerSecond: generated / median(times) }
    } else {
      ;({ times, extra } = await measureLoraStep(model, inputs, settings))
    }
    return { ...base, ...extra, seconds: median(times), times, peakRssBytes: peakResidentBytes(), tensorsStable: tf.memory().numTensors === before }
  } finally {
    model.dispose()
  }
}

/**
 * LoRA r=16 (alpha 32) on `q_proj` and `v_proj`, then AdamW steps on the `[4, 128]` batch as the trainer takes them:
 * `sequenceLogprobs` over the response (the last 64 tokens), loss −mean(advantage · Σ log p), `computeGradients`
 * over the adapters, `optimizer.step`. `lora-recompute`: the same with `recomputeLayers` (activations recomputed
 * in the backward pass, the trainer's `recomputeLayers` option).
 */
async function measureLoraStep(
  model: CausalLanguageModel,
  inputs: ScaleInputs,
  settings: ScaleMeasureSettings,
): Promise<{ times: number[]; extra: Partial<ScaleMeasurement> }> {
  const adapters = applyLora(model, { rank: 16, alpha: 32, targetModules: ['q_proj', 'v_proj'] })
  const parameters = model.trainableParameters()
  const optimizer = createAdamW(parameters, { learningRate: 1e-4, weightDecay: 0 })
  const promptLength = inputs.train_ids[0]!.length - inputs.response_length
  const sequences = {
    promptIds: inputs.train_ids.map((row) => Int32Array.from(row.slice(0, promptLength))),
    responseIds: inputs.train_ids.map((row) => Int32Array.from(row.slice(promptLength))),
  }
  const losses: number[] = []
  try {
    const times = await timed(
      async () => {
        const { loss, gradients } = computeGradients(
          () =>
            tf.tidy(() => {
              const { logprobs } = sequenceLogprobs(model, sequences, { training: true, recomputeLayers: settings.what === 'lora-recompute' })
              const advantages = tf.tensor1d(inputs.advantages)
              return tf.neg(tf.mean(tf.mul(advantages, tf.sum(logprobs, 1)))) as tf.Scalar
            }),
          parameters,
        )
        optimizer.step(gradients)
        losses.push((await loss.data())[0]!)
        tf.dispose([loss, ...gradients.values()])
      },
      settings.warmup,
      settings.repetitions,
    )
    let trainable = 0
    for (const variable of parameters.values()) trainable += variable.size
    return { times, extra: { initialLoss: losses[0]!, trainable } }
  } finally {
    optimizer.dispose()
    adapters.remove()
  }
}

/**
 * Writes a checkpoint of `shape` with Ludic's own random weights (bf16, shards of at most 400 MB) and the inputs,
 * for when the peer cannot build one. Same files as `peers/scale.py build`.
 */
export async function buildScaleCheckpoint(directory: string, shape: ScaleShape, seed: number): Promise<{ built: true; parameters: number }> {
  await initTensors({ verbose: false })
  const model = createModel({ ...shape, model_type: 'qwen3' } as Parameters<typeof createModel>[0], { seed })
  try {
    await saveModel(model, directory, { dtype: 'bfloat16', maxShardBytes: 400_000_000 })
    const vocab = model.config.vocabSize
    const rows = (count: number, columns: number, rowSeed: number) => tokenBatch(count, columns, vocab, rowSeed).map((row) => [...row])
    const inputs: ScaleInputs = {
      prompt: rows(1, 128, seed + 1)[0]!,
      decode_prompts: rows(8, 8, seed + 2),
      train_ids: rows(4, 128, seed + 3),
      response_length: 64,
      advantages: [1, -0.5, 0.25, -1],
    }
    await writeFile(join(directory, 'inputs.json'), JSON.stringify(inputs))
    return { built: true, parameters: model.numParameters }
  } finally {
    model.dispose()
  }
}
