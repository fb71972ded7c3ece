import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { closeSync, openSync, writeSync } from 'node:fs'
import { mkdir, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { FileSystemError, InvalidArgumentError, ParseError } from '@ludic/core'
import { beforeAll, describe, expect, it } from 'vitest'
import { type DownloadWait, downloadRepo } from './download-repo.js'
import type { HubError } from './hub-error.js'
import { hubRequest, type HubRequestContext } from './hub-http.js'
import { holdWithFlockProgram, untilOutput } from './test/processes.js'
import { seededBytes, singleFileRepo, tinyConfig, tinyTokenizer } from './test/tiny-repo.js'
import { useFakeHub } from './test/use-fake-hub.js'
import { createFakeHub, type FakeHub, type FakeHubRepoInput } from './testing/fake-hub.js'

const weightBytes = 256 * 1024
const longShard = `${'x'.repeat(300)}.safetensors`
const repos: FakeHubRepoInput[] = [
  { id: 'ludic/tiny', files: singleFileRepo(weightBytes) },
  { id: 'ludic/gated', files: singleFileRepo(1000), gated: true, grantedTokens: ['hf_granted'] },
  {
    id: 'ludic/long-shard',
    files: {
      'config.json': tinyConfig,
      'tokenizer.json': tinyTokenizer,
      'model.safetensors.index.json': JSON.stringify({ weight_map: { 'a.weight': longShard } }),
      [longShard]: seededBytes(100, 3),
    },
  },
]

const fake = useFakeHub({ repos }, 'ludic-hub-hardening-')
let hub: FakeHub
let _directory: string
beforeAll(() => {
  hub = fake.hub()
  _directory = fake.directory()
})
const newCache = fake.newCache
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex')
const online = (cacheDir: string) => ({ cacheDir, endpoint: hub.endpoint, token: false as const, offline: false })
const weights = () => hub.fileInfo('ludic/tiny', 'model.safetensors')
const blobOf = (cacheDir: string, sha: string) => join(cacheDir, 'models--ludic--tiny', 'blobs', sha)
const cdnGets = (of: FakeHub = hub) => of.requests.filter((request) => request.method === 'GET' && request.path.startsWith('cdn/'))

/** Polls `condition` every 20 ms, at most 1500 times (30 s): the bounded wait of the cross-process tests. */
async function until(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let round = 0; round < 1500; round++) {
    if (await condition()) return
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  throw new Error(`gave up waiting for ${what}`)
}

/** `downloadRepo('ludic/tiny')` in a process of its own; it prints `waiting` when it waits for another process's lock. */
function downloadInAnotherProcess(cacheDir: string): { child: ChildProcessWithoutNullStreams; exit: Promise<{ code: number | null; stderr: string }> } {
  const module = fileURLToPath(new URL('./download-repo.ts', import.meta.url))
  const script = `
    import { downloadRepo } from ${JSON.stringify(module)}
    const snapshot = await downloadRepo('ludic/tiny', {
      cacheDir: ${JSON.stringify(cacheDir)}, endpoint: ${JSON.stringify(hub.endpoint)}, token: false, offline: false,
      onWait: () => process.stdout.write('waiting\\n'),
    })
    process.stdout.write('done ' + snapshot + '\\n')
  `
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '--eval', script], {
    cwd: fileURLToPath(new URL('.', import.meta.url)),
    stdio: 'pipe',
  })
  let stderr = ''
  child.stderr.on('data', (piece: Buffer) => {
    stderr += piece.toString()
  })
  const exit = new Promise<{ code: number | null; stderr: string }>((resolve) => child.on('close', (code) => resolve({ code, stderr })))
  return { child, exit }
}

