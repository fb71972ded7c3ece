import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, beforeEach, vi } from 'vitest'
import { createFakeHub, type FakeHub, type FakeHubOptions } from '../testing/fake-hub.js'

/**
 * A test file's fake Hub and cache folder: the Hub started and a temporary folder made before its tests, both gone
 * after; the machine's own Hugging Face settings cleared around each test (they must not change what it sees), and the
 * Hub's request log emptied (paused responses released) after each. `newCache()` is a fresh cache folder.
 */
export function useFakeHub(options: FakeHubOptions, prefix: string) {
  const state: { hub?: FakeHub; directory?: string; caches: number } = { caches: 0 }
  beforeAll(async () => {
    state.hub = await createFakeHub(options)
    state.directory = await mkdtemp(join(tmpdir(), prefix))
  })
  afterAll(async () => {
    await state.hub?.close()
    if (state.directory !== undefined) await rm(state.directory, { recursive: true, force: true, maxRetries: 5 })
  })
  beforeEach(() => {
    for (const name of ['HF_HUB_OFFLINE', 'TRANSFORMERS_OFFLINE', 'HF_TOKEN', 'HUGGING_FACE_HUB_TOKEN', 'HF_ENDPOINT']) vi.stubEnv(name, undefined)
  })
  afterEach(() => {
    vi.unstubAllEnvs()
    state.hub?.releasePaused()
    if (state.hub !== undefined) state.hub.requests.length = 0
  })
  return {
    hub: () => state.hub!,
    directory: () => state.directory!,
    newCache: () => join(state.directory!, `cache-${state.caches++}`),
  }
}
