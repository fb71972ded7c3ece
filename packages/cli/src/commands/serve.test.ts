import { join } from 'node:path'
import * as tf from '@tensorflow/tfjs-core'
import OpenAI from 'openai'
import { describe, expect, it } from 'vitest'
import { runCli } from '../cli.js'
import { exitCodes } from '../errors.js'
import { captureIo, saveTinyModel, useBackendAndDirectory, whileServing } from '../test/support.js'

const temporaryDirectory = useBackendAndDirectory('ludic-cli-serve-')

describe('ludic serve', () => {
  it('answers the openai SDK on loopback, plain and streaming, and stops cleanly at the signal', async () => {
    const directory = await saveTinyModel(join(temporaryDirectory(), 'tiny'))
    const tensors = tf.memory().numTensors
    const { io, controller, stdout } = captureIo()
    let listening: (url: string) => void = () => {}
    const url = new Promise<string>((resolve) => {
      listening = resolve
    })
    io.onListening = (address) => listening(address)
    const exit = runCli(['serve', directory, '--port', '0', '--model-id', 'tiny', '--max-tokens', '6', '--seed', '1'], io)
    const client = new OpenAI({ baseURL: await url, apiKey: 'not-needed', maxRetries: 0 })
    expect(stdout()).toContain(`serving tiny at ${await url}`)

    const models = await client.models.list()
    expect(models.data.map((model) => model.id)).toEqual(['tiny'])
    const answer = await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'hello there' }], max_tokens: 5, seed: 3 })
    expect(answer.choices).toHaveLength(1)
    expect(answer.usage?.completion_tokens).toBeGreaterThan(0)
    expect(answer.usage?.completion_tokens).toBeLessThanOrEqual(5)

    const stream = await client.chat.completions.create({
      model: 'tiny',
      messages: [{ role: 'user', content: 'hello there' }],
      max_tokens: 5,
      seed: 3,
      stream: true,
      stream_options: { include_usage: true },
    })
    let streamed = ''
    let chunks = 0
    let finish: string | null | undefined
    for await (const chunk of stream) {
      chunks++
      streamed += chunk.choices[0]?.delta.content ?? ''
      finish = chunk.choices[0]?.finish_reason ?? finish
    }
    expect(chunks).toBeGreaterThan(1)
    expect(streamed).toBe(answer.choices[0]!.message.content) // same seed, same text
    expect(['stop', 'length']).toContain(finish)

    controller.abort()
    expect(await exit).toBe(exitCodes.interrupted) // stopped by its signal: 130, as the exit-code table says
    expect(tf.memory().numTensors).toBe(tensors) // the model was disposed
    await expect(client.models.list()).rejects.toThrow()
  })
})

describe('ludic serve --engine', () => {
  it('answers a short request (n = 3) while a long one runs, and greedy text as without the engine', async () => {
    const directory = await saveTinyModel(join(temporaryDirectory(), 'tiny-engine'))
    const flags = ['--model-id', 'tiny', '--seed', '1']
    const client = (url: string) => new OpenAI({ baseURL: url, apiKey: 'not-needed', maxRetries: 0 })
    const greedy = { model: 'tiny', messages: [{ role: 'user' as const, content: 'hello there' }], max_tokens: 6, temperature: 0 }
    const expected = await whileServing(directory, flags, async (url) => (await client(url).chat.completions.create(greedy)).choices[0]!.message.content)

    await whileServing(directory, [...flags, '--engine', '--max-batch', '4'], async (url, stderr) => {
      const engine = client(url)
      expect(stderr()).toContain('generation engine: 4 rows')
      expect((await engine.chat.completions.create(greedy)).choices[0]!.message.content).toBe(expected)
      const finished: string[] = []
      const long = engine.completions.create({ model: 'tiny', prompt: 'a long one', max_tokens: 400, temperature: 1 }).then(() => finished.push('long'))
      const short = engine.completions.create({ model: 'tiny', prompt: 'short', max_tokens: 3, n: 3, temperature: 1 }).then((answer) => {
        finished.push('short')
        return answer
      })
      expect((await short).choices).toHaveLength(3)
      await long
      expect(finished).toEqual(['short', 'long'])
      // The engine's figures on /metrics under vLLM's names: the n = 3 samples computed their prompt once.
      const metrics = await (await fetch(`${url.replace(/\/v1$/, '')}/metrics`)).text()
      const value = (name: string) => Number(new RegExp(`^${name}\\{[^}]*\\} (\\S+)$`, 'm').exec(metrics)?.[1])
      expect(value('vllm:kv_cache_usage_perc')).toBe(0)
      expect(value('vllm:prefix_cache_hits_total')).toBeGreaterThan(0)
      expect(value('vllm:prefix_cache_queries_total')).toBeGreaterThan(value('vllm:prefix_cache_hits_total'))
      expect(value('vllm:num_requests_running')).toBe(0)
    })
  })

  it('serves a GPT-2 model: greedy text as without the engine', async () => {
    const directory = await saveTinyModel(join(temporaryDirectory(), 'tiny-gpt2'), { architecture: 'gpt2', initializerRange: 0.3 })
    const flags = ['--model-id', 'gpt2', '--seed', '1']
    const client = (url: string) => new OpenAI({ baseURL: url, apiKey: 'not-needed', maxRetries: 0 })
    const greedy = { model: 'gpt2', messages: [{ role: 'user' as const, content: 'hello there' }], max_tokens: 6, temperature: 0 }
    const expected = await whileServing(directory, flags, async (url) => (await client(url).chat.completions.create(greedy)).choices[0]!.message.content)
    await whileServing(directory, [...flags, '--engine', '--max-batch', '2'], async (url, stderr) => {
      expect(stderr()).toContain('generation engine: 2 rows')
      const answer = await client(url).chat.completions.create(greedy)
      expect(answer.usage?.completion_tokens).toBeGreaterThan(0)
      expect(answer.choices[0]!.message.content).toBe(expected)
    })
  })
})
