import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { link, mkdir, readFile, rename, rm, stat, unlink, writeFile } from 'node:fs/promises'
import { hostname } from 'node:os'
import { dirname } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'

/**
 * An exclusive lock between processes on one file of the cache, taken the way Python's `huggingface_hub` takes
 * it, so that Ludic and Python (and two Ludic processes) never write the same blob at once.
 *
 * Python locks `<cache>/.locks/models--owner--name/<etag>.lock` with the `filelock` package, which on Unix holds
 * a BSD `flock(2)` lock on that file (not an `fcntl` record lock: on Linux the two kinds do not see each other).
 * Node has no `flock(2)`, and the native add-ons that offer it need a compiler at install time, so the lock is
 * held by util-linux's (or BusyBox's) `flock(1)` in a child process: `flock -x <file> -c 'printf held; exec cat'`
 * takes the lock, says so on its standard output, then waits for its standard input to end. Closing that input
 * (or this process ending, however it ends) releases the lock; a holder that died cannot keep it. The lock file
 * is never deleted (deleting a `flock` lock file lets two holders in).
 *
 * Where no `flock` program exists (macOS, Windows), the lock is an exclusively created file beside Python's,
 * `<etag>.lock.ludic`, holding the owner's process id and host name; a lock whose owner process is gone (on the
 * same host) is taken over. That fallback keeps two Ludic processes apart, not Ludic and Python.
 */
export type LockMechanism = 'flock' | 'lock-file'

export interface HeldLock {
  /** The lock file. */
  readonly path: string
  readonly mechanism: LockMechanism
  /** Releases the lock (once; later calls do nothing). */
  release(): Promise<void>
}

export interface AcquireLockOptions {
  /** Stops the wait: the promise rejects with the signal's reason. Bound the wait with `AbortSignal.timeout` or a deadline of your own. */
  signal?: AbortSignal | undefined
  /** Called once, when another process holds the lock and this call starts waiting for it. */
  onWait?: (() => void) | undefined
  /** How to lock. Default: `flock` where the `flock` program runs, else `lock-file`. */
  mechanism?: LockMechanism | undefined
}

/** Whether spawning `flock` failed with ENOENT in this process: then every lock uses the lock-file fallback. */
let flockMissing = false

/** The exclusive lock on `path` (created with its folder when missing), waiting for another holder to release it. */
export async function acquireFileLock(path: string, options: AcquireLockOptions = {}): Promise<HeldLock> {
  options.signal?.throwIfAborted()
  await mkdir(dirname(path), { recursive: true })
  const mechanism = options.mechanism ?? (flockMissing ? 'lock-file' : 'flock')
  if (mechanism === 'flock') {
    const first = await runFlock(path, false, options.signal)
    if (first.kind === 'held') return flockHeld(path, first.child)
    if (first.kind === 'busy') {
      options.onWait?.()
      const second = await runFlock(path, true, options.signal)
      if (second.kind === 'held') return flockHeld(path, second.child)
    }
    if (options.mechanism === 'flock') throw new Error(`Cannot lock ${path}: no flock program on this machine (util-linux or BusyBox)`)
    flockMissing = true
  }
  return acquireLockFile(`${path}.ludic`, options)
}

type FlockOutcome = { kind: 'held'; child: ChildProcessWithoutNullStreams } | { kind: 'busy' } | { kind: 'missing' }

/**
 * Runs `flock -x [-n] <path> -c 'printf held; exec cat >/dev/null'` (short options only: BusyBox's `flock` has no
 * long ones). `held` once the child says so; `busy` when `-n` found the lock taken (exit 1 with nothing on
 * stderr); `missing` when there is no `flock` program; an error naming the lock file otherwise.
 */
