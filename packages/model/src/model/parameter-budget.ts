import * as tf from '@tensorflow/tfjs-core'
import { currentRuntime } from '@ludic/tensors'
import type { ModelConfig } from '../config/model-config.js'
import { platform } from '../platform.js'
import { architectureOf, type ParameterSpec } from './architecture.js'

/** The WebAssembly backend's heap ends at 4 GiB; parameters may take 3 of it, leaving 1 for activations and caches. */
const wasmParameterBytes = 3 * 2 ** 30

/**
 * The default budget in a browser, which does not tell a page the machine's memory: 1 GiB (268 million float32
 * parameters, far more than a tab trains). `maxParameterBytes` overrides it.
 */
export const browserParameterBytes = 2 ** 30

/**
 * The default budget for a model's parameters (float32, 4 bytes each): half of the machine's memory
 * (`os.totalmem() / 2`) in Node, `browserParameterBytes` (1 GiB) in a browser, and at most 3 GiB on the
 * WebAssembly backend (its heap holds 4 GiB in all). `createModel`, `loadModel`, `loadModelFromFiles` and
 * `applyLora` refuse what would exceed it before allocating anything; their `maxParameterBytes` option overrides it.
 */
export function defaultMaxParameterBytes(): number {
  const totalMemoryBytes = platform().totalMemoryBytes
  const half = totalMemoryBytes === undefined ? browserParameterBytes : Math.floor(totalMemoryBytes() / 2)
  const backend = currentRuntime()?.tfBackend ?? (tf.engine().backendName as string | null | undefined)
  return backend === 'wasm' ? Math.min(half, wasmParameterBytes) : half
}

/** The sizes of a configuration that set its parameter count (`ModelConfig` names). */
export type SizeField = 'vocabSize' | 'hiddenSize' | 'intermediateSize' | 'numHiddenLayers' | 'maxPositionEmbeddings'

/** A configuration's parameter count, in parts, computed without listing the parameters (see `parameterSpecs`). */
export interface ParameterCount {
  /** Token embedding, and the output projection when untied. */
  embeddings: number
  /** GPT-2's learned positions (0 otherwise). */
  positions: number
  /** One transformer block. */
  perLayer: number
  /** `perLayer · numHiddenLayers` plus the final norm. */
  layers: number
  total: number
}

/** Counts a configuration's parameters by formula: the same total as summing `parameterSpecs(config)`, for any size. */
export function countParameters(config: ModelConfig): ParameterCount {
  const definition = architectureOf(config)
  const { vocabSize, hiddenSize, numHiddenLayers } = config
  const size = (spec: ParameterSpec) => spec.shape.reduce((product, width) => product * width, 1)
  const embeddings = vocabSize * hiddenSize * (definition.head === undefined ? 1 : 2)
  const positions = definition.positionEmbedding === undefined ? 0 : config.maxPositionEmbeddings * hiddenSize
  // One block's parameters (every block has the same shapes), then the final norm (a weight, and a bias for LayerNorm).
  const perLayer = definition.layer(0).parameters.reduce((total, spec) => total + size(spec), 0)
  const finalNorm = definition.finalNorm.width * (definition.finalNorm.bias ? 2 : 1)
  const layers = perLayer * numHiddenLayers + finalNorm
  return { embeddings, positions, perLayer, layers, total: embeddings + positions + layers }
}

/** A count in words: exact below a million, three digits above (`212992`, `2.13e+12`). */
function formatCount(count: number): string {
  return count < 1e6 ? String(count) : count.toPrecision(3)
}

/** `bytes` in words: `"1.9 TB"`, `"512 MB"`. */
export function formatBytes(bytes: number): string {
  const units = ['bytes', 'kB', 'MB', 'GB', 'TB', 'PB', 'EB']
  let value = bytes
  let unit = 0
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000
    unit++
  }
  return unit === 0 ? `${value} bytes` : `${value.toPrecision(3)} ${units[unit]}`
}

/**
 * Checks that a configuration's parameters (4 bytes each) fit `maxParameterBytes`, before anything is
 * allocated. When they do not, calls `fail` with the size field most to blame (the vocabulary for the
 * embeddings, the layer count for the stack, a width when one layer alone is too large) and a message giving
 * the sizes, the budget and how to raise it.
 */
export function checkParameterBudget(config: ModelConfig, maxParameterBytes: number, fail: (field: SizeField, message: string) => never): void {
  const count = countParameters(config)
  const bytes = 4 * count.total
  if (bytes <= maxParameterBytes) return
  const parts: [SizeField, number][] = [
    [config.vocabSize >= config.hiddenSize ? 'vocabSize' : 'hiddenSize', count.embeddings],
    [config.maxPositionEmbeddings >= config.hiddenSize ? 'maxPositionEmbeddings' : 'hiddenSize', count.positions],
    [
      4 * count.perLayer > maxParameterBytes ? (config.intermediateSize > config.hiddenSize ? 'intermediateSize' : 'hiddenSize') : 'numHiddenLayers',
      count.layers,
    ],
  ]
  const [field] = parts.reduce((largest, part) => (part[1] > largest[1] ? part : largest))
  fail(
    field,
    `the configuration implies ${formatCount(count.total)} parameters, ${formatBytes(bytes)} as float32 ` +
      `(embeddings: vocabulary ${config.vocabSize} × hidden ${config.hiddenSize}${config.tieWordEmbeddings ? '' : ' × 2, untied'}; ` +
      `${config.numHiddenLayers} layers of ${formatCount(count.perLayer)}` +
      `${count.positions > 0 ? `; ${config.maxPositionEmbeddings} learned positions` : ''}), ` +
      `more than maxParameterBytes (${formatBytes(maxParameterBytes)}; by default half of the machine's memory, at most 3 GiB on WebAssembly): ` +
      'pass a larger maxParameterBytes if it does fit',
  )
}
