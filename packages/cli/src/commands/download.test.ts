import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdir, readdir } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createFakeHub, type FakeHub, filesFromDirectory } from '@ludic/hub/testing'
import { loadModel } from '@ludic/model'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../cli.js'
import { exitCodes } from '../errors.js'
import { captureIo, saveTinyModel, useBackendAndDirectory } from '../test/support.js'
import type { DownloadSummary } from './download.js'

const temporaryDirectory = useBackendAndDirectory('ludic-cli-download-')
let hub: FakeHub
let tinyFiles: Record<string, Uint8Array>
const environment = { HF_ENDPOINT: process.env.HF_ENDPOINT, HF_HUB_CACHE: process.env.HF_HUB_CACHE }

beforeAll(async () => {
  const model = await saveTinyModel(join(temporaryDirectory(), 'tiny'))
  tinyFiles = await filesFromDirectory(model)
  hub = await createFakeHub({ repos: [{ id: 'ludic-test/tiny', files: tinyFiles }] })
  process.env.HF_ENDPOINT = hub.endpoint
  process.env.HF_HUB_CACHE = join(temporaryDirectory(), 'cache')
})
afterAll(async () => {
  for (const [name, value] of Object.entries(environment)) {
    if (value === undefined) delete process.env[name]
    else process.env[name] = value
  }
  await hub?.close()
})