function runFlock(path: string, wait: boolean, signal: AbortSignal | undefined): Promise<FlockOutcome> {
  return new Promise<FlockOutcome>((resolve, reject) => {
    let settled = false
    let stderr = ''
    const child = spawn('flock', ['-x', ...(wait ? [] : ['-n']), path, '-c', 'printf held; exec cat >/dev/null'], { stdio: 'pipe' })
    const settle = (action: () => void) => {
      if (settled) return
      settled = true
      signal?.removeEventListener('abort', onAbort)
      action()
    }
    const onAbort = () => {
      child.kill('SIGKILL')
      child.stdin.destroy()
      settle(() => reject(signal?.reason))
    }
    signal?.addEventListener('abort', onAbort, { once: true })
    child.stdin.on('error', () => undefined)
    child.on('error', (error: NodeJS.ErrnoException) => {
      settle(() => (error.code === 'ENOENT' ? resolve({ kind: 'missing' }) : reject(new Error(`Cannot lock ${path}: ${error.message}`, { cause: error }))))
    })
    child.stdout.once('data', () => settle(() => resolve({ kind: 'held', child })))
    child.stderr.on('data', (piece: Buffer) => {
      if (stderr.length < 2000) stderr += piece.toString('utf8')
    })
    child.on('close', (code) => {
      settle(() => {
        if (!wait && code === 1 && stderr.trim() === '') resolve({ kind: 'busy' })
        else reject(new Error(`Cannot lock ${path}: flock exited with code ${code}${stderr.trim() === '' ? '' : ` (${stderr.trim()})`}`))
      })
    })
    if (signal?.aborted) onAbort()
  })
}

function flockHeld(path: string, child: ChildProcessWithoutNullStreams): HeldLock {
  let released: Promise<void> | undefined
  return {
    path,
    mechanism: 'flock',
    release: () => {
      released ??= new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) {
          resolve()
          return
        }
        // `cat` ends at the end of its input, then `flock` exits and the kernel drops the lock.
        const killer = setTimeout(() => child.kill('SIGKILL'), 5000)
        child.once('close', () => {
          clearTimeout(killer)
          resolve()
        })
        child.stdin.end()
      })
      return released
    },
  }
}

interface LockOwner {
  pid: number
  host: string
  token: string
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

async function readOwner(path: string): Promise<{ text: string; owner: LockOwner | undefined; ageMs: number } | undefined> {
  try {
    const [text, stats] = await Promise.all([readFile(path, 'utf8'), stat(path)])
    let owner: LockOwner | undefined
    try {
      const value = JSON.parse(text) as Partial<LockOwner>
      if (typeof value.pid === 'number' && typeof value.host === 'string' && typeof value.token === 'string')
        owner = { pid: value.pid, host: value.host, token: value.token }
    } catch {
      owner = undefined
    }
    return { text, owner, ageMs: Date.now() - stats.mtimeMs }
  } catch {
    return undefined
  }
}

/**
 * Takes over `path` when its owner is gone: a process of this host that no longer runs, or (a file without a
 * readable owner, left by a crash between creating and writing it) one older than a minute. The stale file is
 * first renamed to a name of its own, so two processes cannot both remove it and then each other's new lock;
 * a rename that caught a fresh lock instead puts it back. Returns whether the lock file was removed.
 */
async function removeIfStale(path: string): Promise<boolean> {
  const seen = await readOwner(path)
  if (seen === undefined) return true
  const stale = seen.owner === undefined ? seen.ageMs > 60_000 : seen.owner.host === hostname() && !isAlive(seen.owner.pid)
  if (!stale) return false
  const aside = `${path}.stale-${randomBytes(6).toString('hex')}`
  try {
    await rename(path, aside)
  } catch {
    return true
  }
  const moved = await readOwner(aside)
  if (moved?.text !== seen.text) await link(aside, path).catch(() => undefined)
  await unlink(aside).catch(() => undefined)
  return moved?.text === seen.text
}

async function acquireLockFile(path: string, options: AcquireLockOptions): Promise<HeldLock> {
  const text = JSON.stringify({ pid: process.pid, host: hostname(), token: randomBytes(8).toString('hex') } satisfies LockOwner)
  let waiting = false
  for (let attempt = 0; ; attempt++) {
    options.signal?.throwIfAborted()
    try {
      await writeFile(path, text, { flag: 'wx' })
      let released = false
      return {
        path,
        mechanism: 'lock-file',
        release: async () => {
          if (released) return
          released = true
          if ((await readOwner(path))?.text === text) await rm(path, { force: true })
        },
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    }
    if (await removeIfStale(path)) continue
    if (!waiting) {
      waiting = true
      options.onWait?.()
    }
    try {
      await delay(Math.min(25 * 2 ** attempt, 1000), undefined, options.signal === undefined ? {} : { signal: options.signal })
    } catch (error) {
      options.signal?.throwIfAborted()
      throw error
    }
  }
}
