import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { downloadRepo } from '../src/download-repo.js'
import { createFakeHub, type FakeHub } from '../src/testing/fake-hub.js'
import { type CacheEntry, conformancePlan, conformanceRepos, listCache, materializeCache } from './cache-conformance.js'
import { recordPythonConformance } from './record-python-conformance.js'

/**
 * Ludic's cache against Python's `huggingface_hub`, through `fixtures/python-conformance.json`, which
 * `record-python-conformance.ts` wrote by running Python (2.0.0) against the fake Hub: the cache Python wrote,
 * the cache Ludic wrote, and what Python read from Ludic's cache with `HF_HUB_OFFLINE=1`.
 */
interface PythonRead {
  results: {
    repo: string
    revision: string
    files: Record<string, { path: string; sha256: string }>
    absent: Record<string, string>
    snapshot_download: string
  }[]
  scan_cache_dir: { repo_id: string; repo_type: string; revisions: { commit_hash: string; refs: string[]; files: string[] }[] }[]
  warnings: string[]
}
const fixture = JSON.parse(readFileSync(new URL('fixtures/python-conformance.json', import.meta.url), 'utf8')) as {
  python: { huggingface_hub: string }
  pythonListing: CacheEntry[]
  ludicListing: CacheEntry[]
  pythonReadsLudicCache: PythonRead
}

const cacheDirTagSignature = 'Signature: 8a477f597d28d172789f06886806bc55\n'

/** The listing with `CACHEDIR.TAG` reduced to its signature line (the comment lines name who wrote it). */
function comparable(listing: readonly CacheEntry[]): unknown[] {
  return listing.map((entry) =>
    entry.path === 'CACHEDIR.TAG' && entry.type === 'file' ? { path: entry.path, signature: entry.text?.startsWith(cacheDirTagSignature) } : entry,
  )
}

const throwingFetch = (() => {
  throw new Error('no network in this test')
}) as unknown as typeof fetch

let hub: FakeHub
let directory: string
beforeAll(async () => {
  hub = await createFakeHub({ repos: conformanceRepos })
  directory = await mkdtemp(join(tmpdir(), 'ludic-hub-conformance-'))
})
afterAll(async () => {
  await hub.close()
  await rm(directory, { recursive: true, force: true, maxRetries: 5 })
})

describe('the cache layout of Python huggingface_hub (recorded fixture)', () => {
  it('was recorded with Python and covers both repositories', () => {
    expect(fixture.python.huggingface_hub).toMatch(/^\d+\.\d+/)
    const snapshotLinks = fixture.pythonListing.filter((entry) => entry.type === 'link')
    expect(snapshotLinks).toHaveLength(conformancePlan.reduce((sum, repo) => sum + repo.files.length, 0))
  })

  it('Ludic writes the cache Python writes: same folders, blob names, relative links, refs and .no_exist markers', async () => {
    const cacheDir = join(directory, 'ludic')
    for (const { repo, revision } of conformancePlan) await downloadRepo(repo, { revision, cacheDir, endpoint: hub.endpoint, token: false, offline: false })
    const listing = await listCache(cacheDir)
    expect(comparable(listing)).toEqual(comparable(fixture.pythonListing))
    // Python's offline reads below were of this very layout.
    expect(listing).toEqual(fixture.ludicListing)
  })

  it('Ludic reads a cache Python wrote, with no network', async () => {
    const cacheDir = join(directory, 'python')
    await materializeCache(cacheDir, fixture.pythonListing)
    for (const { repo, revision, files } of conformancePlan) {
      const snapshot = await downloadRepo(repo, { revision, cacheDir, endpoint: hub.endpoint, fetch: throwingFetch })
      expect(relative(cacheDir, snapshot)).toBe(join(`models--${repo.replace('/', '--')}`, 'snapshots', hub.commitOf(repo, revision)))
      for (const file of files) {
        const sha256 = createHash('sha256')
          .update(await readFile(join(snapshot, file)))
          .digest('hex')
        expect(sha256, file).toBe(hub.fileInfo(repo, file, revision).sha256)
      }
      // Offline too (the .no_exist markers Python wrote settle the optional files).
      await expect(downloadRepo(repo, { revision, cacheDir, offline: true, fetch: throwingFetch })).resolves.toBe(snapshot)
    }
    // Nothing was written to Python's cache.
    expect(await listCache(cacheDir)).toEqual(fixture.pythonListing)
  })

  it('Python read the cache Ludic wrote, offline: every file, every absent file as EntryNotFoundError, scan_cache_dir without warnings', () => {
    const read = fixture.pythonReadsLudicCache
    expect(read.results.map((result) => result.repo)).toEqual(conformancePlan.map((plan) => plan.repo))
    for (const [index, plan] of conformancePlan.entries()) {
      const result = read.results[index]!
      const commit = hub.commitOf(plan.repo, plan.revision)
      const snapshot = `models--${plan.repo.replace('/', '--')}/snapshots/${commit}`
      expect(result.snapshot_download).toBe(snapshot)
      expect(Object.keys(result.files).sort()).toEqual([...plan.files].sort())
      for (const file of plan.files)
        expect(result.files[file]).toEqual({ path: `${snapshot}/${file}`, sha256: hub.fileInfo(plan.repo, file, plan.revision).sha256 })
      expect(result.absent).toEqual(Object.fromEntries(plan.absent.map((file) => [file, 'EntryNotFoundError'])))
    }
    expect(read.warnings).toEqual([])
    expect(read.scan_cache_dir).toEqual(
      conformancePlan
        .map((plan) => ({
          repo_id: plan.repo,
          repo_type: 'model',
          revisions: [{ commit_hash: hub.commitOf(plan.repo, plan.revision), refs: [plan.revision], files: [...plan.files].sort() }],
        }))
        .sort((a, b) => a.repo_id.localeCompare(b.repo_id)),
    )
  })

  // Opt-in: LUDIC_HUB_PYTHON=/path/to/python (with huggingface_hub installed) runs both sides live.
  const python = process.env.LUDIC_HUB_PYTHON
  it.runIf(python !== undefined)('[opt-in] a live Python huggingface_hub still writes and reads what the fixture records', async () => {
    const live = (await recordPythonConformance(python!)) as typeof fixture
    expect(comparable(live.pythonListing)).toEqual(comparable(fixture.pythonListing))
    expect(live.ludicListing).toEqual(fixture.ludicListing)
    expect({ ...live.pythonReadsLudicCache, huggingface_hub: undefined }).toEqual({ ...fixture.pythonReadsLudicCache, huggingface_hub: undefined })
  })
})