describe('downloadRepo between processes: the blob lock Python huggingface_hub takes, and a check of what is on disk', () => {
  it('two processes downloading one blob from a CDN that ignores Range both succeed, and the blob is the file (the second waits for the first)', async () => {
    const cacheDir = newCache()
    const blob = blobOf(cacheDir, weights().sha256)
    hub.injectFault({ kind: 'pause', file: 'model.safetensors', afterBytes: 100_000 })
    hub.injectFault({ kind: 'ignore-range', file: 'model.safetensors', times: 10 })
    const first = downloadInAnotherProcess(cacheDir)
    // The first process has written part of the file and waits for the rest.
    await until(async () => ((await stat(`${blob}.incomplete`).catch(() => undefined))?.size ?? 0) >= 100_000, 'the first partial file')
    const second = downloadInAnotherProcess(cacheDir)
    const secondState = await Promise.race([untilOutput(second.child, 'waiting').then(() => 'waiting'), second.exit.then(() => 'exited')])
    expect(hub.releasePaused()).toBe(1)
    const [firstExit, secondExit] = await Promise.all([first.exit, second.exit])
    expect(firstExit.code, firstExit.stderr).toBe(0)
    expect(secondExit.code, secondExit.stderr).toBe(0)
    expect(secondState).toBe('waiting')
    expect(sha256(await readFile(blob))).toBe(weights().sha256)
    // The second process used the first one's blob: one transfer in all.
    expect(cdnGets()).toHaveLength(1)
  })

  it('waits while Python holds the blob lock (.locks/models--owner--name/<etag>.lock, a BSD flock), then uses the blob Python finished', async () => {
    const cacheDir = newCache()
    const lockPath = join(cacheDir, '.locks', 'models--ludic--tiny', `${weights().sha256}.lock`)
    const python = await holdWithFlockProgram(lockPath)
    const waits: DownloadWait[] = []
    let waiting!: () => void
    const startedWaiting = new Promise<string>((resolve) => {
      waiting = () => resolve('waiting')
    })
    const download = downloadRepo('ludic/tiny', {
      ...online(cacheDir),
      onWait: (event) => {
        waits.push(event)
        waiting()
      },
    })
    expect(await Promise.race([startedWaiting, download.then(() => 'finished without waiting')])).toBe('waiting')
    expect(waits).toEqual([{ repoId: 'ludic/tiny', file: 'model.safetensors', lockPath }])
    expect(cdnGets()).toEqual([])
    // "Python" finishes the blob, then releases its lock: nothing is downloaded again.
    await writeFile(blobOf(cacheDir, weights().sha256), seededBytes(weightBytes, 7))
    await python.release()
    const snapshot = await download
    expect(sha256(await readFile(join(snapshot, 'model.safetensors')))).toBe(weights().sha256)
    expect(cdnGets()).toEqual([])
  })

  // Opt-in: LUDIC_HUB_PYTHON=/path/to/python (with huggingface_hub, hence filelock) takes the lock with Python's own filelock.
  const python = process.env.LUDIC_HUB_PYTHON
  it.runIf(python !== undefined)(
    '[opt-in] a lock held by Python filelock blocks the download until released, and Python cannot take one Ludic holds',
    async () => {
      const cacheDir = newCache()
      const lockPath = join(cacheDir, '.locks', 'models--ludic--tiny', `${weights().sha256}.lock`)
      await mkdir(join(cacheDir, '.locks', 'models--ludic--tiny'), { recursive: true })
      const holder = spawn(
        python!,
        ['-c', 'import sys\nfrom filelock import FileLock\nwith FileLock(sys.argv[1]):\n    print("held", flush=True)\n    sys.stdin.read()', lockPath],
        { stdio: 'pipe' },
      )
      await untilOutput(holder, 'held')
      let waiting!: () => void
      const startedWaiting = new Promise<string>((resolve) => {
        waiting = () => resolve('waiting')
      })
      const download = downloadRepo('ludic/tiny', { ...online(cacheDir), onWait: () => waiting() })
      expect(await Promise.race([startedWaiting, download.then(() => 'finished without waiting')])).toBe('waiting')
      expect(cdnGets()).toEqual([])
      const released = new Promise((resolve) => holder.once('close', resolve))
      holder.stdin.end()
      await released
      const snapshot = await download
      expect(sha256(await readFile(join(snapshot, 'model.safetensors')))).toBe(weights().sha256)
      // The other way round: while Ludic holds the lock, Python's filelock cannot take it.
      const { acquireFileLock } = await import('./file-lock.js')
      const lock = await acquireFileLock(lockPath)
      try {
        const probe = spawn(
          python!,
          [
            '-c',
            'import sys\nfrom filelock import FileLock, Timeout\ntry:\n    FileLock(sys.argv[1]).acquire(timeout=0)\n    print("taken")\nexcept Timeout:\n    print("busy")',
            lockPath,
          ],
          { stdio: 'pipe' },
        )
        await untilOutput(probe, 'busy')
      } finally {
        await lock.release()
      }
    },
  )

  it('downloads the blob itself once a lock holder released it without finishing', async () => {
    const cacheDir = newCache()
    const python = await holdWithFlockProgram(join(cacheDir, '.locks', 'models--ludic--tiny', `${weights().sha256}.lock`))
    let waiting!: () => void
    const startedWaiting = new Promise<void>((resolve) => {
      waiting = resolve
    })
    const download = downloadRepo('ludic/tiny', { ...online(cacheDir), onWait: () => waiting() })
    await Promise.race([startedWaiting, download])
    await python.release()
    const snapshot = await download
    expect(sha256(await readFile(join(snapshot, 'model.safetensors')))).toBe(weights().sha256)
    expect(cdnGets()).toHaveLength(1)
  })

  it('checks the SHA-256 of what is on disk, not of the bytes it received: a partial file changed behind its back is refused', async () => {
    const cacheDir = newCache()
    const incomplete = `${blobOf(cacheDir, weights().sha256)}.incomplete`
    let overwritten = false
    const error = await downloadRepo('ludic/tiny', {
      ...online(cacheDir),
      onProgress: (event) => {
        if (event.file !== 'model.safetensors' || event.bytesDone === 0 || overwritten) return
        // Another writer (a process that ignores the lock) puts zeros over the start of the partial file.
        overwritten = true
        const handle = openSync(incomplete, 'r+')
        writeSync(handle, new Uint8Array(64), 0, 64, 0)
        closeSync(handle)
      },
    }).catch((caught: unknown) => caught)
    expect(overwritten).toBe(true)
    expect(error).toMatchObject({ reason: 'integrity', file: 'model.safetensors' })
    expect((error as HubError).message).toMatch(/has SHA-256 [0-9a-f]{64} on disk, the Hub announced [0-9a-f]{64}; the partial file was deleted/)
    expect(await readdir(join(cacheDir, 'models--ludic--tiny', 'blobs'))).not.toContain(weights().sha256)
  })
})

