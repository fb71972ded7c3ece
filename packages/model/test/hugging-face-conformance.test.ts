import * as tf from '@tensorflow/tfjs-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { join } from 'node:path'
import { readSafetensorsFile } from '@ludic/tensors'
import { loadModel } from '../src/checkpoint/load-model.js'
import { generate } from '../src/generation/generate.js'
import { loadLoraAdapter } from '../src/lora/lora-adapter-files.js'
import type { CausalLanguageModel } from '../src/model/causal-language-model.js'
import { initTestBackend } from '../src/test/init-test-backend.js'
import { fixturesDirectory, loadReferences, referenceIndex, relativeError, variantNames, type VariantReferences } from './reference-fixtures.js'

beforeAll(initTestBackend)

/** Largest relative logit error per variant, printed at the end (the conformance report). */
const report: Record<string, { single: number; batch: number; cached: number }> = {}
afterAll(() => {
  console.info(`logits vs transformers ${referenceIndex.transformers} (max |Δ| / max |reference|):`)
  for (const [variant, errors] of Object.entries(report)) {
    if (variant.endsWith('(peft)'))
      console.info(`  ${variant.padEnd(22)} padded batch ${errors.batch.toExponential(2)}  merged ${errors.cached.toExponential(2)}`)
    else
      console.info(
        `  ${variant.padEnd(22)} single ${errors.single.toExponential(2)}  padded batch ${errors.batch.toExponential(2)}  cached decode ${errors.cached.toExponential(2)}`,
      )
  }
})

const tolerance = 1e-4

describe.each(variantNames)('%s matches transformers', (variant) => {
  let model: CausalLanguageModel
  let references: VariantReferences
  beforeAll(async () => {
    references = await loadReferences(variant)
    model = await loadModel(references.directory)
    report[variant] = { single: NaN, batch: NaN, cached: NaN }
  })
  afterAll(() => model.dispose())

  it('logits of one sequence', () => {
    const logits = model.forward(references.single.inputIds)
    expect(logits.shape).toEqual(references.single.logits.shape)
    const error = relativeError(logits.dataSync() as Float32Array, references.single.logits.data, model.config.vocabSize)
    logits.dispose()
    report[variant]!.single = error
    expect(error).toBeLessThan(tolerance)
  })

  it('logits of a left-padded batch with an attention mask (default and explicit positions)', () => {
    const { inputIds, attentionMask, positionIds } = references.batch
    const vocab = model.config.vocabSize
    const implicit = model.forward(inputIds, { attentionMask })
    const explicit = model.forward(inputIds, { attentionMask, positions: positionIds })
    const implicitError = relativeError(implicit.dataSync() as Float32Array, references.batch.logits.data, vocab, attentionMask)
    const explicitError = relativeError(explicit.dataSync() as Float32Array, references.batch.logits.data, vocab, attentionMask)
    tf.dispose([implicit, explicit])
    report[variant]!.batch = Math.max(implicitError, explicitError)
    expect(implicitError).toBeLessThan(tolerance)
    expect(explicitError).toBeLessThan(tolerance)
  })

  it('logits decoded token by token with the KV cache equal the reference', () => {
    const { inputIds, attentionMask } = references.batch
    const time = inputIds[0]!.length
    const vocab = model.config.vocabSize
    const cache = model.createCache()
    const prefix = 5
    const pieces: tf.Tensor[] = [
      model.forward(
        inputIds.map((row) => row.slice(0, prefix)),
        { attentionMask: attentionMask.map((row) => row.slice(0, prefix)), cache },
      ),
    ]
    for (let step = prefix; step < time; step++) {
      pieces.push(
        model.forward(
          inputIds.map((row) => row.slice(step, step + 1)),
          { attentionMask: attentionMask.map((row) => row.slice(0, step + 1)), cache },
        ),
      )
    }
    const logits = tf.concat(pieces, 1)
    const error = relativeError(logits.dataSync() as Float32Array, references.batch.logits.data, vocab, attentionMask)
    tf.dispose([...pieces, logits])
    cache.dispose()
    report[variant]!.cached = error
    expect(error).toBeLessThan(tolerance)
  })

  it('greedy continuation of the padded batch', async () => {
    const { inputIds, attentionMask } = references.batch
    const prompts = inputIds.map((row, index) => row.filter((_, position) => attentionMask[index]![position] === 1))
    const newTokens = referenceIndex.variants[variant]!.new_tokens
    const results = await generate(model, { inputIds: prompts, maxNewTokens: newTokens, temperature: 0, stopTokenIds: [] })
    results.forEach((result, index) => {
      const expected = references.greedy[index]!.slice(inputIds[0]!.length)
      expect(Array.from(result.tokenIds)).toEqual(Array.from(expected))
      expect(result.finishReason).toBe('length')
    })
  })
})

describe('a PEFT LoRA adapter (qwen2-lora) matches peft', () => {
  it('logits of the padded batch with the adapter, unmerged and merged', async () => {
    const references = await loadReferences('qwen2')
    const model = await loadModel(references.directory)
    const adapters = await loadLoraAdapter(model, join(fixturesDirectory, 'qwen2-lora'))
    expect(adapters.layers).toHaveLength(6)
    const expected = (await readSafetensorsFile(join(fixturesDirectory, 'qwen2-lora', 'references.safetensors'))).tensors.get('batch.logits')!
      .data as Float32Array
    const { inputIds, attentionMask } = references.batch
    const unmerged = model.forward(inputIds, { attentionMask })
    adapters.merge()
    const merged = model.forward(inputIds, { attentionMask })
    const errors = [unmerged, merged].map((logits) => relativeError(logits.dataSync() as Float32Array, expected, model.config.vocabSize, attentionMask))
    tf.dispose([unmerged, merged])
    model.dispose()
    report['qwen2-lora (peft)'] = { single: NaN, batch: errors[0]!, cached: errors[1]! }
    for (const error of errors) expect(error).toBeLessThan(tolerance)
  })
})
