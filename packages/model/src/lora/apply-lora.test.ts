import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as tf from '@tensorflow/tfjs-core'
import { openSafetensors } from '@ludic/tensors'
import { expectNoLeaks } from '@ludic/tensors/test'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createModel } from '../model/create-model.js'
import type { CausalLanguageModel } from '../model/causal-language-model.js'
import { sequenceLogprobs } from '../sequence-logprobs.js'
import { initTestBackend } from '../test/init-test-backend.js'
import { applyLora, attachedLoraAdapters, attachLora, type LoraOptions } from './apply-lora.js'
import { encodeLoraAdapter, loadLoraAdapter, saveLoraAdapter } from './lora-adapter-files.js'

beforeAll(initTestBackend)
let directory: string
beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'ludic-lora-'))
})
afterAll(() => rm(directory, { recursive: true, force: true, maxRetries: 5 }))

const ids = [
  [3, 1, 4, 1, 5, 9],
  [2, 6, 5, 3, 5, 8],
]

function base(): CausalLanguageModel {
  return createModel('tiny', { vocabSize: 40, seed: 7, overrides: { hiddenSize: 32, intermediateSize: 48, numKeyValueHeads: 2, initializerRange: 0.2 } })
}

function maxDifference(a: tf.Tensor, b: tf.Tensor): number {
  return tf.tidy(() => tf.max(tf.abs(tf.sub(a, b))).dataSync()[0]!)
}

function randomizeB(adapters: ReturnType<typeof applyLora>, seed: number): void {
  for (const [name, variable] of adapters.parameters()) {
    if (name.includes('lora_B')) tf.tidy(() => variable.assign(tf.randomNormal(variable.shape, 0, 0.3, 'float32', seed++)))
  }
}

