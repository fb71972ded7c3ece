/**
 * Peak resident memory of one LoRA training step on a Qwen3-0.6B-shaped model (random weights, built from
 * the configuration): LoRA r=16 on q_proj and v_proj, loss = −mean log p(response token) over the last
 * `RESPONSE` tokens of `BATCH` × `LENGTH`-token sequences, one AdamW step. Prints one JSON line: the peak
 * resident set (VmHWM) of the whole process and of the step alone (the counter is reset before the step
 * through /proc/self/clear_refs), and tf.memory() after the step.
 *
 *   LUDIC_BACKEND=tensorflow npx tsx packages/model/scripts/lora-step-memory.ts [--entropy] [--recompute] [--chunk N] [--profile]
 *     [--layers N] [--vocab N] [--batch N] [--length N] [--response N]
 *
 * `scripts/lora-step-memory.py` is the PyTorch + PEFT peer of the same step.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import * as tf from '@tensorflow/tfjs-core'
import { initTensors, maskedMean } from '@ludic/tensors'
import { applyLora } from '../src/lora/apply-lora.js'
import { createModel } from '../src/model/create-model.js'
import { sequenceLogprobs } from '../src/sequence-logprobs.js'
import { computeGradients } from '../src/training/compute-gradients.js'
import { createAdamW } from '../src/training/adamw.js'

const argument = (name: string, fallback: number) => {
  const index = process.argv.indexOf(name)
  return index < 0 ? fallback : Number(process.argv[index + 1])
}
const withEntropy = process.argv.includes('--entropy')
const layers = argument('--layers', 28)
const vocabulary = argument('--vocab', 151_936)
const BATCH = argument('--batch', 4)
const LENGTH = argument('--length', 128)
const RESPONSE = argument('--response', 64)
const extra: Record<string, unknown> = {}
if (process.argv.includes('--chunk')) extra.logitsChunkSize = argument('--chunk', 0)
if (process.argv.includes('--recompute')) extra.recomputeLayers = true

const GiB = 2 ** 30
const status = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync('/proc/self/status', 'utf8'))![1]) * 1024
const resetPeak = () => writeFileSync('/proc/self/clear_refs', '5')

const runtime = await initTensors({ log: () => {} })
const config = {
  model_type: 'qwen3',
  vocab_size: vocabulary,
  hidden_size: 1024,
  intermediate_size: 3072,
  num_hidden_layers: layers,
  num_attention_heads: 16,
  num_key_value_heads: 8,
  head_dim: 128,
  max_position_embeddings: 40_960,
  rms_norm_eps: 1e-6,
  rope_theta: 1_000_000,
  tie_word_embeddings: true,
  hidden_act: 'silu',
}
let started = performance.now()
const model = createModel(config, { seed: 0 })
const buildSeconds = (performance.now() - started) / 1000
const lora = applyLora(model, { rank: 16, alpha: 32, targetModules: ['q_proj', 'v_proj'] })
const parameters = model.trainableParameters()
const optimizer = createAdamW(parameters, { learningRate: 1e-4 })
const afterBuild = status('VmRSS')
const buildPeak = status('VmHWM')

// Token ids from a fixed linear congruential sequence (the same as the Python peer's).
const ids: number[][] = []
let state = 12_345
for (let row = 0; row < BATCH; row++) {
  const sequence: number[] = []
  for (let column = 0; column < LENGTH; column++) {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31
    sequence.push(1 + (state % (vocabulary - 1)))
  }
  ids.push(sequence)
}
const promptIds = ids.map((sequence) => sequence.slice(0, LENGTH - RESPONSE))
const responseIds = ids.map((sequence) => sequence.slice(LENGTH - RESPONSE))

resetPeak()
const before = tf.memory().numTensors
started = performance.now()
let forwardBytes = 0
// tf.profile (--profile) adds TensorFlow.js's own peak count; it keeps a few tensors per layer itself.
const profiling = process.argv.includes('--profile')
const measure = async (work: () => tf.Tensor) => (profiling ? tf.profile(work) : { result: work(), peakBytes: Number.NaN })
const profile = await measure(() => {
  const { loss, gradients } = computeGradients(
    () =>
      tf.tidy(() => {
        const { logprobs, entropies, responseMask } = sequenceLogprobs(model, { promptIds, responseIds }, { training: true, withEntropy, ...extra })
        const nll = tf.neg(maskedMean(logprobs, responseMask)) as tf.Scalar
        const result = withEntropy ? (tf.sub(nll, tf.mul(0.01, maskedMean(entropies!, responseMask))) as tf.Scalar) : nll
        forwardBytes = tf.memory().numBytes
        return result
      }),
    parameters,
  )
  optimizer.step(gradients, { learningRate: 1e-4 })
  tf.dispose([...gradients.values()])
  return loss
})
const lossValue = (await (profile.result as tf.Tensor).data())[0]
tf.dispose(profile.result as tf.Tensor)
const stepSeconds = (performance.now() - started) / 1000
const stepPeak = status('VmHWM')
const memory = tf.memory()
console.log(
  JSON.stringify({
    backend: runtime.backend,
    layers,
    vocabulary,
    shape: [BATCH, LENGTH, RESPONSE],
    withEntropy,
    ...extra,
    loss: lossValue,
    buildSeconds: +buildSeconds.toFixed(1),
    stepSeconds: +stepSeconds.toFixed(1),
    buildPeakGiB: +(buildPeak / GiB).toFixed(2),
    rssAfterBuildGiB: +(afterBuild / GiB).toFixed(2),
    stepPeakGiB: +(stepPeak / GiB).toFixed(2),
    tensorsLeaked: memory.numTensors - before,
    tfBytesGiB: +(memory.numBytes / GiB).toFixed(2),
    tfPeakGiB: +(profile.peakBytes / GiB).toFixed(2),
    tfForwardEndGiB: +(forwardBytes / GiB).toFixed(2),
  }),
)
lora.remove()
model.dispose()
