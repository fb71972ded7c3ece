import { spawn, spawnSync } from 'node:child_process'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { acquireFileLock, type HeldLock } from './file-lock.js'
import { holdWithFlockProgram, untilOutput } from './test/processes.js'

let directory: string
let locks = 0
const newLockPath = () => join(directory, `sub-${locks}`, `lock-${locks++}.lock`)

beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'ludic-hub-lock-'))
})
afterAll(async () => {
  await rm(directory, { recursive: true, force: true, maxRetries: 5 })
})

/** Whether `promise` has settled, checked after the pending I/O callbacks ran. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false
  promise.then(
    () => {
      done = true
    },
    () => {
      done = true
    },
  )
  await new Promise((resolve) => setImmediate(resolve))
  return done
}

describe('acquireFileLock with the flock program (interoperates with Python huggingface_hub)', () => {
  it('the flock program is on this machine (the CI runs on Linux; without it the lock falls back to a lock file)', () => {
    expect(spawnSync('flock', ['-V'], { encoding: 'utf8' }).error).toBeUndefined()
  })

  it('waits while another process holds a BSD flock on the file (what Python filelock takes), and takes it once released', async () => {
    const path = newLockPath()
    const holder = await holdWithFlockProgram(path)
    let waits = 0
    let waiting!: () => void
    const startedWaiting = new Promise<void>((resolve) => {
      waiting = resolve
    })
    const acquiring = acquireFileLock(path, {
      onWait: () => {
        waits++
        waiting()
      },
    })
    await startedWaiting
    expect(await settled(acquiring)).toBe(false)
    await holder.release()
    const lock = await acquiring
    expect(lock).toMatchObject({ path, mechanism: 'flock' })
    expect(waits).toBe(1)
    // While Ludic holds it, the flock program cannot take it.
    expect(spawnSync('flock', ['-x', '-n', path, 'true']).status).toBe(1)
    await lock.release()
    await lock.release()
    expect(spawnSync('flock', ['-x', '-n', path, 'true']).status).toBe(0)
  })

  it('keeps two holders in one process apart, and an abort ends the wait with the signal reason', async () => {
    const path = newLockPath()
    const first = await acquireFileLock(path)
    const controller = new AbortController()
    const reason = new Error('stop waiting')
    const second = acquireFileLock(path, { signal: controller.signal, onWait: () => controller.abort(reason) })
    await expect(second).rejects.toBe(reason)
    await first.release()
    const third = await acquireFileLock(path)
    await third.release()
    await expect(acquireFileLock(path, { signal: AbortSignal.abort(reason) })).rejects.toBe(reason)
  })

  it('is released when the process holding it is killed (SIGKILL): a dead holder never blocks the cache', async () => {
    const path = newLockPath()
    const module = fileURLToPath(new URL('./file-lock.ts', import.meta.url))
    const script = `
      import { acquireFileLock } from ${JSON.stringify(module)}
      await acquireFileLock(${JSON.stringify(path)})
      process.stdout.write('locked')
      setInterval(() => {}, 1000)
    `
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '--eval', script], {
      cwd: fileURLToPath(new URL('.', import.meta.url)),
      stdio: 'pipe',
    })
    await untilOutput(child, 'locked')
    expect(spawnSync('flock', ['-x', '-n', path, 'true']).status).toBe(1)
    const closed = new Promise((resolve) => child.once('close', resolve))
    child.kill('SIGKILL')
    await closed
    const lock = await acquireFileLock(path, { signal: AbortSignal.timeout(30_000) })
    await lock.release()
  })
})

describe('acquireFileLock with a lock file (where no flock program exists; Ludic to Ludic)', () => {
  it('keeps a second holder waiting until the first releases, then removes the lock file', async () => {
    const path = newLockPath()
    const first = await acquireFileLock(path, { mechanism: 'lock-file' })
    expect(first.mechanism).toBe('lock-file')
    expect(JSON.parse(await readFile(`${path}.ludic`, 'utf8'))).toMatchObject({ pid: process.pid, host: hostname() })
    let waiting!: () => void
    const startedWaiting = new Promise<void>((resolve) => {
      waiting = resolve
    })
    const second = acquireFileLock(path, { mechanism: 'lock-file', onWait: () => waiting() })
    await startedWaiting
    expect(await settled(second)).toBe(false)
    await first.release()
    const held: HeldLock = await second
    await held.release()
    await expect(readFile(`${path}.ludic`)).rejects.toMatchObject({ code: 'ENOENT' })
  })

  it('takes over a lock file whose owner process is gone, and waits for one whose owner runs', async () => {
    const path = newLockPath()
    await acquireFileLock(path, { mechanism: 'lock-file' }).then((lock) => lock.release())
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' })
    await writeFile(`${path}.ludic`, JSON.stringify({ pid: Number(dead.stdout), host: hostname(), token: 'old' }))
    const lock = await acquireFileLock(path, { mechanism: 'lock-file', signal: AbortSignal.timeout(30_000) })
    await lock.release()
    // Held by a live process (this one, under another token): the wait goes on until the signal ends it.
    await writeFile(`${path}.ludic`, JSON.stringify({ pid: process.pid, host: hostname(), token: 'other' }))
    const controller = new AbortController()
    const reason = new Error('gave up')
    await expect(acquireFileLock(path, { mechanism: 'lock-file', signal: controller.signal, onWait: () => controller.abort(reason) })).rejects.toBe(reason)
    expect(JSON.parse(await readFile(`${path}.ludic`, 'utf8'))).toMatchObject({ token: 'other' })
  })
})