describe('applyLora', () => {
  it('with B zero the adapted model equals the base model; only the adapters are trainable', () => {
    const model = base()
    const before = model.forward(ids)
    const adapters = applyLora(model, { rank: 4, alpha: 8, seed: 1 })
    expect(adapters.layers).toEqual([
      'model.layers.0.self_attn.q_proj',
      'model.layers.0.self_attn.v_proj',
      'model.layers.1.self_attn.q_proj',
      'model.layers.1.self_attn.v_proj',
    ])
    expect(model.parameter('model.layers.0.self_attn.q_proj.lora_A.weight').shape).toEqual([4, 32])
    expect(model.parameter('model.layers.0.self_attn.v_proj.lora_B.weight').shape).toEqual([16, 4])
    expect([...model.trainableParameters().keys()]).toEqual([...adapters.parameters().keys()])
    const after = model.forward(ids)
    expect(maxDifference(after, before)).toBe(0)
    tf.dispose([before, after])
    model.dispose()
  })

  it('merge gives the unmerged outputs at base speed; unmerge restores the base weights; remove detaches', () => {
    const model = base()
    const original = model.parameter('model.layers.1.mlp.up_proj.weight').dataSync().slice()
    const baseLogits = model.forward(ids)
    const adapters = applyLora(model, { rank: 2, alpha: 4, targetModules: 'all-linear', seed: 2 })
    expect(adapters.layers).toHaveLength(14)
    randomizeB(adapters, 3)
    const adapted = model.forward(ids)
    expect(maxDifference(adapted, baseLogits)).toBeGreaterThan(1e-3)
    adapters.merge()
    expect(adapters.merged).toBe(true)
    const merged = model.forward(ids)
    expect(maxDifference(merged, adapted)).toBeLessThan(1e-4)
    adapters.unmerge()
    const restored = model.parameter('model.layers.1.mlp.up_proj.weight').dataSync()
    restored.forEach((value, index) => expect(Math.abs(value - original[index]!)).toBeLessThan(1e-6))
    adapters.remove()
    expect(model.parameters().size).toBe(1 + 2 * 9 + 1)
    expect(model.trainableParameters().size).toBe(model.parameters().size)
    const removed = model.forward(ids)
    expect(maxDifference(removed, baseLogits)).toBeLessThan(1e-5)
    tf.dispose([baseLogits, adapted, merged, removed])
    model.dispose()
  })

  it('trains the adapters only, with dropout in training mode, without leaking', async () => {
    const model = base()
    const frozen = model.parameter('model.layers.0.self_attn.q_proj.weight').dataSync().slice()
    const adapters = applyLora(model, { rank: 4, alpha: 16, dropout: 0.1, seed: 3 })
    const optimizer = tf.train.adam(1e-2)
    const loss = () =>
      tf.tidy(() => tf.neg(tf.mean(sequenceLogprobs(model, { promptIds: [[3, 1]], responseIds: [[4, 1, 5, 9]] }, { training: true }).logprobs))) as tf.Scalar
    const step = () => optimizer.minimize(loss, true, [...model.trainableParameters().values()])
    const first = step()!
    for (let index = 0; index < 30; index++) tf.dispose(step() ?? [])
    const last = step()!
    expect(last.dataSync()[0]).toBeLessThan(first.dataSync()[0]!)
    expect(Array.from(model.parameter('model.layers.0.self_attn.q_proj.weight').dataSync())).toEqual(Array.from(frozen))
    await expectNoLeaks(step, { label: 'a LoRA training step' })
    const training = [model.forward(ids, { training: true }), model.forward(ids, { training: true })]
    expect(maxDifference(training[0]!, training[1]!)).toBeGreaterThan(0)
    tf.dispose([first, last, ...training])
    optimizer.dispose()
    adapters.remove()
    model.dispose()
  })

  it("saves and loads adapters in PEFT's layout", async () => {
    const model = base()
    const adapters = applyLora(model, { rank: 4, alpha: 8, targetModules: ['q_proj', 'k_proj', 'down_proj'], seed: 4 })
    randomizeB(adapters, 9)
    const adapted = model.forward(ids)
    const path = join(directory, 'adapter')
    await saveLoraAdapter(adapters, path)
    const config = JSON.parse(await readFile(join(path, 'adapter_config.json'), 'utf8')) as Record<string, unknown>
    expect(config).toMatchObject({
      peft_type: 'LORA',
      r: 4,
      lora_alpha: 8,
      target_modules: ['q_proj', 'k_proj', 'down_proj'],
      bias: 'none',
      task_type: 'CAUSAL_LM',
    })
    const file = await openSafetensors(join(path, 'adapter_model.safetensors'))
    expect(file.names).toContain('base_model.model.model.layers.1.mlp.down_proj.lora_B.weight')
    expect(file.info('base_model.model.model.layers.0.self_attn.k_proj.lora_A.weight').shape).toEqual([4, 32])
    await file.close()
    // The same two files encoded in memory, byte for byte (the weights read synchronously).
    const encoded = encodeLoraAdapter(adapters, { baseModel: 'base' })
    const named = join(directory, 'adapter-named')
    await saveLoraAdapter(adapters, named, { baseModel: 'base' })
    expect(Buffer.from(encoded['adapter_model.safetensors']).equals(await readFile(join(named, 'adapter_model.safetensors')))).toBe(true)
    expect(encoded['adapter_config.json']).toBe(await readFile(join(named, 'adapter_config.json'), 'utf8'))
    expect(JSON.parse(encoded['adapter_config.json'])).toMatchObject({ base_model_name_or_path: 'base', r: 4 })
    expect(() => encodeLoraAdapter(adapters, { baseModel: '' })).toThrow(/options\.baseModel/)
    adapters.remove()

    const loaded = await loadLoraAdapter(model, path)
    expect(loaded.layers).toEqual(adapters.layers)
    const reloaded = model.forward(ids)
    expect(maxDifference(reloaded, adapted)).toBe(0)
    loaded.remove()
    const wider = createModel('tiny', { vocabSize: 40, seed: 7, overrides: { numHiddenLayers: 2 } })
    await expect(loadLoraAdapter(wider, path)).rejects.toThrow(
      /misshaped 12: base_model\.model\.model\.layers\.0\.self_attn\.q_proj\.lora_A\.weight is \[4, 32\], expected \[4, 128\]/,
    )
    expect(wider.parameters().size).toBe(1 + 2 * 9 + 1) // the failed load removed its adapters
    wider.dispose()
    tf.dispose([adapted, reloaded])
    model.dispose()
  })

  it("adapts GPT-2's Conv1D layers ([in, out] weights): c_attn by default, merged and unmerged alike", () => {
    const model = createModel({ model_type: 'gpt2', vocab_size: 40, n_embd: 32, n_layer: 2, n_head: 4, n_positions: 16, initializer_range: 0.2 }, { seed: 5 })
    expect(model.linearNames()).toEqual([
      'transformer.h.0.attn.c_attn',
      'transformer.h.0.attn.c_proj',
      'transformer.h.0.mlp.c_fc',
      'transformer.h.0.mlp.c_proj',
      'transformer.h.1.attn.c_attn',
      'transformer.h.1.attn.c_proj',
      'transformer.h.1.mlp.c_fc',
      'transformer.h.1.mlp.c_proj',
    ])
    const defaults = applyLora(model, { rank: 2 })
    expect(defaults.layers).toEqual(['transformer.h.0.attn.c_attn', 'transformer.h.1.attn.c_attn'])
    expect(model.parameter('transformer.h.0.attn.c_attn.lora_A.weight').shape).toEqual([2, 32])
    expect(model.parameter('transformer.h.0.attn.c_attn.lora_B.weight').shape).toEqual([96, 2])
    defaults.remove()
    const adapters = applyLora(model, { rank: 2, alpha: 4, targetModules: 'all-linear', seed: 6 })
    randomizeB(adapters, 12)
    const unmerged = model.forward(ids)
    adapters.merge()
    const merged = model.forward(ids)
    expect(maxDifference(merged, unmerged)).toBeLessThan(1e-4)
    tf.dispose([unmerged, merged])
    model.dispose()
  })

  it('matches targetModules as PEFT (module-name suffixes) through the ParameterNamePattern rule', async () => {
    const model = base()
    const layersOf = (targetModules: LoraOptions['targetModules']) => {
      const adapters = applyLora(model, { targetModules })
      adapters.remove()
      return adapters.layers
    }
    const qAndDown = ['model.layers.0.self_attn.q_proj', 'model.layers.0.mlp.down_proj', 'model.layers.1.self_attn.q_proj', 'model.layers.1.mlp.down_proj']
    expect(layersOf(['self_attn.q_proj', 'down_proj'])).toEqual(qAndDown)
    expect(layersOf(['*_proj'])).toEqual(model.linearNames()) // globs work in module names
    expect(() => layersOf(['proj'])).toThrow(/options\.targetModules.*matches no linear layer/) // whole segments, never a substring
    expect(layersOf(/q_proj|down/)).toEqual(qAndDown) // a RegExp searches the name, as everywhere
    expect(layersOf(/^model\.layers\.1\.self_attn\.q_proj$/)).toEqual(['model.layers.1.self_attn.q_proj'])

    // PEFT reads a string target_modules with re.fullmatch: a searching RegExp is written so that it still searches.
    const path = join(directory, 'adapter-pattern')
    const adapters = applyLora(model, { targetModules: /q_proj|down/ })
    await saveLoraAdapter(adapters, path)
    const written = JSON.parse(await readFile(join(path, 'adapter_config.json'), 'utf8')) as { target_modules: unknown }
    expect(written.target_modules).toBe('.*(?:q_proj|down).*')
    adapters.remove()
    const loaded = await loadLoraAdapter(model, path)
    expect(loaded.layers).toEqual(qAndDown)
    expect(loaded.config.targetModules).toEqual(/^(?:.*(?:q_proj|down).*)$/)
    await saveLoraAdapter(loaded, path) // a pattern read from a file is written back as it was
    expect((JSON.parse(await readFile(join(path, 'adapter_config.json'), 'utf8')) as { target_modules: unknown }).target_modules).toBe('.*(?:q_proj|down).*')
    loaded.remove()
    model.dispose()
  })

  it('lists the adapters attached to a model with their plans, so a copy of the base gets the same adapters', () => {
    const model = base()
    expect(attachedLoraAdapters(model)).toEqual([])
    const adapters = applyLora(model, { rank: 2, alpha: 6 })
    for (const [name, variable] of adapters.parameters()) if (name.endsWith('lora_B.weight')) variable.assign(tf.fill(variable.shape, 0.05))
    const [attached] = attachedLoraAdapters(model)
    expect(attached!.adapters).toBe(adapters)
    expect(attached!.plan.scale).toBe(3)
    const copy = createModel('tiny', {
      vocabSize: 40,
      seed: 7,
      overrides: { hiddenSize: 32, intermediateSize: 48, numKeyValueHeads: 2, initializerRange: 0.2 },
    })
    attachLora(copy, attached!.plan, new Map([...adapters.parameters()].map(([name, variable]) => [name, variable.dataSync() as Float32Array])))
    expect([...copy.linearAdapters().keys()]).toEqual([...model.linearAdapters().keys()])
    const logits = (of: CausalLanguageModel) => tf.tidy(() => Array.from(of.forward(ids).dataSync()))
    expect(logits(copy)).toEqual(logits(model))
    adapters.remove()
    expect(attachedLoraAdapters(model)).toEqual([])
    expect(attachedLoraAdapters(copy)).toHaveLength(1)
    copy.dispose()
    model.dispose()
  })

  it("names the model's modules when targetModules matches none", () => {
    const model = base()
    expect(() => applyLora(model, { targetModules: ['query'] })).toThrow(
      /options\.targetModules.*the model's are q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj/,
    )
    expect(() => applyLora(model, { targetModules: /^query$/ })).toThrow("Invalid argument 'options.targetModules' (value: /^query$/): matches no linear layer") // was `value: {}`
    model.dispose()
  })
})
