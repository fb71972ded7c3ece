import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { defaultCacheDir, defaultEndpointUrl, defaultOffline, defaultToken, huggingFaceHome, isTrueEnvironmentValue } from './hub-environment.js'

let directory: string
beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'ludic-hub-environment-'))
})
afterAll(async () => {
  await rm(directory, { recursive: true, force: true, maxRetries: 5 })
})
afterEach(() => {
  vi.unstubAllEnvs()
})

/** Clears every variable these defaults read, so the machine's own settings do not leak in. */
function clearEnvironment(): void {
  for (const name of [
    'HF_HOME',
    'XDG_CACHE_HOME',
    'HF_HUB_CACHE',
    'HUGGINGFACE_HUB_CACHE',
    'HF_TOKEN',
    'HUGGING_FACE_HUB_TOKEN',
    'HF_TOKEN_PATH',
    'HF_HUB_OFFLINE',
    'TRANSFORMERS_OFFLINE',
    'HF_ENDPOINT',
  ]) {
    vi.stubEnv(name, undefined)
  }
}

describe('defaults from the environment, as Python huggingface_hub reads them', () => {
  it('cache folder: HF_HUB_CACHE, then HUGGINGFACE_HUB_CACHE, then $HF_HOME/hub, then $XDG_CACHE_HOME/huggingface/hub, then ~/.cache/huggingface/hub', () => {
    clearEnvironment()
    expect(defaultCacheDir()).toBe(join(homedir(), '.cache', 'huggingface', 'hub'))
    vi.stubEnv('XDG_CACHE_HOME', '/xdg')
    expect(defaultCacheDir()).toBe(join('/xdg', 'huggingface', 'hub'))
    vi.stubEnv('HF_HOME', '/hf-home')
    expect(huggingFaceHome()).toBe('/hf-home')
    expect(defaultCacheDir()).toBe(join('/hf-home', 'hub'))
    vi.stubEnv('HUGGINGFACE_HUB_CACHE', '/old-cache')
    expect(defaultCacheDir()).toBe('/old-cache')
    vi.stubEnv('HF_HUB_CACHE', '~/hub-cache')
    expect(defaultCacheDir()).toBe(join(homedir(), 'hub-cache'))
  })

  it('token: HF_TOKEN, then HUGGING_FACE_HUB_TOKEN, then the token file (HF_TOKEN_PATH or $HF_HOME/token), trimmed; none when empty', async () => {
    clearEnvironment()
    vi.stubEnv('HF_HOME', directory)
    expect(defaultToken()).toBeUndefined()
    await writeFile(join(directory, 'token'), 'hf_from_file\n')
    expect(defaultToken()).toBe('hf_from_file')
    const other = join(directory, 'other-token')
    await writeFile(other, '  hf_from_token_path \r\n')
    vi.stubEnv('HF_TOKEN_PATH', other)
    expect(defaultToken()).toBe('hf_from_token_path')
    vi.stubEnv('HUGGING_FACE_HUB_TOKEN', 'hf_old_variable')
    expect(defaultToken()).toBe('hf_old_variable')
    vi.stubEnv('HF_TOKEN', 'hf_variable')
    expect(defaultToken()).toBe('hf_variable')
    vi.stubEnv('HF_TOKEN', '  ')
    expect(defaultToken()).toBe('hf_old_variable')
  })

  it('refuses a token file too large to be a token', async () => {
    clearEnvironment()
    const path = join(directory, 'huge-token')
    await writeFile(path, 'x'.repeat(5000))
    vi.stubEnv('HF_TOKEN_PATH', path)
    expect(() => defaultToken()).toThrow(/huge-token: is 5000 bytes; a token file holds one token/)
  })

  it('offline: HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE set to 1, true, yes or on in any case', () => {
    clearEnvironment()
    expect(defaultOffline()).toBe(false)
    for (const value of ['1', 'true', 'TRUE', 'Yes', 'on']) {
      vi.stubEnv('HF_HUB_OFFLINE', value)
      expect(defaultOffline(), value).toBe(true)
    }
    for (const value of ['0', 'false', '', 'no', 'off', '2']) {
      vi.stubEnv('HF_HUB_OFFLINE', value)
      expect(defaultOffline(), value).toBe(false)
    }
    vi.stubEnv('TRANSFORMERS_OFFLINE', '1')
    expect(defaultOffline()).toBe(true)
    expect(isTrueEnvironmentValue(undefined)).toBe(false)
  })

  it('endpoint: HF_ENDPOINT without trailing slashes, else https://huggingface.co', () => {
    clearEnvironment()
    expect(defaultEndpointUrl()).toBe('https://huggingface.co')
    vi.stubEnv('HF_ENDPOINT', 'https://hf-mirror.example//')
    expect(defaultEndpointUrl()).toBe('https://hf-mirror.example')
  })
})
