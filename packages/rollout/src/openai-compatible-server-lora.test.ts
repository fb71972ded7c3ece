import { InvalidArgumentError, type Completion, type GenerationRequest, type PolicyV1 } from '@ludic/core'
import { createScriptedPolicy } from '@ludic/core/test'
import OpenAI from 'openai'
import { afterEach, describe, expect, it } from 'vitest'
import type { LoraAdapterLoader } from './lora-adapters.js'
import { serveOpenAICompatible, type OpenAICompatibleServer, type ServeOptions } from './openai-compatible-server.js'

const servers: OpenAICompatibleServer[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()))
})

/** Answers `<name>: <last message>`. */
const namedPolicy = (name: string) =>
  createScriptedPolicy({ id: name, replies: (request: GenerationRequest) => `${name}: ${request.messages!.at(-1)!.content}` })

/** A policy whose generations wait until `open()`; `started` resolves at the first call. */
function gatedPolicy(name: string) {
  let open: () => void = () => {}
  const gate = new Promise<void>((resolve) => {
    open = resolve
  })
  let started: () => void = () => {}
  const first = new Promise<void>((resolve) => {
    started = resolve
  })
  const inner = namedPolicy(name)
  const policy: PolicyV1 = {
    specificationVersion: 'v1',
    id: name,
    async generate(requests, options): Promise<Completion[]> {
      started()
      await gate
      return inner.generate(requests, options)
    },
  }
  return { policy, open, started: first }
}

/** A loader of fake adapters: path `missing/…` is not found, `broken/…` is refused, `slow/…` waits for `release`. */
function fakeLoader() {
  const unloaded: string[] = []
  let release: () => void = () => {}
  const slow = new Promise<void>((resolve) => {
    release = resolve
  })
  const loader: LoraAdapterLoader = {
    async load({ name, path }) {
      if (path.startsWith('missing/')) throw Object.assign(new Error(`nothing at ${path}`), { code: 'ENOENT' })
      if (path.startsWith('broken/')) throw new InvalidArgumentError({ argument: 'lora_path', value: path, message: 'holds no adapter_config.json' })
      if (path.startsWith('slow/')) await slow
      return namedPolicy(`${name}@${path}`)
    },
    unload(name) {
      unloaded.push(name)
    },
  }
  return { loader, unloaded, release: () => release() }
}

async function serve(policy: PolicyV1, options: ServeOptions = {}) {
  const server = await serveOpenAICompatible(policy, { modelId: 'base', ...options })
  servers.push(server)
  return server
}

const post = (server: OpenAICompatibleServer, path: string, body: unknown) =>
  fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })

const ask = (client: OpenAI, model: string, content = 'hi') =>
  client.chat.completions.create({ model, messages: [{ role: 'user', content }], max_tokens: 32 }).then((answer) => answer.choices[0]!.message.content)