describe('downloadRepo sends the token to the Hub origin only', () => {
  it('not to another port of the same host a file is redirected to', async () => {
    const otherPort = await createFakeHub({ repos })
    const redirecting = await createFakeHub({ repos, cdnOrigin: otherPort.endpoint })
    try {
      expect(new URL(otherPort.endpoint).hostname).toBe(new URL(redirecting.endpoint).hostname)
      const snapshot = await downloadRepo('ludic/gated', { cacheDir: newCache(), endpoint: redirecting.endpoint, token: 'hf_granted', offline: false })
      expect(sha256(await readFile(join(snapshot, 'model.safetensors')))).toBe(redirecting.fileInfo('ludic/gated', 'model.safetensors').sha256)
      expect(redirecting.requests.every((request) => request.authorization === 'Bearer hf_granted')).toBe(true)
      expect(otherPort.requests.length).toBeGreaterThan(0)
      expect(otherPort.requests.map((request) => request.authorization)).toEqual(otherPort.requests.map(() => undefined))
    } finally {
      await redirecting.close()
      await otherPort.close()
    }
  })

  it('not over plain http to the host of an https Hub, nor to another port or host; yes to the same origin however it is spelled', async () => {
    const sent: (string | null)[] = []
    const recorder = (async (_url: string | URL | Request, init?: RequestInit) => {
      sent.push(new Headers(init?.headers).get('authorization'))
      return new Response('')
    }) as typeof fetch
    const context: HubRequestContext = {
      repoId: 'ludic/tiny',
      revision: 'main',
      endpoint: 'https://hub.example',
      token: 'hf_secret',
      fetch: recorder,
      signal: undefined,
      timeoutMs: 1000,
    }
    for (const url of ['https://hub.example/a', 'http://hub.example/a', 'https://hub.example:8443/a', 'https://cdn.example/a', 'HTTPS://HUB.EXAMPLE:443/b']) {
      const { timeout } = await hubRequest(context, url, { method: 'GET' }, 'test')
      timeout.dispose()
    }
    expect(sent).toEqual(['Bearer hf_secret', null, null, null, 'Bearer hf_secret'])
  })
})

