import { createHash } from 'node:crypto'
import { lstat, readdir, readFile, readlink, rm, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { InvalidArgumentError, ParseError } from '@ludic/core'
import { beforeAll, describe, expect, it, vi } from 'vitest'
import { type DownloadProgress, downloadRepo } from './download-repo.js'
import { HubError } from './hub-error.js'
import { seededBytes, shardedRepo, singleFileRepo, tinyConfig } from './test/tiny-repo.js'
import { useFakeHub } from './test/use-fake-hub.js'
import type { FakeHub, FakeHubRepoInput } from './testing/fake-hub.js'

const weightBytes = 256 * 1024
const repos: FakeHubRepoInput[] = [
  { id: 'ludic/tiny', files: singleFileRepo(weightBytes), revisions: { v1: { ...singleFileRepo(1000), 'config.json': '{"v":1}' } } },
  { id: 'ludic/sharded', files: shardedRepo() },
  { id: 'ludic/gated', files: singleFileRepo(1000), gated: true, grantedTokens: ['hf_granted'] },
  { id: 'ludic/private', files: singleFileRepo(1000), private: true, grantedTokens: ['hf_private'] },
  { id: 'ludic/bin-only', files: { 'config.json': tinyConfig, 'pytorch_model.bin': seededBytes(100, 1) } },
  { id: 'ludic/tokenizer-only', files: { 'tokenizer.json': '{}' } },
  {
    id: 'ludic/evil-index',
    files: { 'config.json': '{}', 'model.safetensors.index.json': JSON.stringify({ weight_map: { a: '../../../outside.safetensors' } }) },
  },
]

const fake = useFakeHub({ repos, tokens: ['hf_known'] }, 'ludic-hub-download-')
let hub: FakeHub
beforeAll(() => {
  hub = fake.hub()
})
/** A fresh cache folder per test. */
const newCache = fake.newCache
const throwingFetch = (() => {
  throw new Error('no network in this test')
}) as unknown as typeof fetch
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')

/** Options of the tests that go online: the fake Hub, no token, not offline. */
const online = (cacheDir: string) => ({ cacheDir, endpoint: hub.endpoint, token: false as const, offline: false })

describe('downloadRepo', () => {
  it('downloads only what a causal LM needs into the Python layout: refs/main, blobs by etag, relative links, .no_exist markers', async () => {
    const cacheDir = newCache()
    const commit = hub.commitOf('ludic/tiny')
    const snapshot = await downloadRepo('ludic/tiny', online(cacheDir))
    const storage = join(cacheDir, 'models--ludic--tiny')
    expect(snapshot).toBe(join(storage, 'snapshots', commit))
    expect((await readdir(snapshot)).sort()).toEqual(['config.json', 'generation_config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json'])
    expect(await readFile(join(storage, 'refs', 'main'), 'utf8')).toBe(commit)
    const weights = hub.fileInfo('ludic/tiny', 'model.safetensors')
    expect(await readlink(join(snapshot, 'model.safetensors'))).toBe(`../../blobs/${weights.sha256}`)
    expect(await readlink(join(snapshot, 'config.json'))).toBe(`../../blobs/${hub.fileInfo('ludic/tiny', 'config.json').gitSha1}`)
    expect(sha256(await readFile(join(snapshot, 'model.safetensors')))).toBe(weights.sha256)
    expect((await lstat(join(storage, '.no_exist', commit, 'special_tokens_map.json'))).size).toBe(0)
    expect(await readdir(join(storage, 'blobs'))).toHaveLength(5)
    expect((await readFile(join(cacheDir, 'CACHEDIR.TAG'), 'utf8')).startsWith('Signature: 8a477f597d28d172789f06886806bc55\n')).toBe(true)
    const paths = hub.requests.map((request) => request.path)
    expect(paths.some((path) => /pytorch_model\.bin|onnx|README/.test(path))).toBe(false)
    // The weights came from the CDN host, without the token.
    expect(hub.requests.filter((request) => request.host === 'localhost').map((request) => request.method)).toEqual(['GET'])
  })

  it('sends the token to the Hub only, never to the CDN', async () => {
    await downloadRepo('ludic/gated', { ...online(newCache()), token: 'hf_granted' })
    const hubRequests = hub.requests.filter((request) => request.host === '127.0.0.1')
    const cdnRequests = hub.requests.filter((request) => request.host === 'localhost')
    expect(hubRequests.length).toBeGreaterThan(0)
    expect(hubRequests.every((request) => request.authorization === 'Bearer hf_granted')).toBe(true)
    expect(cdnRequests).toHaveLength(1)
    expect(cdnRequests[0]!.authorization).toBeUndefined()
  })

  it('downloads a sharded checkpoint: the index, then every shard it lists (not the .bin shards)', async () => {
    const events: DownloadProgress[] = []
    const snapshot = await downloadRepo('ludic/sharded', { ...online(newCache()), onProgress: (event) => events.push(event) })
    expect((await readdir(snapshot)).sort()).toEqual([
      'config.json',
      'model-00001-of-00002.safetensors',
      'model-00002-of-00002.safetensors',
      'model.safetensors.index.json',
      'tokenizer.json',
    ])
    for (const shard of ['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors']) {
      expect(sha256(await readFile(join(snapshot, shard)))).toBe(hub.fileInfo('ludic/sharded', shard).sha256)
      const last = events.filter((event) => event.file === shard).at(-1)!
      expect(last).toMatchObject({
        repoId: 'ludic/sharded',
        bytesDone: hub.fileInfo('ludic/sharded', shard).size,
        bytesTotal: hub.fileInfo('ludic/sharded', shard).size,
      })
    }
    const files = [...new Set(events.map((event) => event.file))]
    expect(files.slice(-2)).toEqual(['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors'])
    expect(events.at(-1)).toMatchObject({ fileIndex: 4, fileCount: 5 })
    for (const event of events) expect(event.bytesDone).toBeLessThanOrEqual(event.bytesTotal)
  })

  it('uses a complete cached snapshot with no network at all, online or offline', async () => {
    const cacheDir = newCache()
    const snapshot = await downloadRepo('ludic/tiny', online(cacheDir))
    await expect(downloadRepo('ludic/tiny', { cacheDir, fetch: throwingFetch })).resolves.toBe(snapshot)
    await expect(downloadRepo('ludic/tiny', { cacheDir, fetch: throwingFetch, offline: true })).resolves.toBe(snapshot)
    vi.stubEnv('HF_HUB_OFFLINE', '1')
    await expect(downloadRepo('ludic/tiny', { cacheDir, fetch: throwingFetch })).resolves.toBe(snapshot)
    // A tokenizer-only request is served by the same snapshot.
    await expect(downloadRepo('ludic/tiny', { cacheDir, fetch: throwingFetch, files: 'tokenizer' })).resolves.toBe(snapshot)
    // With refresh, the Hub is asked again (and the throwing fetch shows it was).
    vi.stubEnv('HF_HUB_OFFLINE', undefined)
    await expect(downloadRepo('ludic/tiny', { cacheDir, fetch: throwingFetch, refresh: true })).rejects.toMatchObject({ reason: 'network' })
  })

  it('falls back on a cached snapshot with every needed file when the Hub cannot be reached, though optional files are unsettled', async () => {
    const cacheDir = newCache()
    const snapshot = await downloadRepo('ludic/tiny', online(cacheDir))
    await rm(join(cacheDir, 'models--ludic--tiny', '.no_exist'), { recursive: true })
    await expect(downloadRepo('ludic/tiny', { cacheDir, fetch: throwingFetch })).resolves.toBe(snapshot)
    await rm(join(snapshot, 'config.json'))
    await expect(downloadRepo('ludic/tiny', { cacheDir, fetch: throwingFetch })).rejects.toMatchObject({ reason: 'network' })
    // Back online, the link is made again from the blob still in the cache: no file is downloaded.
    hub.requests.length = 0
    await expect(downloadRepo('ludic/tiny', online(cacheDir))).resolves.toBe(snapshot)
    expect(await readFile(join(snapshot, 'config.json'), 'utf8')).toBe(tinyConfig)
    expect(hub.requests.filter((request) => request.method === 'GET' && !request.path.startsWith('api/'))).toEqual([])
  })

  it('reads HF_HUB_CACHE, HF_HOME, HF_ENDPOINT and HF_TOKEN', async () => {
    const home = newCache()
    vi.stubEnv('HF_HUB_CACHE', undefined)
    vi.stubEnv('HUGGINGFACE_HUB_CACHE', undefined)
    vi.stubEnv('HF_HOME', home)
    vi.stubEnv('HF_ENDPOINT', `${hub.endpoint}/`)
    vi.stubEnv('HF_TOKEN', 'hf_granted')
    const snapshot = await downloadRepo('ludic/gated')
    expect(snapshot.startsWith(join(home, 'hub', 'models--ludic--gated', 'snapshots'))).toBe(true)
    expect(hub.requests[0]!.authorization).toBe('Bearer hf_granted')
    const hubCache = newCache()
    vi.stubEnv('HF_HUB_CACHE', hubCache)
    expect((await downloadRepo('ludic/gated')).startsWith(join(hubCache, 'models--ludic--gated'))).toBe(true)
  })

  it('refuses to go online when offline, naming what the cache lacks', async () => {
    const cacheDir = newCache()
    vi.stubEnv('HF_HUB_OFFLINE', 'true')
    const never = await downloadRepo('ludic/tiny', { cacheDir, fetch: throwingFetch }).catch((error: unknown) => error)
    expect(HubError.isInstance(never) && never.reason).toBe('offline')
    expect((never as HubError).message).toMatch(/HF_HUB_OFFLINE is set.*holds no snapshot of ludic\/tiny at 'main'/)
    vi.stubEnv('HF_HUB_OFFLINE', undefined)
    await downloadRepo('ludic/tiny', { ...online(cacheDir), files: 'tokenizer' })
    const partial = await downloadRepo('ludic/tiny', { cacheDir, offline: true, fetch: throwingFetch }).catch((error: unknown) => error)
    expect(partial).toMatchObject({ reason: 'offline', repoId: 'ludic/tiny', revision: 'main' })
    expect((partial as HubError).message).toMatch(
      /the offline option is true.*lacks config\.json, model\.safetensors \(or model\.safetensors\.index\.json and its shards\)/,
    )
  })

  it('takes a revision as owner/name@revision, as an option, or as a commit hash, each with its own snapshot and ref', async () => {
    const cacheDir = newCache()
    const v1 = hub.commitOf('ludic/tiny', 'v1')
    const snapshot = await downloadRepo('ludic/tiny@v1', online(cacheDir))
    expect(snapshot).toBe(join(cacheDir, 'models--ludic--tiny', 'snapshots', v1))
    expect(await readFile(join(snapshot, 'config.json'), 'utf8')).toBe('{"v":1}')
    expect(await readFile(join(cacheDir, 'models--ludic--tiny', 'refs', 'v1'), 'utf8')).toBe(v1)
    await expect(downloadRepo('ludic/tiny', { ...online(cacheDir), revision: 'v1', fetch: throwingFetch })).resolves.toBe(snapshot)
    await expect(downloadRepo(`ludic/tiny@${v1}`, { cacheDir, fetch: throwingFetch, offline: true })).resolves.toBe(snapshot)
    await expect(downloadRepo('ludic/tiny@v1', { ...online(cacheDir), revision: 'main' })).rejects.toThrow(
      /options\.revision.*differs from the revision in the repository id/,
    )
  })

  it('names the missing repository, revision or file', async () => {
    const missingRepo = await downloadRepo('ludic/nope', online(newCache())).catch((error: unknown) => error)
    expect(missingRepo).toMatchObject({ reason: 'missing', status: 401, repoId: 'ludic/nope' })
    expect((missingRepo as HubError).message).toMatch(
      /Repository ludic\/nope not found .*, and no local folder of that name exists: check the id; .*set HF_TOKEN/,
    )
    const missingRevision = await downloadRepo('ludic/tiny@v9', online(newCache())).catch((error: unknown) => error)
    expect(missingRevision).toMatchObject({ reason: 'missing', status: 404, revision: 'v9' })
    expect((missingRevision as HubError).message).toMatch(/Revision 'v9' not found in repository ludic\/tiny/)
    const missingFile = await downloadRepo('ludic/tiny', { ...online(newCache()), files: ['config.json', 'nothing.json'] }).catch((error: unknown) => error)
    expect(missingFile).toMatchObject({ reason: 'missing', file: 'nothing.json' })
    expect((missingFile as HubError).message).toMatch(/File 'nothing\.json' not found in repository ludic\/tiny at revision 'main'/)
    await expect(downloadRepo('ludic/bin-only', online(newCache()))).rejects.toThrow(
      /has no model\.safetensors or model\.safetensors\.index\.json; Ludic loads safetensors checkpoints only \(it has pytorch_model\.bin\)/,
    )
    await expect(downloadRepo('ludic/bin-only', { ...online(newCache()), files: 'tokenizer' })).rejects.toMatchObject({
      reason: 'missing',
      file: 'tokenizer.json',
    })
  })

  it('explains a gated repository: accept the conditions on its page and set HF_TOKEN (401 without a token, 403 with one not granted)', async () => {
    const anonymous = await downloadRepo('ludic/gated', online(newCache())).catch((error: unknown) => error)
    expect(anonymous).toMatchObject({ reason: 'gated', status: 401, repoId: 'ludic/gated' })
    expect((anonymous as HubError).message).toMatch(
      new RegExp(`gated \\(401: no token was sent\\)\\. Accept its conditions at ${hub.endpoint}/ludic/gated .*set HF_TOKEN`),
    )
    const notGranted = await downloadRepo('ludic/gated', { ...online(newCache()), token: 'hf_known' }).catch((error: unknown) => error)
    expect(notGranted).toMatchObject({ reason: 'gated', status: 403 })
    expect((notGranted as HubError).message).toMatch(/the token sent has not been granted access/)
  })

  it('tells a private repository without a token apart from a refused token', async () => {
    await expect(downloadRepo('ludic/private', online(newCache()))).rejects.toMatchObject({ reason: 'missing', status: 401 })
    await expect(downloadRepo('ludic/private', { ...online(newCache()), token: 'hf_private' })).resolves.toContain('models--ludic--private')
    const refused = await downloadRepo('ludic/tiny', { ...online(newCache()), token: 'hf_typo' }).catch((error: unknown) => error)
    expect(refused).toMatchObject({ reason: 'unauthorized', status: 401 })
    expect((refused as HubError).message).toMatch(/refused the token.*Check HF_TOKEN/)
  })

  it('reports an unreachable Hub as a network error suggesting HF_HUB_OFFLINE', async () => {
    const error = await downloadRepo('ludic/tiny', { ...online(newCache()), endpoint: 'http://127.0.0.1:9' }).catch((caught: unknown) => caught)
    expect(error).toMatchObject({ reason: 'network', repoId: 'ludic/tiny' })
    expect((error as HubError).message).toMatch(/Cannot list ludic\/tiny from http:\/\/127\.0\.0\.1:9 \(.+\)\. .*HF_HUB_OFFLINE=1/)
  })

  it('retries a 5xx answer of the CDN and fails with the status once retries are spent', async () => {
    hub.injectFault({ kind: 'status', route: 'cdn', status: 503 })
    await expect(downloadRepo('ludic/tiny', online(newCache()))).resolves.toContain('snapshots')
    hub.injectFault({ kind: 'status', route: 'api', status: 500 })
    await expect(downloadRepo('ludic/tiny', online(newCache()))).rejects.toMatchObject({ reason: 'network', status: 500 })
    hub.injectFault({ kind: 'status', route: 'cdn', status: 503, times: 2 })
    await expect(downloadRepo('ludic/tiny', { ...online(newCache()), retries: 1 })).rejects.toMatchObject({
      reason: 'network',
      status: 503,
      file: 'model.safetensors',
    })
  })
})

describe('downloadRepo resumes interrupted downloads', () => {
  it('keeps the partial .incomplete file of a cut transfer and resumes it with a Range request on the next call; the blob SHA-256 is the etag', async () => {
    const cacheDir = newCache()
    const weights = hub.fileInfo('ludic/tiny', 'model.safetensors')
    const half = weights.size / 2
    hub.injectFault({ kind: 'cut', file: 'model.safetensors', afterBytes: half })
    const cut = await downloadRepo('ludic/tiny', { ...online(cacheDir), retries: 0 }).catch((error: unknown) => error)
    expect(cut).toMatchObject({ reason: 'network', file: 'model.safetensors' })
    expect((cut as HubError).message).toMatch(
      new RegExp(`${half} of ${weights.size} bytes of model\\.safetensors are kept in the cache; the next call resumes from there`),
    )
    const blob = join(cacheDir, 'models--ludic--tiny', 'blobs', weights.sha256)
    expect((await stat(`${blob}.incomplete`)).size).toBe(half)
    // The other files are in the snapshot already; the weights are not.
    const snapshot = join(cacheDir, 'models--ludic--tiny', 'snapshots', hub.commitOf('ludic/tiny'))
    expect(await readdir(snapshot)).not.toContain('model.safetensors')

    hub.requests.length = 0
    await expect(downloadRepo('ludic/tiny', online(cacheDir))).resolves.toBe(snapshot)
    const gets = hub.requests.filter((request) => request.method === 'GET' && request.host === 'localhost')
    expect(gets).toEqual([expect.objectContaining({ range: `bytes=${half}-`, status: 206 })])
    expect(sha256(await readFile(blob))).toBe(weights.sha256)
    await expect(stat(`${blob}.incomplete`)).rejects.toThrow()
  })

  it('resumes within the same call when retries are left', async () => {
    const cacheDir = newCache()
    const weights = hub.fileInfo('ludic/tiny', 'model.safetensors')
    hub.injectFault({ kind: 'cut', file: 'model.safetensors', afterBytes: 1000, times: 2 })
    const snapshot = await downloadRepo('ludic/tiny', online(cacheDir))
    const ranges = hub.requests.filter((request) => request.host === 'localhost').map((request) => request.range)
    expect(ranges).toEqual([undefined, 'bytes=1000-', 'bytes=2000-'])
    expect(sha256(await readFile(join(snapshot, 'model.safetensors')))).toBe(weights.sha256)
  })

  it('retries a refused connection to the CDN (after a pause, since no bytes came)', async () => {
    let refusals = 1
    const flaky = ((url: string | URL | Request, init?: RequestInit) => {
      if (String(url).includes('/cdn/') && refusals-- > 0) return Promise.reject(new TypeError('fetch failed', { cause: { code: 'ECONNREFUSED' } }))
      return fetch(url, init)
    }) as typeof fetch
    const snapshot = await downloadRepo('ludic/tiny', { ...online(newCache()), fetch: flaky })
    expect(sha256(await readFile(join(snapshot, 'model.safetensors')))).toBe(hub.fileInfo('ludic/tiny', 'model.safetensors').sha256)
    refusals = 5
    const error = await downloadRepo('ludic/tiny', { ...online(newCache()), fetch: flaky, retries: 0 }).catch((caught: unknown) => caught)
    expect(error).toMatchObject({ reason: 'network', file: 'model.safetensors' })
    expect((error as HubError).message).toMatch(/\(ECONNREFUSED\).*0 of 262144 bytes of model\.safetensors are kept/)
  })

  it('gives up on a stalled transfer after timeoutMs of silence, keeping what arrived', async () => {
    const cacheDir = newCache()
    hub.injectFault({ kind: 'stall', file: 'model.safetensors', afterBytes: 4096 })
    const error = await downloadRepo('ludic/tiny', { ...online(cacheDir), retries: 0, timeoutMs: 300 }).catch((caught: unknown) => caught)
    expect(error).toMatchObject({ reason: 'network', file: 'model.safetensors' })
    expect((error as HubError).message).toMatch(/no answer for 300 ms/)
    const blob = join(cacheDir, 'models--ludic--tiny', 'blobs', hub.fileInfo('ludic/tiny', 'model.safetensors').sha256)
    expect((await stat(`${blob}.incomplete`)).size).toBe(4096)
  })

  it('starts over when the server ignores the range', async () => {
    const cacheDir = newCache()
    hub.injectFault({ kind: 'cut', file: 'model.safetensors', afterBytes: 5000 })
    hub.injectFault({ kind: 'ignore-range', file: 'model.safetensors' })
    const snapshot = await downloadRepo('ludic/tiny', online(cacheDir))
    const statuses = hub.requests.filter((request) => request.host === 'localhost').map((request) => [request.range, request.status])
    expect(statuses).toEqual([
      [undefined, 200],
      ['bytes=5000-', 200],
    ])
    expect(sha256(await readFile(join(snapshot, 'model.safetensors')))).toBe(hub.fileInfo('ludic/tiny', 'model.safetensors').sha256)
  })

  it('deletes a download whose SHA-256 is not the etag and says so; the next call succeeds', async () => {
    const cacheDir = newCache()
    hub.injectFault({ kind: 'corrupt', file: 'model.safetensors' })
    const error = await downloadRepo('ludic/tiny', online(cacheDir)).catch((caught: unknown) => caught)
    expect(error).toMatchObject({ reason: 'integrity', file: 'model.safetensors' })
    expect((error as HubError).message).toMatch(/has SHA-256 [0-9a-f]{64} on disk, the Hub announced [0-9a-f]{64}; the partial file was deleted/)
    const blobs = await readdir(join(cacheDir, 'models--ludic--tiny', 'blobs'))
    expect(blobs.some((name) => name.endsWith('.incomplete'))).toBe(false)
    await expect(downloadRepo('ludic/tiny', online(cacheDir))).resolves.toContain('snapshots')
  })

  it('restarts a partial file longer than the file', async () => {
    const cacheDir = newCache()
    const weights = hub.fileInfo('ludic/tiny', 'model.safetensors', 'v1')
    const blob = join(cacheDir, 'models--ludic--tiny', 'blobs', weights.sha256)
    await downloadRepo('ludic/tiny@v1', { ...online(cacheDir), files: ['config.json'] })
    await writeFile(`${blob}.incomplete`, seededBytes(weights.size + 10, 3))
    const snapshot = await downloadRepo('ludic/tiny@v1', online(cacheDir))
    expect(sha256(await readFile(join(snapshot, 'model.safetensors')))).toBe(weights.sha256)
  })

  it('stops at an abort, keeping the partial file', async () => {
    const cacheDir = newCache()
    const controller = new AbortController()
    const reason = new Error('stop')
    const promise = downloadRepo('ludic/tiny', {
      ...online(cacheDir),
      signal: controller.signal,
      onProgress: (event) => {
        if (event.file === 'model.safetensors' && event.bytesDone > 0) controller.abort(reason)
      },
    })
    await expect(promise).rejects.toBe(reason)
    const blob = join(cacheDir, 'models--ludic--tiny', 'blobs', hub.fileInfo('ludic/tiny', 'model.safetensors').sha256)
    expect((await stat(`${blob}.incomplete`)).size).toBeGreaterThan(0)
    await expect(downloadRepo('ludic/tiny', { ...online(cacheDir), signal: AbortSignal.abort(reason) })).rejects.toBe(reason)
  })
})

describe('downloadRepo bounds and arguments', () => {
  it('refuses a shard path that leaves the repository, before downloading it', async () => {
    const cacheDir = newCache()
    const error = await downloadRepo('ludic/evil-index', online(cacheDir)).catch((caught: unknown) => caught)
    expect(ParseError.isInstance(error)).toBe(true)
    expect((error as ParseError).message).toMatch(
      /model\.safetensors\.index\.json at weight_map\.a: shard "\.\.\/\.\.\/\.\.\/outside\.safetensors" has an empty, '\.' or '\.\.' segment/,
    )
    expect(hub.requests.some((request) => request.path.includes('outside'))).toBe(false)
  })

  it('refuses more shards than maxShards, an index total_size over maxTotalBytes and a file over maxFileBytes, before downloading the weights', async () => {
    await expect(downloadRepo('ludic/sharded', { ...online(newCache()), maxShards: 1 })).rejects.toThrow(
      /weight_map: lists more than maxShards \(1\) shard files/,
    )
    await expect(downloadRepo('ludic/sharded', { ...online(newCache()), maxTotalBytes: 2999 })).rejects.toThrow(
      /metadata\.total_size: 3000 bytes is more than maxTotalBytes \(2999\)/,
    )
    hub.requests.length = 0
    await expect(downloadRepo('ludic/tiny', { ...online(newCache()), maxFileBytes: weightBytes - 1 })).rejects.toThrow(
      new RegExp(`X-Linked-Size"\\]: model\\.safetensors is ${weightBytes} bytes, more than maxFileBytes`),
    )
    expect(hub.requests.filter((request) => request.method === 'GET' && request.path.startsWith('ludic/'))).toEqual([])
    await expect(downloadRepo('ludic/tiny', { ...online(newCache()), maxTotalBytes: weightBytes })).rejects.toThrow(/add up to more than maxTotalBytes/)
    await expect(downloadRepo('ludic/tiny', { ...online(newCache()), maxJsonBytes: 100 })).rejects.toThrow(/more than the limit of 100 bytes \(maxJsonBytes\)/)
  })

  it('refuses a bad repository id, revision, file path or option with an InvalidArgumentError naming it', async () => {
    for (const id of ['tiny', 'a/b/c', 'a--b/c', 'owner/name.git', '../x', 'a/-b', `a/${'x'.repeat(100)}`]) {
      const error = await downloadRepo(id, online(newCache())).catch((caught: unknown) => caught)
      expect(InvalidArgumentError.isInstance(error) && error.argument, id).toBe('repoId')
    }
    await expect(downloadRepo('ludic/tiny', { ...online(newCache()), revision: '../main' })).rejects.toThrow(/options\.revision/)
    await expect(downloadRepo('ludic/tiny', { ...online(newCache()), files: ['../secret'] })).rejects.toThrow(/options\.files\[0\].*'\.\.' segment/)
    await expect(downloadRepo('ludic/tiny', { ...online(newCache()), retries: -1 })).rejects.toThrow(/options\.retries/)
    await expect(downloadRepo('ludic/tiny', { ...online(newCache()), endpoint: 'ftp://hub' })).rejects.toThrow(/options\.endpoint/)
    await expect(downloadRepo('ludic/tiny', { ...online(newCache()), files: 'weights' as 'model' })).rejects.toThrow(/options\.files/)
  })

  it('downloads a tokenizer-only repository with files: tokenizer', async () => {
    const snapshot = await downloadRepo('ludic/tokenizer-only', { ...online(newCache()), files: 'tokenizer' })
    expect(await readdir(snapshot)).toEqual(['tokenizer.json'])
  })
})