describe('serveOpenAICompatible: runtime LoRA adapters (vLLM API)', () => {
  it('loads an adapter, serves requests naming it, lists it with its parent, and unloads it', async () => {
    const { loader, unloaded } = fakeLoader()
    const server = await serve(namedPolicy('base'), { lora: { loader } })
    const client = new OpenAI({ baseURL: server.url, apiKey: 'EMPTY', maxRetries: 0 })
    const loaded = await post(server, '/load_lora_adapter', { lora_name: 'step-1', lora_path: 'adapters/step-1' })
    expect(loaded.status).toBe(200)
    expect(await loaded.text()).toBe("Success: LoRA adapter 'step-1' added successfully.")
    expect(await ask(client, 'step-1')).toBe('step-1@adapters/step-1: hi')
    expect(await ask(client, 'base')).toBe('base: hi')
    const answer = await client.chat.completions.create({ model: 'step-1', messages: [{ role: 'user', content: 'x' }] })
    expect(answer.model).toBe('step-1')
    const models = await client.models.list()
    expect(models.data.map((model) => model.id)).toEqual(['base', 'step-1'])
    // The adapter's name, not its path: the server's file system stays its own.
    expect(models.data[1]).toMatchObject({ parent: 'base', root: 'step-1' })
    expect(JSON.stringify(models.data)).not.toContain('adapters/step-1')
    expect(await client.models.retrieve('step-1')).toMatchObject({ parent: 'base' })
    expect(server.stats().loraAdapters).toBe(1)

    const removed = await post(server, '/unload_lora_adapter', { lora_name: 'step-1' })
    expect(removed.status).toBe(200)
    expect(await removed.text()).toBe("Success: LoRA adapter 'step-1' removed successfully.")
    await expect(ask(client, 'step-1')).rejects.toBeInstanceOf(OpenAI.NotFoundError)
    await waitUntil(() => unloaded.length === 1)
    expect(unloaded).toEqual(['step-1'])
    expect((await client.models.list()).data.map((model) => model.id)).toEqual(['base'])
  })

  it("answers vLLM's errors: missing fields, duplicates, unknown adapters, missing and broken files, limits", async () => {
    const { loader } = fakeLoader()
    const server = await serve(namedPolicy('base'), { lora: { loader, maxAdapters: 2, maxNameLength: 8, maxPathLength: 20 } })
    const error = async (response: Response) => ({
      status: response.status,
      ...((await response.json()) as { error: { code: string; param: string; message: string } }).error,
    })
    expect(await error(await post(server, '/load_lora_adapter', { lora_name: 'a' }))).toMatchObject({
      status: 400,
      message: "Both 'lora_name' and 'lora_path' must be provided.",
      param: 'lora_path',
    })
    expect(await error(await post(server, '/load_lora_adapter', { lora_name: 'a-very-long-name', lora_path: 'p' }))).toMatchObject({
      status: 400,
      param: 'lora_name',
    })
    expect(await error(await post(server, '/load_lora_adapter', { lora_name: 'a', lora_path: 'p'.repeat(21) }))).toMatchObject({
      status: 400,
      param: 'lora_path',
    })
    expect(await error(await post(server, '/load_lora_adapter', { lora_name: 'a', lora_path: 'missing/a' }))).toMatchObject({
      status: 404,
      code: 'lora_adapter_not_found',
    })
    const broken = await error(await post(server, '/load_lora_adapter', { lora_name: 'a', lora_path: 'broken/a' }))
    expect(broken).toMatchObject({ status: 400, code: 'lora_adapter_invalid' })
    expect(broken.message).toContain('adapter_config.json')
    expect((await post(server, '/load_lora_adapter', { lora_name: 'a', lora_path: 'ok/a' })).status).toBe(200)
    const duplicate = await error(await post(server, '/load_lora_adapter', { lora_name: 'a', lora_path: 'ok/a2' }))
    expect(duplicate).toMatchObject({ status: 400, code: 'lora_adapter_exists' })
    expect(duplicate.message).toContain("has already been loaded. If you want to load the adapter in place, set 'load_inplace' to True.")
    expect((await post(server, '/load_lora_adapter', { lora_name: 'b', lora_path: 'ok/b' })).status).toBe(200)
    expect(await error(await post(server, '/load_lora_adapter', { lora_name: 'c', lora_path: 'ok/c' }))).toMatchObject({
      status: 400,
      code: 'too_many_lora_adapters',
    })
    expect(await error(await post(server, '/load_lora_adapter', { lora_name: 'base', lora_path: 'ok/base' }))).toMatchObject({ status: 400 })
    expect(await error(await post(server, '/unload_lora_adapter', {}))).toMatchObject({
      status: 400,
      message: "'lora_name' needs to be provided to unload a LoRA adapter.",
    })
    expect(await error(await post(server, '/unload_lora_adapter', { lora_name: 'zz' }))).toMatchObject({
      status: 404,
      message: "The lora adapter 'zz' cannot be found.",
    })
    // Without the lora option both routes are unknown, as vLLM's without VLLM_ALLOW_RUNTIME_LORA_UPDATING.
    const plain = await serve(namedPolicy('base'))
    expect((await post(plain, '/load_lora_adapter', { lora_name: 'a', lora_path: 'ok/a' })).status).toBe(404)
  })

  it('replaces an adapter in place: requests in flight finish with the old one, new ones get the new one', async () => {
    const gated = gatedPolicy('old')
    const unloaded: string[] = []
    let calls = 0
    const loader: LoraAdapterLoader = {
      async load({ path }) {
        calls++
        return calls === 1 ? gated.policy : namedPolicy(`new@${path}`)
      },
      unload: (name) => {
        unloaded.push(name)
      },
    }
    const server = await serve(namedPolicy('base'), { lora: { loader } })
    const client = new OpenAI({ baseURL: server.url, apiKey: 'EMPTY', maxRetries: 0 })
    expect((await post(server, '/load_lora_adapter', { lora_name: 'live', lora_path: 'v1' })).status).toBe(200)
    const inFlight = ask(client, 'live')
    await gated.started
    expect((await post(server, '/load_lora_adapter', { lora_name: 'live', lora_path: 'v2', load_inplace: true })).status).toBe(200)
    expect(await ask(client, 'live')).toBe('new@v2: hi')
    expect(unloaded).toEqual([]) // the old one still answers a request
    gated.open()
    expect(await inFlight).toBe('old: hi')
    await waitUntil(() => unloaded.length === 1)
  })

  it('keeps serving the base and other adapters while a load is in progress; the adapter serves only once loaded', async () => {
    const { loader, release } = fakeLoader()
    const server = await serve(namedPolicy('base'), { lora: { loader } })
    const client = new OpenAI({ baseURL: server.url, apiKey: 'EMPTY', maxRetries: 0 })
    expect((await post(server, '/load_lora_adapter', { lora_name: 'ready', lora_path: 'ok/ready' })).status).toBe(200)
    const loading = post(server, '/load_lora_adapter', { lora_name: 'next', lora_path: 'slow/next' })
    expect(await ask(client, 'base')).toBe('base: hi')
    expect(await ask(client, 'ready')).toBe('ready@ok/ready: hi')
    await expect(ask(client, 'next')).rejects.toBeInstanceOf(OpenAI.NotFoundError)
    // A second load of the same name while the first is in progress is a duplicate.
    expect((await post(server, '/load_lora_adapter', { lora_name: 'next', lora_path: 'ok/next' })).status).toBe(400)
    release()
    expect((await loading).status).toBe(200)
    expect(await ask(client, 'next')).toBe('next@slow/next: hi')
  })
})

/** Polls `condition` every 5 ms, at most 6000 times (30 s, for a busy machine: a bound on a condition that never comes, not a speed). */
async function waitUntil(condition: () => boolean): Promise<void> {
  for (let attempt = 0; attempt < 6000 && !condition(); attempt++) await new Promise((resolve) => setTimeout(resolve, 5))
  expect(condition()).toBe(true)
}
