import { join } from 'node:path'
import { applyLora, createLocalPolicy, loadLoraAdapter, loadModel, saveLoraAdapter } from '@ludic/model'
import { loadTokenizer } from '@ludic/tokenizer'
import * as tf from '@tensorflow/tfjs-core'
import { describe, expect, it } from 'vitest'
import { runCli } from '../cli.js'
import { exitCodes } from '../errors.js'
import { serve } from './serve.js'
import { captureIo, saveTinyModel, useBackendAndDirectory } from '../test/support.js'

const temporaryDirectory = useBackendAndDirectory('ludic-cli-serve-lora-')

/** Saves a LoRA adapter of the model in `directory` with B drawn at random (so it changes the outputs), seeded. */
async function saveAdapter(modelDirectory: string, directory: string, seed: number): Promise<void> {
  const model = await loadModel(modelDirectory)
  try {
    const adapters = applyLora(model, { rank: 4, alpha: 8, seed })
    for (const [name, variable] of adapters.parameters()) {
      if (name.endsWith('lora_B.weight')) tf.tidy(() => variable.assign(tf.randomNormal(variable.shape, 0, 0.5, 'float32', seed)))
    }
    await saveLoraAdapter(adapters, directory)
  } finally {
    model.dispose()
  }
}

/** What a local policy over the model (with the adapter at `adapter`, if given) answers, for comparison. */
async function localAnswer(modelDirectory: string, adapter: string | undefined, content: string) {
  const model = await loadModel(modelDirectory)
  try {
    if (adapter !== undefined) await loadLoraAdapter(model, adapter)
    const policy = createLocalPolicy({ model, tokenizer: await loadTokenizer(modelDirectory) })
    const [completion] = await policy.generate([{ messages: [{ role: 'user', content }], maxTokens: 6, seed: 3 }])
    return { text: completion!.text, tokenIds: Array.from(completion!.tokenIds) }
  } finally {
    model.dispose()
  }
}

describe('ludic serve --enable-lora', () => {
  it("loads PEFT adapters written by saveLoraAdapter through vLLM's API, serves each as the model would, swaps back to the base", async () => {
    const directory = await saveTinyModel(join(temporaryDirectory(), 'tiny'))
    const first = join(temporaryDirectory(), 'adapters', 'step-1')
    const second = join(temporaryDirectory(), 'adapters', 'step-2')
    await saveAdapter(directory, first, 1)
    await saveAdapter(directory, second, 2)
    const expected = {
      base: await localAnswer(directory, undefined, 'hello there'),
      first: await localAnswer(directory, first, 'hello there'),
      second: await localAnswer(directory, second, 'hello there'),
    }
    expect(expected.first.tokenIds).not.toEqual(expected.base.tokenIds) // the adapters change the model

    const tensors = tf.memory().numTensors
    const running = await serve(directory, { port: 0, modelId: 'tiny', enableLora: true, maxLoras: 2 })
    const url = running.server.url
    const post = (path: string, body: unknown) =>
      fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
    const ask = async (model: string) => {
      const response = await post('/chat/completions', {
        model,
        messages: [{ role: 'user', content: 'hello there' }],
        max_tokens: 6,
        seed: 3,
        return_token_ids: true,
      })
      expect(response.status).toBe(200)
      const answer = (await response.json()) as { choices: { message: { content: string }; token_ids: number[] }[] }
      return { text: answer.choices[0]!.message.content, tokenIds: answer.choices[0]!.token_ids }
    }
    try {
      expect((await post('/load_lora_adapter', { lora_name: 'step-1', lora_path: first })).status).toBe(200)
      expect((await post('/load_lora_adapter', { lora_name: 'step-2', lora_path: second })).status).toBe(200)
      // Concurrent requests to the base and both adapters: each answered with its own weights.
      const [base, one, two] = await Promise.all([ask('tiny'), ask('step-1'), ask('step-2')])
      expect(base).toEqual(expected.base)
      expect(one).toEqual(expected.first)
      expect(two).toEqual(expected.second)
      expect(await ask('step-1')).toEqual(expected.first)
      expect(await ask('tiny')).toEqual(expected.base)

      const full = await post('/load_lora_adapter', { lora_name: 'step-3', lora_path: first })
      expect(full.status).toBe(400) // maxLoras 2
      expect((await post('/unload_lora_adapter', { lora_name: 'step-1' })).status).toBe(200)
      const missing = await post('/load_lora_adapter', { lora_name: 'step-3', lora_path: join(temporaryDirectory(), 'adapters', 'none') })
      expect(missing.status).toBe(404)
      expect((await post('/chat/completions', { model: 'step-1', messages: [{ role: 'user', content: 'x' }] })).status).toBe(404)
      expect(await ask('step-2')).toEqual(expected.second)
      for (let wait = 0; wait < 100 && running.lora!.count > 1; wait++) await new Promise((resolve) => setTimeout(resolve, 10))
      expect(running.lora!.count).toBe(1)
    } finally {
      await running.close()
    }
    expect(tf.memory().numTensors).toBe(tensors) // adapters and model freed
  })

  it('takes --enable-lora and --max-loras on the command line', async () => {
    const directory = await saveTinyModel(join(temporaryDirectory(), 'tiny-cli'))
    const adapter = join(temporaryDirectory(), 'adapters-cli', 'a')
    await saveAdapter(directory, adapter, 3)
    const { io, controller } = captureIo()
    let listening: (url: string) => void = () => {}
    const url = new Promise<string>((resolve) => {
      listening = resolve
    })
    io.onListening = (address) => listening(address)
    const exit = runCli(['serve', directory, '--port', '0', '--model-id', 'tiny', '--enable-lora', '--max-loras', '1'], io)
    const post = async (name: string) =>
      (
        await fetch(`${await url}/load_lora_adapter`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ lora_name: name, lora_path: adapter }),
        })
      ).status
    expect(await post('a')).toBe(200)
    expect(await post('b')).toBe(400) // --max-loras 1
    controller.abort()
    expect(await exit).toBe(exitCodes.interrupted)
  })
})
