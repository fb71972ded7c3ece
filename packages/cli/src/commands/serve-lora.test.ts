import { execFileSync } from 'node:child_process'
import { copyFile, mkdir, mkdtemp, readFile, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createLocalPolicy, loadLoraAdapter, loadModel } from '@ludic/model'
import { loadTokenizer } from '@ludic/tokenizer'
import * as tf from '@tensorflow/tfjs-core'
import { describe, expect, it } from 'vitest'
import { runCli } from '../cli.js'
import { exitCodes } from '../errors.js'
import { serve } from './serve.js'
import { captureIo, saveRandomAdapter, saveTinyModel, useBackendAndDirectory, whileServing } from '../test/support.js'

const temporaryDirectory = useBackendAndDirectory('ludic-cli-serve-lora-')

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
    await saveRandomAdapter(directory, first, 1)
    await saveRandomAdapter(directory, second, 2)
    const expected = {
      base: await localAnswer(directory, undefined, 'hello there'),
      first: await localAnswer(directory, first, 'hello there'),
      second: await localAnswer(directory, second, 'hello there'),
    }
    expect(expected.first.tokenIds).not.toEqual(expected.base.tokenIds) // the adapters change the model

    const tensors = tf.memory().numTensors
    const running = await serve(directory, { port: 0, modelId: 'tiny', enableLora: true, maxLoras: 2, loraRoots: [join(temporaryDirectory(), 'adapters')] })
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
      for (let wait = 0; wait < 3000 && running.lora!.count > 1; wait++) await new Promise((resolve) => setTimeout(resolve, 10)) // 30 s at most
      expect(running.lora!.count).toBe(1)
    } finally {
      await running.close()
    }
    expect(tf.memory().numTensors).toBe(tensors) // adapters and model freed
  })

  it('takes --enable-lora, --lora-root and --max-loras on the command line; --enable-lora alone is a usage error', async () => {
    const directory = await saveTinyModel(join(temporaryDirectory(), 'tiny-cli'))
    const adapter = join(temporaryDirectory(), 'adapters-cli', 'a')
    await saveRandomAdapter(directory, adapter, 3)
    const { io, controller } = captureIo()
    let listening: (url: string) => void = () => {}
    const url = new Promise<string>((resolve) => {
      listening = resolve
    })
    io.onListening = (address) => listening(address)
    const refused = captureIo()
    expect(await runCli(['serve', directory, '--port', '0', '--enable-lora'], refused.io)).toBe(exitCodes.usage)
    expect(refused.stderr()).toContain('--enable-lora needs --lora-root <dir>')
    const root = join(temporaryDirectory(), 'adapters-cli')
    const exit = runCli(['serve', directory, '--port', '0', '--model-id', 'tiny', '--enable-lora', '--lora-root', root, '--max-loras', '1'], io)
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

describe('ludic serve --engine --enable-lora', () => {
  it("answers concurrent requests to two adapters and the base as without --engine (greedy), each adapter's requests decoding together", async () => {
    const directory = await saveTinyModel(join(temporaryDirectory(), 'tiny-engine-lora'))
    const root = join(temporaryDirectory(), 'adapters-engine')
    await saveRandomAdapter(directory, join(root, 'step-1'), 6)
    await saveRandomAdapter(directory, join(root, 'step-2'), 7)
    const prompts = ['hello there', 'what is two plus two?', 'the quick brown fox']
    const flags = ['--model-id', 'tiny', '--enable-lora', '--lora-root', root]
    /** Loads both adapters, then asks the base and each adapter every prompt, all at once: the answers' token ids, and /metrics. */
    const askAll = async (url: string) => {
      const post = (path: string, body: unknown) =>
        fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
      for (const name of ['step-1', 'step-2']) expect((await post('/load_lora_adapter', { lora_name: name, lora_path: join(root, name) })).status).toBe(200)
      const asked = ['tiny', 'step-1', 'step-2'].flatMap((model) =>
        prompts.map(async (content) => {
          const body = { model, messages: [{ role: 'user', content }], max_tokens: 6, temperature: 0, ignore_eos: true, return_token_ids: true }
          const response = await post('/chat/completions', body)
          expect(response.status).toBe(200)
          return ((await response.json()) as { choices: { token_ids: number[] }[] }).choices[0]!.token_ids
        }),
      )
      const answers = await Promise.all(asked)
      return { answers, metrics: await (await fetch(`${url.replace(/\/v1$/, '')}/metrics`)).text() }
    }
    const expected = (await whileServing(directory, flags, askAll)).answers
    expect(expected[3]).not.toEqual(expected[0]) // the adapters change the answers
    expect(expected[6]).not.toEqual(expected[3])
    const { answers, metrics } = await whileServing(directory, [...flags, '--engine', '--max-batch', '4'], askAll)
    expect(answers).toEqual(expected)
    const value = (name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(metrics)?.[1])
    // 9 requests × 6 tokens: one at a time, every decode step would hold one row (54 steps); a group's rows decode together.
    expect(value('vllm:generation_tokens_total')).toBe(54)
    expect(value('ludic_engine_decode_steps')).toBeLessThan(54)
    expect(value('ludic_engine_lora_swaps')).toBeGreaterThanOrEqual(2)
    expect(value('vllm:num_requests_waiting')).toBe(0)
  })
})

describe('ludic serve --enable-lora against hostile adapter paths (issue 34)', () => {
  /** A server with a LoRA root holding one good adapter and the hostile entries of the third attack round. */
  async function hostileSetup() {
    const base = await mkdtemp(join(temporaryDirectory(), 'hostile-'))
    const directory = await saveTinyModel(join(base, 'tiny-hostile'))
    const root = join(base, 'lora-root')
    await saveRandomAdapter(directory, join(root, 'good'), 4)
    const secret = join(base, 'secret.txt')
    await writeFile(secret, 'hf_SECRETtoken1234567890')
    const outside = join(base, 'outside-adapter')
    await saveRandomAdapter(directory, outside, 5)
    // A folder whose config is a link to the secret; one whose weights are; one linking out whole; a FIFO config; /dev/zero.
    await mkdir(join(root, 'config-link'), { recursive: true })
    await symlink(secret, join(root, 'config-link', 'adapter_config.json'))
    await mkdir(join(root, 'weights-link'), { recursive: true })
    await copyFile(join(root, 'good', 'adapter_config.json'), join(root, 'weights-link', 'adapter_config.json'))
    await symlink(secret, join(root, 'weights-link', 'adapter_model.safetensors'))
    await symlink(outside, join(root, 'folder-link'))
    await mkdir(join(root, 'fifo'), { recursive: true })
    execFileSync('mkfifo', [join(root, 'fifo', 'adapter_config.json')])
    await mkdir(join(root, 'zero'), { recursive: true })
    await symlink('/dev/zero', join(root, 'zero', 'adapter_config.json')) // a device: read in full, 670 MB in 3.6 s before
    await mkdir(join(root, 'not-json'), { recursive: true })
    await writeFile(join(root, 'not-json', 'adapter_config.json'), 'hf_SECRET_IN_ROOT and more text')
    const running = await serve(directory, { port: 0, modelId: 'tiny', enableLora: true, maxLoras: 8, loraRoots: [root] })
    const post = (path: string, body: unknown) =>
      fetch(`${running.server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
    const load = async (name: string, path: string) => {
      const response = await post('/load_lora_adapter', { lora_name: name, lora_path: path })
      return { status: response.status, text: await response.text() }
    }
    return { running, root, base, secret, outside, load, post }
  }

  it('loads only under --lora-root, follows no link out of it, and never echoes what a file holds', async () => {
    const { running, root, base, secret, outside, load } = await hostileSetup()
    try {
      expect((await load('good', join(root, 'good'))).status).toBe(200)
      expect((await load('relative', 'good')).status).toBe(200) // relative to the root
      const answers = {
        // Outside the root, by path: refused before the disk is touched, the same answer whether anything is there.
        outside: await load('a', outside),
        etc: await load('b', '/etc'),
        missingOutside: await load('c', join(base, 'no-such-folder')),
        notDirectoryOutside: await load('d', join(secret, 'sub')),
        dotDot: await load('e', join(root, '..', 'outside-adapter')),
        // Inside the root by name, out of it through a link: one "nothing usable there" answer (404), as for a missing path.
        folderLink: await load('f', join(root, 'folder-link')),
        missingInside: await load('g', join(root, 'no-such-adapter')),
        configLink: await load('h', join(root, 'config-link')),
        weightsLink: await load('i', join(root, 'weights-link')),
        notJson: await load('j', join(root, 'not-json')),
      }
      for (const answer of [answers.outside, answers.etc, answers.missingOutside, answers.notDirectoryOutside, answers.dotDot]) {
        expect(answer.status).toBe(400)
        expect(answer.text).toContain('is not under a directory this server takes adapters from')
      }
      for (const answer of [answers.folderLink, answers.missingInside, answers.configLink, answers.weightsLink]) {
        expect(answer.status).toBe(404)
        expect(answer.text).toContain('nothing usable is there within the allowed directories')
      }
      expect(answers.notJson.status).toBe(400)
      expect(answers.notJson.text).toContain('is not valid UTF-8 JSON')
      for (const [name, answer] of Object.entries(answers)) {
        expect(answer.text, name).not.toMatch(/SECRET|hf_|root:x|token1234/)
        expect(answer.text, name).not.toMatch(/header length is \d/)
      }
      expect(running.lora!.count).toBe(2)
    } finally {
      await running.close()
    }
  })

  it('refuses a FIFO or a device at once, while the model keeps generating, and /health stays truthful', async () => {
    const { running, root, load, post } = await hostileSetup()
    try {
      const [fifo, zero] = await Promise.all([load('fifo', join(root, 'fifo')), load('zero', join(root, 'zero'))])
      expect(fifo.status).toBe(400)
      expect(fifo.text).toContain('is a FIFO (named pipe), not a regular file')
      expect(zero.status).toBe(404) // /dev/zero is outside the root: the link leads nowhere usable
      expect(zero.text).toContain('nothing usable is there within the allowed directories')
      const chat = await post('/chat/completions', { model: 'tiny', messages: [{ role: 'user', content: 'hello' }], max_tokens: 3 })
      expect(chat.status).toBe(200)
      expect((await fetch(`${running.server.url.replace(/\/v1$/, '')}/health`)).status).toBe(200)
    } finally {
      await running.close()
    }
  })

  it('a load that is refused for its regex does not block the server (ReDoS through target_modules)', async () => {
    const { running, root, load, post } = await hostileSetup()
    try {
      await mkdir(join(root, 'redos'), { recursive: true })
      await copyFile(join(root, 'good', 'adapter_model.safetensors'), join(root, 'redos', 'adapter_model.safetensors'))
      const config = JSON.parse(await readFile(join(root, 'good', 'adapter_config.json'), 'utf8')) as Record<string, unknown>
      await writeFile(join(root, 'redos', 'adapter_config.json'), JSON.stringify({ ...config, target_modules: '(.+)+X' }))
      const [redos, chat] = await Promise.all([
        load('redos', join(root, 'redos')),
        post('/chat/completions', { model: 'tiny', messages: [{ role: 'user', content: 'hello' }], max_tokens: 3 }),
      ])
      expect(redos.status).toBe(400)
      expect(chat.status).toBe(200)
    } finally {
      await running.close()
    }
  })
})
