/**
 * Records `fixtures/python-conformance.json`: Python's `huggingface_hub` and Ludic each download the
 * conformance repositories from the fake Hub into a cache of their own, then Python reads Ludic's cache with
 * `HF_HUB_OFFLINE=1`. The fixture holds both listings and what Python read; `python-conformance.test.ts`
 * checks Ludic against it on every run, with no Python needed (and, opt-in, against a live Python).
 *
 *     python3 -m venv /tmp/hubvenv && /tmp/hubvenv/bin/pip install huggingface_hub
 *     npx tsx packages/hub/test/record-python-conformance.ts /tmp/hubvenv/bin/python
 */
import { execFile } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { downloadRepo } from '../src/download-repo.js'
import { createFakeHub } from '../src/testing/fake-hub.js'
import { conformancePlan, conformanceRepos, listCache } from './cache-conformance.js'

const script = fileURLToPath(new URL('python-cache.py', import.meta.url))
export const fixturePath = fileURLToPath(new URL('fixtures/python-conformance.json', import.meta.url))

async function runPython(python: string, command: 'download' | 'read', environment: Record<string, string>): Promise<unknown> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('HF_') && name !== 'HUGGING_FACE_HUB_TOKEN'))
  const { stdout } = await promisify(execFile)(python, [script, command, JSON.stringify(conformancePlan)], {
    env: { ...clean, HF_HUB_DISABLE_TELEMETRY: '1', HF_HUB_DISABLE_XET: '1', HF_HUB_DISABLE_PROGRESS_BARS: '1', ...environment },
  })
  return JSON.parse(stdout) as unknown
}

/** Runs both sides with the Python interpreter `python` (which has `huggingface_hub`) and returns the record. */
export async function recordPythonConformance(python: string): Promise<Record<string, unknown>> {
  const hub = await createFakeHub({ repos: conformanceRepos })
  const pythonCache = await mkdtemp(join(tmpdir(), 'ludic-python-cache-'))
  const ludicCache = await mkdtemp(join(tmpdir(), 'ludic-ludic-cache-'))
  try {
    const downloaded = await runPython(python, 'download', { HF_ENDPOINT: hub.endpoint, HF_HUB_CACHE: pythonCache, HF_HOME: pythonCache })
    for (const { repo, revision } of conformancePlan)
      await downloadRepo(repo, { revision, cacheDir: ludicCache, endpoint: hub.endpoint, token: false, offline: false })
    const read = await runPython(python, 'read', { HF_HUB_OFFLINE: '1', HF_HUB_CACHE: ludicCache, HF_HOME: ludicCache })
    return {
      about:
        'Written by record-python-conformance.ts: the cache Python huggingface_hub wrote from the fake Hub, the one Ludic wrote, and what Python read from Ludic offline.',
      python: downloaded,
      pythonListing: await listCache(pythonCache),
      ludicListing: await listCache(ludicCache),
      pythonReadsLudicCache: read,
    }
  } finally {
    await hub.close()
    await rm(pythonCache, { recursive: true, force: true, maxRetries: 5 })
    await rm(ludicCache, { recursive: true, force: true, maxRetries: 5 })
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const record = await recordPythonConformance(process.argv[2] ?? 'python3')
  await writeFile(fixturePath, `${JSON.stringify(record, null, 1)}\n`)
  console.log(`wrote ${fixturePath}`)
}
