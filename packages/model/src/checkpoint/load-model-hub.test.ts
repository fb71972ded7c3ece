import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import * as tf from '@tensorflow/tfjs-core'
import { createFakeHub, type FakeHub, filesFromDirectory } from '@ludic/hub/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createModel } from '../model/create-model.js'
import { initTestBackend } from '../test/init-test-backend.js'
import { loadModel } from './load-model.js'
import { saveModel } from './save-model.js'

beforeAll(initTestBackend)

const smallQwen3 = {
  model_type: 'qwen3',
  vocab_size: 40,
  hidden_size: 16,
  intermediate_size: 24,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  head_dim: 8,
  tie_word_embeddings: false,
}

let hub: FakeHub
let directory: string
let model: ReturnType<typeof createModel>
beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'ludic-model-hub-'))
  model = createModel(smallQwen3, { seed: 9 })
  await saveModel(model, join(directory, 'single'))
  await saveModel(model, join(directory, 'sharded'), { maxShardBytes: 4000 })
  hub = await createFakeHub({
    repos: [
      { id: 'ludic-test/tiny-qwen3', files: await filesFromDirectory(join(directory, 'single')) },
      { id: 'ludic-test/tiny-qwen3-sharded', files: { 'config.json': '{}' }, revisions: { v2: await filesFromDirectory(join(directory, 'sharded')) } },
    ],
  })
})
afterAll(async () => {
  model.dispose()
  await hub.close()
  await rm(directory, { recursive: true, force: true, maxRetries: 5 })
})

async function expectSameWeights(loaded: ReturnType<typeof createModel>): Promise<void> {
  const ids = [[1, 5, 9, 30]]
  const [before, after] = [model.forward(ids), loaded.forward(ids)]
  expect(Array.from(after.dataSync())).toEqual(Array.from(before.dataSync()))
  tf.dispose([before, after])
  for (const [name, variable] of model.parameters())
    expect(Array.from(loaded.parameters().get(name)!.dataSync()), name).toEqual(Array.from(variable.dataSync()))
}

describe('loadModel from a Hugging Face Hub repository id', () => {
  it('downloads a checkpoint saved by saveModel into the Hugging Face cache and loads it, then loads it again offline', async () => {
    const cacheDir = join(directory, 'cache')
    const tensorsBefore = tf.memory().numTensors
    const progress: string[] = []
    const loaded = await loadModel('ludic-test/tiny-qwen3', {
      hub: { cacheDir, endpoint: hub.endpoint, token: false, offline: false, onProgress: (event) => progress.push(event.file) },
    })
    await expectSameWeights(loaded)
    expect(new Set(progress)).toEqual(new Set(['config.json', 'generation_config.json', 'model.safetensors']))
    loaded.dispose()
    const offline = await loadModel('ludic-test/tiny-qwen3', {
      hub: { cacheDir, offline: true, fetch: () => Promise.reject(new Error('no network in this test')) },
    })
    await expectSameWeights(offline)
    offline.dispose()
    expect(tf.memory().numTensors).toBe(tensorsBefore)
  })

  it('loads a sharded checkpoint at a revision (owner/name@revision)', async () => {
    const loaded = await loadModel('ludic-test/tiny-qwen3-sharded@v2', {
      hub: { cacheDir: join(directory, 'cache-sharded'), endpoint: hub.endpoint, token: false, offline: false },
    })
    await expectSameWeights(loaded)
    loaded.dispose()
    const shards = hub.requests.filter((request) => request.method === 'GET' && /model-\d+-of-\d+\.safetensors|cdn\//.test(request.path))
    expect(shards.length).toBeGreaterThan(1)
  })

  it('says which repository is missing, and refuses bad hub options by name', async () => {
    await expect(
      loadModel('ludic-test/absent', { hub: { cacheDir: join(directory, 'cache-absent'), endpoint: hub.endpoint, token: false, offline: false } }),
    ).rejects.toMatchObject({
      name: 'HubError',
      reason: 'missing',
      repoId: 'ludic-test/absent',
    })
    await expect(loadModel('ludic-test/tiny-qwen3', { hub: { retries: -1 } })).rejects.toThrow(/options\.hub\.retries/)
  })

  it("says that no local folder exists and what was tried, as not found, for a missing folder shaped like owner/name (the role-play guide's path, offline)", async () => {
    const error = await loadModel('models/SmolLM2-135M-Instruct', {
      hub: { cacheDir: join(directory, 'cache-empty'), offline: true, fetch: () => Promise.reject(new Error('no network in this test')) },
    }).catch((caught: unknown) => caught)
    expect(error).toMatchObject({ name: 'HubError', reason: 'missing', repoId: 'models/SmolLM2-135M-Instruct', cause: { reason: 'offline' } })
    expect((error as Error).message).toContain(
      `No model at 'models/SmolLM2-135M-Instruct': tried the local path ${join(process.cwd(), 'models', 'SmolLM2-135M-Instruct')}, which does not exist`,
    )
    expect((error as Error).message).toContain('then the Hugging Face Hub: the Hub cache has no copy of a repository of that name')
  })
})
