import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { InvalidArgumentError } from '@ludic/core'
import { HubError } from './hub-error.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { resolveModelSource } from './resolve-model-source.js'
import { singleFileRepo } from './test/tiny-repo.js'
import { createFakeHub, type FakeHub } from './testing/fake-hub.js'

let hub: FakeHub
let directory: string
beforeAll(async () => {
  hub = await createFakeHub({
    repos: [
      { id: 'ludic/tiny', files: singleFileRepo(1000), revisions: { v1: singleFileRepo(500) } },
      { id: 'ludic/gated', files: singleFileRepo(1000), gated: true },
    ],
  })
  directory = await mkdtemp(join(tmpdir(), 'ludic-hub-source-'))
})
afterAll(async () => {
  await hub.close()
  await rm(directory, { recursive: true, force: true, maxRetries: 5 })
})

const throwingFetch = (() => {
  throw new Error('no network in this test')
}) as unknown as typeof fetch

describe('resolveModelSource', () => {
  it('returns a local path as it is, without the network', async () => {
    await expect(resolveModelSource(directory, { fetch: throwingFetch })).resolves.toBe(directory)
  })

  it('downloads a repository id, with an @revision', async () => {
    const cacheDir = join(directory, 'cache')
    const options = { cacheDir, endpoint: hub.endpoint, token: false as const, offline: false }
    await expect(resolveModelSource('ludic/tiny', options)).resolves.toBe(join(cacheDir, 'models--ludic--tiny', 'snapshots', hub.commitOf('ludic/tiny')))
    await expect(resolveModelSource('ludic/tiny@v1', options)).resolves.toBe(
      join(cacheDir, 'models--ludic--tiny', 'snapshots', hub.commitOf('ludic/tiny', 'v1')),
    )
  })

  it('refuses what is neither an existing path nor a repository id', async () => {
    for (const value of [join(directory, 'missing'), './no/such/dir', '', 42]) {
      const error = await resolveModelSource(value as string, { fetch: throwingFetch }).catch((caught: unknown) => caught)
      expect(InvalidArgumentError.isInstance(error) && error.argument, String(value)).toBe('pathOrRepoId')
    }
  })

  it('says what it tried, as not found (missing), when a path shaped like owner/name is neither a local folder nor on the Hub', async () => {
    // `runs/model` is a typo of the run folder `runs/kuhn/model`.
    const base = join(directory, 'project')
    await mkdir(join(base, 'runs', 'kuhn', 'model'), { recursive: true })
    const local = join(base, 'runs', 'model')
    const offline = { base, cacheDir: join(directory, 'empty-cache'), token: false as const }
    const tried = `No model at 'runs/model': tried the local path ${local}, which does not exist \\(${join(base, 'runs')} holds kuhn\\), then the Hugging Face Hub: `
    const unreachable = await resolveModelSource('runs/model', { ...offline, offline: false, endpoint: 'http://127.0.0.1:9' }).catch((error: unknown) => error)
    expect(unreachable).toMatchObject({ name: 'HubError', reason: 'missing', repoId: 'runs/model', cause: { reason: 'network' } })
    expect((unreachable as HubError).message).toMatch(
      new RegExp(`^${tried}the Hub could not say whether a repository of that name exists \\(Cannot list runs/model from http://127\\.0\\.0\\.1:9`),
    )
    const noSuchRepo = await resolveModelSource('runs/model', { ...offline, offline: false, endpoint: hub.endpoint }).catch((error: unknown) => error)
    expect(noSuchRepo).toMatchObject({ reason: 'missing', status: 401, cause: { reason: 'missing' } })
    expect((noSuchRepo as HubError).message).toMatch(new RegExp(`^${tried}the Hub has no repository runs/model \\(Repository runs/model not found`))
    const offlineCache = await resolveModelSource('runs/model', { ...offline, offline: true }).catch((error: unknown) => error)
    expect(offlineCache).toMatchObject({ reason: 'missing', cause: { reason: 'offline' } })
    expect((offlineCache as HubError).message).toMatch(
      new RegExp(`^${tried}the Hub cache has no copy of a repository of that name, and the Hub was not asked \\(offline\\)`),
    )
    // The local folder wins, found against the base folder.
    await expect(resolveModelSource('runs/kuhn', { ...offline, fetch: throwingFetch })).resolves.toBe(join(base, 'runs', 'kuhn'))
    // A repository that exists but refuses is the Hub's own error.
    const gated = await resolveModelSource('ludic/gated', { ...offline, offline: false, endpoint: hub.endpoint }).catch((error: unknown) => error)
    expect(HubError.isInstance(gated) && gated.reason).toBe('gated')
  })
})