describe('downloadRepo bounds each file in time as a whole (fileTimeoutMs)', () => {
  it('cuts a drip-fed download (never silent for timeoutMs) at fileTimeoutMs, keeps what arrived, and does not retry past it', async () => {
    const cacheDir = newCache()
    hub.injectFault({ kind: 'drip', file: 'model.safetensors', intervalMs: 20, bytes: 16 })
    const error = await downloadRepo('ludic/tiny', { ...online(cacheDir), retries: 3, timeoutMs: 10_000, fileTimeoutMs: 600 }).catch(
      (caught: unknown) => caught,
    )
    expect(error).toMatchObject({ reason: 'network', file: 'model.safetensors' })
    expect((error as HubError).message).toMatch(
      new RegExp(
        `^The download of model\\.safetensors took longer than fileTimeoutMs \\(600 ms\\)\\. \\d+ of ${weightBytes} bytes of model\\.safetensors are kept`,
      ),
    )
    expect((await stat(`${blobOf(cacheDir, weights().sha256)}.incomplete`)).size).toBeGreaterThan(0)
    expect(cdnGets()).toHaveLength(1)
  })

  it('bounds the repository listing the same way', async () => {
    const dripping = (async (url: string | URL | Request, init?: RequestInit) => {
      if (!String(url).includes('/api/models/')) return fetch(url, init)
      // A body that gets a space every 20 ms and, as fetch's do, fails when the request's signal aborts.
      let timer: ReturnType<typeof setInterval> | undefined
      const body = new ReadableStream<Uint8Array>({
        start: (controller) => {
          controller.enqueue(new TextEncoder().encode('{'))
          timer = setInterval(() => controller.enqueue(new TextEncoder().encode(' ')), 20)
          init?.signal?.addEventListener(
            'abort',
            () => {
              clearInterval(timer)
              controller.error(init.signal?.reason)
            },
            { once: true },
          )
        },
        cancel: () => clearInterval(timer),
      })
      return new Response(body, { status: 200, headers: { 'content-type': 'application/json' } })
    }) as typeof fetch
    const error = await downloadRepo('ludic/tiny', { ...online(newCache()), fetch: dripping, timeoutMs: 10_000, fileTimeoutMs: 300 }).catch(
      (caught: unknown) => caught,
    )
    expect(error).toMatchObject({ reason: 'network', repoId: 'ludic/tiny' })
    expect((error as HubError).message).toMatch(
      /^The request to read http:\/\/127\.0\.0\.1:\d+\/api\/models\/ludic\/tiny\/revision\/main took longer than fileTimeoutMs \(300 ms\)\.$/,
    )
  })

  it('counts a wait for another process downloading the file, and says which lock it waited for', async () => {
    const cacheDir = newCache()
    const lockPath = join(cacheDir, '.locks', 'models--ludic--tiny', `${weights().sha256}.lock`)
    const holder = await holdWithFlockProgram(lockPath)
    try {
      const error = await downloadRepo('ludic/tiny', { ...online(cacheDir), fileTimeoutMs: 300 }).catch((caught: unknown) => caught)
      expect(error).toMatchObject({ reason: 'network', file: 'model.safetensors' })
      expect((error as HubError).message).toBe(
        `Waiting for another process downloading model.safetensors (it holds ${lockPath}) took longer than fileTimeoutMs (300 ms).`,
      )
    } finally {
      await holder.release()
    }
  })

  it('refuses a fileTimeoutMs that is not a positive whole number of milliseconds Node can time', async () => {
    for (const fileTimeoutMs of [0, -1, 1.5, 2 ** 31]) {
      const error = await downloadRepo('ludic/tiny', { ...online(newCache()), fileTimeoutMs }).catch((caught: unknown) => caught)
      expect(InvalidArgumentError.isInstance(error) && error.argument, String(fileTimeoutMs)).toBe('options.fileTimeoutMs')
    }
  })
})

describe('downloadRepo names the file when the file system refuses it', () => {
  it('a full disk while writing the partial file is a FileSystemError naming it (ENOSPC), not a network error', async () => {
    const cacheDir = newCache()
    const incomplete = `${blobOf(cacheDir, weights().sha256)}.incomplete`
    await mkdir(join(cacheDir, 'models--ludic--tiny', 'blobs'), { recursive: true })
    // /dev/full answers every write with ENOSPC.
    await symlink('/dev/full', incomplete)
    const error = await downloadRepo('ludic/tiny', online(cacheDir)).catch((caught: unknown) => caught)
    expect(FileSystemError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({ code: 'ENOSPC', path: incomplete, operation: 'write' })
    expect((error as FileSystemError).message).toBe(`Cannot write ${incomplete}: ENOSPC: no space left on device, write`)
    expect(cdnGets()).toHaveLength(1)
  })

  it('a shard whose name is longer than a file name may be is a ParseError naming it and the limit, before any file of it is made', async () => {
    const cacheDir = newCache()
    const error = await downloadRepo('ludic/long-shard', online(cacheDir)).catch((caught: unknown) => caught)
    expect(ParseError.isInstance(error)).toBe(true)
    expect((error as ParseError).message).toMatch(
      /model\.safetensors\.index\.json at weight_map\["a\.weight"\]: shard "x{200}" has a name of 312 bytes \("x{40}"…\), more than the 255 a file name may have/,
    )
    expect(hub.requests.some((request) => request.path.includes(longShard))).toBe(false)
    const blobs = await readdir(join(cacheDir, 'models--ludic--long-shard', 'blobs'))
    expect(blobs).not.toContain(hub.fileInfo('ludic/long-shard', longShard).sha256)
    const asked = await downloadRepo('ludic/tiny', { ...online(newCache()), files: [`dir/${'y'.repeat(256)}`] }).catch((caught: unknown) => caught)
    expect(InvalidArgumentError.isInstance(asked) && asked.argument).toBe('options.files[0]')
    expect((asked as InvalidArgumentError).message).toMatch(/has a name of 256 bytes .*more than the 255 a file name may have/)
  })
})
