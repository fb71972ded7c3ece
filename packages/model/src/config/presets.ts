import type { ModelConfig } from './model-config.js'

/** Sizes of the built-in presets (Llama architecture, tied embeddings, multi-head attention). */
export const presetNames = ['tiny', 'small', 'base'] as const
export type PresetName = (typeof presetNames)[number]

const presetSizes: Readonly<Record<PresetName, { hiddenSize: number; numHiddenLayers: number; numAttentionHeads: number }>> = {
  tiny: { hiddenSize: 128, numHiddenLayers: 2, numAttentionHeads: 4 },
  small: { hiddenSize: 256, numHiddenLayers: 4, numAttentionHeads: 4 },
  base: { hiddenSize: 512, numHiddenLayers: 8, numAttentionHeads: 8 },
}

/**
 * The configuration of a preset: a Llama (SmolLM-style) decoder with `hiddenSize` d, an MLP of width 3d,
 * RoPE θ = 10 000, RMSNorm ε = 1e-5, tied input and output embeddings, 2048 positions.
 *
 * | preset | d | layers | heads | head dim |
 * |---|---|---|---|---|
 * | `tiny` | 128 | 2 | 4 | 32 |
 * | `small` | 256 | 4 | 4 | 64 |
 * | `base` | 512 | 8 | 8 | 64 |
 */
export function presetConfig(name: PresetName, vocabSize: number): ModelConfig {
  const { hiddenSize, numHiddenLayers, numAttentionHeads } = presetSizes[name]
  return {
    architecture: 'llama',
    vocabSize,
    hiddenSize,
    intermediateSize: 3 * hiddenSize,
    numHiddenLayers,
    numAttentionHeads,
    numKeyValueHeads: numAttentionHeads,
    headDim: hiddenSize / numAttentionHeads,
    maxPositionEmbeddings: 2048,
    rmsNormEps: 1e-5,
    ropeTheta: 10_000,
    ropeScaling: null,
    attentionBias: false,
    attentionOutputBias: false,
    mlpBias: false,
    queryKeyNorm: false,
    slidingWindow: null,
    tieWordEmbeddings: true,
    initializerRange: 0.02,
    bosTokenId: null,
    eosTokenIds: [],
    padTokenId: null,
  }
}