describe('ludic download', () => {
  it('downloads a repo into the Hub cache with a byte progress bar and prints the snapshot directory', async () => {
    const { io, stdout, stderr } = captureIo()
    expect(await runCli(['download', 'ludic-test/tiny', '--cache-dir', join(temporaryDirectory(), 'own-cache')], io)).toBe(exitCodes.ok)
    const directory = stdout().split('\n')[0]!
    expect(directory.startsWith(join(temporaryDirectory(), 'own-cache'))).toBe(true)
    expect(stdout()).toMatch(/\(5 files, \d+\.\d kB\)/)
    expect(stderr()).toMatch(/model\.safetensors \(\d\/\d\) \[#+\] [\d.]+ kB\/[\d.]+ kB/)
    const model = await loadModel(directory)
    expect(model.config.vocabSize).toBe(280)
    model.dispose()
    const json = captureIo()
    expect(await runCli(['--json', 'download', 'ludic-test/tiny', '--tokenizer-only'], json.io)).toBe(exitCodes.ok)
    expect((JSON.parse(json.stdout()) as DownloadSummary).files).toEqual(['tokenizer.json', 'tokenizer_config.json'])
  })

  it('serves a repo id: ludic serve downloads it first', async () => {
    const { io, controller, stdout } = captureIo()
    io.onListening = () => controller.abort()
    expect(await runCli(['serve', 'ludic-test/tiny', '--port', '0'], io)).toBe(exitCodes.interrupted)
    expect(stdout()).toContain('serving ludic-test/tiny at http://127.0.0.1:')
  })
  it('is not found (3) for a missing repo and a network error (4) when the Hub fails', async () => {
    const missing = captureIo()
    expect(await runCli(['download', 'ludic-test/none'], missing.io)).toBe(exitCodes.notFound)
    hub.injectFault({ kind: 'status', route: 'api', status: 503, times: 100 })
    const failing = captureIo()
    expect(await runCli(['download', 'ludic-test/tiny', '--refresh'], failing.io)).toBe(exitCodes.network)
    expect(failing.stderr()).toContain('ludic: ')
  })

  it('exits 130 on Ctrl+C (SIGINT) during a download, the partial file kept', async () => {
    const pausing = await createFakeHub({ repos: [{ id: 'ludic-test/tiny', files: tinyFiles }] })
    pausing.injectFault({ kind: 'pause', file: 'model.safetensors', afterBytes: 1000 })
    const bin = fileURLToPath(new URL('../bin.ts', import.meta.url))
    const cacheDir = join(temporaryDirectory(), 'interrupted-cache')
    const child = spawn(process.execPath, ['--import', 'tsx', bin, 'download', 'ludic-test/tiny', '--cache-dir', cacheDir], {
      cwd: fileURLToPath(new URL('.', import.meta.url)),
      env: { ...process.env, HF_ENDPOINT: pausing.endpoint, HF_HUB_OFFLINE: '', HF_TOKEN: '' },
      stdio: 'pipe',
    })
    let stderr = ''
    child.stderr.on('data', (piece: Buffer) => {
      stderr += piece.toString()
    })
    const exit = new Promise<number | null>((resolve) => child.on('close', resolve))
    const started = () => pausing.requests.some((request) => request.path.startsWith('cdn/') && request.method === 'GET')
    try {
      // Bounded wait (1500 x 20 ms) until the weights' transfer has started and paused.
      for (let round = 0; round < 1500 && !started() && child.exitCode === null; round++) await new Promise((resolve) => setTimeout(resolve, 20))
      expect(started(), stderr).toBe(true)
      child.kill('SIGINT')
      expect(await exit, stderr).toBe(exitCodes.interrupted)
      expect(stderr).toContain('ludic: interrupted (SIGINT)')
      const blobs = await readdir(join(cacheDir, 'models--ludic-test--tiny', 'blobs'))
      expect(blobs.some((name) => name.endsWith('.incomplete'))).toBe(true)
    } finally {
      child.kill('SIGKILL')
      pausing.releasePaused()
      await pausing.close()
    }
  })

  it('a missing local folder shaped like owner/name says no such folder exists and what the Hub answered: not found (3), whether the Hub cannot be reached or has no such repository', async () => {
    const project = join(temporaryDirectory(), 'project')
    await mkdir(join(project, 'runs', 'kuhn', 'model'), { recursive: true })
    const endpoint = process.env.HF_ENDPOINT
    process.env.HF_ENDPOINT = 'http://127.0.0.1:9'
    try {
      const unreachable = captureIo({ cwd: project })
      expect(await runCli(['serve', 'runs/model', '--port', '0'], unreachable.io)).toBe(exitCodes.notFound)
      expect(unreachable.stderr()).toContain(
        `ludic: No model at 'runs/model': tried the local path ${join(project, 'runs', 'model')}, which does not exist (${join(project, 'runs')} holds kuhn), then the Hugging Face Hub: the Hub could not say whether a repository of that name exists (Cannot list runs/model from http://127.0.0.1:9`,
      )
      const emptyHub = await createFakeHub({ repos: [] })
      process.env.HF_ENDPOINT = emptyHub.endpoint
      const missing = captureIo({ cwd: project })
      expect(await runCli(['eval', 'runs/model'], missing.io)).toBe(exitCodes.notFound)
      expect(missing.stderr()).toContain('then the Hugging Face Hub: the Hub has no repository runs/model')
      await emptyHub.close()
    } finally {
      process.env.HF_ENDPOINT = endpoint
    }
  })

  it('says when another process (Python huggingface_hub or Ludic) is downloading the same file, waits for it, then finishes', async () => {
    const cacheDir = join(temporaryDirectory(), 'waiting-cache')
    const sha256 = createHash('sha256').update(tinyFiles['model.safetensors']!).digest('hex')
    const lockPath = join(cacheDir, '.locks', 'models--ludic-test--tiny', `${sha256}.lock`)
    await mkdir(dirname(lockPath), { recursive: true })
    // Holds the lock as Python's filelock does: an exclusive BSD flock on that file.
    const holder = spawn('flock', ['-x', lockPath, '-c', 'printf held; exec cat >/dev/null'], { stdio: 'pipe' })
    await new Promise<void>((resolve) => holder.stdout.once('data', () => resolve()))
    const quiet = await createFakeHub({ repos: [{ id: 'ludic-test/tiny', files: tinyFiles }] })
    const endpoint = process.env.HF_ENDPOINT
    process.env.HF_ENDPOINT = quiet.endpoint
    const { io, stderr } = captureIo()
    let settled = false
    const running = runCli(['download', 'ludic-test/tiny', '--cache-dir', cacheDir], io).finally(() => {
      settled = true
    })
    try {
      for (let round = 0; round < 1500 && !settled && !stderr().includes('waiting for it'); round++) await new Promise((resolve) => setTimeout(resolve, 20))
      expect(stderr()).toContain(`model.safetensors: another process is downloading it; waiting for it (lock ${lockPath})`)
    } finally {
      holder.stdin.end()
      process.env.HF_ENDPOINT = endpoint
    }
    expect(await running, stderr()).toBe(exitCodes.ok)
    await quiet.close()
  })
})
