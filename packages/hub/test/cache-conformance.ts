import { createHash } from 'node:crypto'
import { lstat, mkdir, readdir, readFile, readlink, symlink, writeFile } from 'node:fs/promises'
import { dirname, join, sep } from 'node:path'
import type { FakeHubRepoInput } from '../src/testing/fake-hub.js'
import { shardedRepo, singleFileRepo } from '../src/test/tiny-repo.js'

/**
 * The repositories, the downloads and the cache listing of the Python conformance fixture
 * (`fixtures/python-conformance.json`, written by `record-python-conformance.ts`).
 */

export const conformanceRepos: FakeHubRepoInput[] = [
  { id: 'ludic-test/tiny', files: singleFileRepo(64 * 1024) },
  { id: 'ludic-test/sharded', files: { 'config.json': '{}' }, revisions: { v1: shardedRepo() } },
]

/** What each side downloads: the files of Ludic's `'model'` preset, and the optional ones the repository lacks. */
export const conformancePlan = [
  {
    repo: 'ludic-test/tiny',
    revision: 'main',
    files: ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json', 'model.safetensors'],
    absent: ['special_tokens_map.json'],
  },
  {
    repo: 'ludic-test/sharded',
    revision: 'v1',
    files: ['config.json', 'tokenizer.json', 'model.safetensors.index.json', 'model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors'],
    absent: ['generation_config.json', 'tokenizer_config.json', 'special_tokens_map.json'],
  },
]

/** One entry of a cache listing: a folder, a file (size and SHA-256) or a symbolic link (its target as written). */
export type CacheEntry =
  | { path: string; type: 'dir' }
  | { path: string; type: 'file'; size: number; sha256: string; text?: string }
  | { path: string; type: 'link'; target: string }

/** Every entry under `cacheDir` except Python's `.locks` folder, sorted by path; `refs/` files and `CACHEDIR.TAG` with their text. */
export async function listCache(cacheDir: string): Promise<CacheEntry[]> {
  const entries: CacheEntry[] = []
  for (const name of await readdir(cacheDir, { recursive: true })) {
    const path = name.split(sep).join('/')
    if (path === '.locks' || path.startsWith('.locks/')) continue
    const full = join(cacheDir, name)
    const stats = await lstat(full)
    if (stats.isSymbolicLink()) entries.push({ path, type: 'link', target: await readlink(full) })
    else if (stats.isDirectory()) entries.push({ path, type: 'dir' })
    else {
      const bytes = await readFile(full)
      const sha256 = createHash('sha256').update(bytes).digest('hex')
      entries.push({
        path,
        type: 'file',
        size: bytes.byteLength,
        sha256,
        ...(path.includes('/refs/') || path === 'CACHEDIR.TAG' ? { text: bytes.toString('utf8') } : {}),
      })
    }
  }
  return entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))
}

/** Contents of every file of the conformance repositories, by SHA-256. */
function contentsBySha256(): Map<string, Uint8Array> {
  const contents = new Map<string, Uint8Array>()
  for (const repo of conformanceRepos) {
    for (const files of [repo.files, ...Object.values(repo.revisions ?? {})]) {
      for (const content of Object.values(files)) {
        const bytes = typeof content === 'string' ? new TextEncoder().encode(content) : content
        contents.set(createHash('sha256').update(bytes).digest('hex'), bytes)
      }
    }
  }
  return contents
}

/** Rebuilds a cache from a listing (as Python wrote it): folders, blobs (from the repositories' contents), links, refs, `.no_exist` markers. */
export async function materializeCache(cacheDir: string, listing: readonly CacheEntry[]): Promise<void> {
  const contents = contentsBySha256()
  for (const entry of listing) {
    const full = join(cacheDir, entry.path)
    if (entry.type === 'dir') await mkdir(full, { recursive: true })
    else if (entry.type === 'link') {
      await mkdir(dirname(full), { recursive: true })
      await symlink(entry.target, full)
    } else {
      await mkdir(dirname(full), { recursive: true })
      const bytes = entry.text !== undefined ? new TextEncoder().encode(entry.text) : entry.size === 0 ? new Uint8Array() : contents.get(entry.sha256)
      if (bytes === undefined) throw new Error(`no content with SHA-256 ${entry.sha256} for ${entry.path}`)
      await writeFile(full, bytes)
    }
  }
}
