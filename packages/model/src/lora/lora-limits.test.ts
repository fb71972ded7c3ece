import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError, ParseError } from '@ludic/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { CausalLanguageModel } from '../model/causal-language-model.js'
import { createModel } from '../model/create-model.js'
import { initTestBackend } from '../test/init-test-backend.js'
import { tensorAllocations } from '../test/tensor-allocations.js'
import { applyLora } from './apply-lora.js'
import { loadLoraAdapter, saveLoraAdapter } from './lora-adapter-files.js'

beforeAll(initTestBackend)
let directory: string
beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'ludic-lora-limits-'))
})
afterAll(() => rm(directory, { recursive: true, force: true, maxRetries: 5 }))

const ids = [[3, 1, 4, 1, 5, 9]]

function base(): CausalLanguageModel {
  return createModel('tiny', { vocabSize: 40, seed: 7, overrides: { hiddenSize: 32, intermediateSize: 48, numKeyValueHeads: 2, initializerRange: 0.2 } })
}

/** What a failed applyLora or loadLoraAdapter must leave as it was. */
function snapshot(model: CausalLanguageModel) {
  return {
    parameters: [...model.parameters().keys()],
    trainable: [...model.trainableParameters().keys()],
    adapters: [...model.linearAdapters().keys()],
    numTensors: tf.memory().numTensors,
  }
}

describe('LoRA limits and all-or-nothing', () => {
  it('refuses a rank past min(in, out) of a targeted layer before allocating, leaving the base as it was', async () => {
    const model = base()
    model.freeze('model.embed_tokens.weight') // frozen by the user: must stay so, and the rest trainable
    const before = snapshot(model)
    for (const rank of [3e6, 1e9]) {
      const { allocations, error } = await tensorAllocations(() => applyLora(model, { rank }))
      expect(InvalidArgumentError.isInstance(error)).toBe(true)
      expect((error as Error).message).toMatch(/options\.rank.*at most 16.*model\.layers\.0\.self_attn\.v_proj \(in 32, out 16\)/)
      expect(allocations).toBe(0) // refused before the first adapter's A (rank × 32 floats) was made
      expect(snapshot(model)).toEqual(before)
    }
    const adapters = applyLora(model, { rank: 16 }) // the largest that fits is fine
    adapters.remove()
    expect(snapshot(model)).toEqual(before)
    model.dispose()
  })

  it('refuses adapters whose parameters would exceed maxParameterBytes, counting the model', () => {
    const model = base()
    const before = snapshot(model)
    const modelBytes = 4 * model.numParameters
    expect(() => applyLora(model, { rank: 8, targetModules: 'all-linear', maxParameterBytes: modelBytes + 1000 })).toThrow(
      /options\.rank.*the adapters add \d+ parameters .* more than maxParameterBytes/,
    )
    expect(snapshot(model)).toEqual(before)
    applyLora(model, { rank: 1, targetModules: ['q_proj'], maxParameterBytes: modelBytes + 1000 }).remove()
    model.dispose()
  })

  it('applyLora is all-or-nothing: a failure while allocating detaches, frees and unfreezes everything it did', () => {
    const model = base()
    const before = snapshot(model)
    const addParameter = model.addParameter.bind(model)
    let calls = 0
    model.addParameter = (...args: Parameters<CausalLanguageModel['addParameter']>) => {
      if (++calls === 3) throw new Error('out of memory')
      return addParameter(...args)
    }
    expect(() => applyLora(model, { rank: 4 })).toThrow('out of memory')
    expect(snapshot(model)).toEqual(before)
    model.dispose()
  })

  it('loadLoraAdapter is all-or-nothing: a truncated or missing weights file leaves the model as it was, and a good folder then loads', async () => {
    const model = base()
    const adapters = applyLora(model, { rank: 4, targetModules: ['q_proj', 'down_proj'], seed: 2 })
    for (const [name, variable] of adapters.parameters())
      if (name.includes('lora_B')) tf.tidy(() => variable.assign(tf.randomNormal(variable.shape, 0, 0.3, 'float32', 5)))
    const adapted = model.forward(ids)
    const good = join(directory, 'good')
    await saveLoraAdapter(adapters, good)
    adapters.remove()
    const before = snapshot(model)

    const truncated = join(directory, 'truncated')
    const missing = join(directory, 'missing')
    for (const folder of [truncated, missing]) {
      await mkdir(folder, { recursive: true })
      await copyFile(join(good, 'adapter_config.json'), join(folder, 'adapter_config.json'))
    }
    const weights = await readFile(join(good, 'adapter_model.safetensors'))
    await writeFile(join(truncated, 'adapter_model.safetensors'), weights.subarray(0, weights.length - 100))
    await expect(loadLoraAdapter(model, truncated)).rejects.toThrow(ParseError)
    expect(snapshot(model)).toEqual(before)
    await expect(loadLoraAdapter(model, missing)).rejects.toThrow(/'directory'.*holds no readable adapter_model\.safetensors/)
    expect(snapshot(model)).toEqual(before)

    const loaded = await loadLoraAdapter(model, good)
    const reloaded = model.forward(ids)
    expect(tf.tidy(() => tf.max(tf.abs(tf.sub(reloaded, adapted))).dataSync()[0])).toBe(0)
    loaded.remove()
    expect(snapshot(model).trainable).toEqual(before.trainable)
    tf.dispose([adapted, reloaded])
    model.dispose()
  })
})

describe('target_modules read from adapter_config.json is outside input', () => {
  /** A folder with a valid adapter_config.json but for `target_modules` (no weights: the config is refused first). */
  async function adapterFolder(name: string, targetModules: unknown): Promise<string> {
    const folder = join(directory, name)
    await mkdir(folder, { recursive: true })
    await writeFile(join(folder, 'adapter_config.json'), JSON.stringify({ peft_type: 'LORA', r: 2, lora_alpha: 4, target_modules: targetModules }))
    return folder
  }

  it.each([
    ['(.+)+X', /exponentially/], // blocked the event loop for 2 min 13 s
    [`${'.*'.repeat(10)}X`, /polynomially: up to .* ways to try a match on a text of 31 characters/],
    ['(q_proj', /is not a regular expression/], // was a raw SyntaxError
  ])('refuses %s before matching, as a ParseError naming target_modules, leaving the model as it was', async (pattern, reason) => {
    const model = base()
    const before = snapshot(model)
    const folder = await adapterFolder(`pattern-${before.numTensors}-${pattern.length}`, pattern)
    const error = await loadLoraAdapter(model, folder).catch((caught: unknown) => caught)
    expect(ParseError.isInstance(error)).toBe(true)
    expect((error as ParseError).path).toEqual(['target_modules'])
    expect((error as Error).message).toContain(`at target_modules: ${JSON.stringify(pattern)}`)
    expect((error as Error).message).toMatch(reason)
    expect(snapshot(model)).toEqual(before)
    model.dispose()
  })

  it('still reads the full-match patterns real adapters carry (PEFT, LLaMA-Factory)', async () => {
    const model = base()
    const folder = await adapterFolder('llama-factory', '^(?!.*visual).*(?:q_proj|k_proj|v_proj).*')
    // The config is accepted: the load goes on to the (missing) weights.
    await expect(loadLoraAdapter(model, folder)).rejects.toThrow(/adapter_model\.safetensors/)
    model.dispose()
  })
})
