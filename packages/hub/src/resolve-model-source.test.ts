import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { InvalidArgumentError } from '@ludic/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { resolveModelSource } from './resolve-model-source.js'
import { singleFileRepo } from './test/tiny-repo.js'
import { createFakeHub, type FakeHub } from './testing/fake-hub.js'

let hub: FakeHub
let directory: string
beforeAll(async () => {
  hub = await createFakeHub({ repos: [{ id: 'ludic/tiny', files: singleFileRepo(1000), revisions: { v1: singleFileRepo(500) } }] })
  directory = await mkdtemp(join(tmpdir(), 'ludic-hub-source-'))
})
afterAll(async () => {
  await hub.close()
  await rm(directory, { recursive: true, force: true })
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
})
