/** Child processes for the cross-process tests: a holder of a BSD flock, and output waits. */
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { mkdir } from 'node:fs/promises'
import { dirname } from 'node:path'

/** Resolves once `child` has written `text` on stdout; rejects, with its stderr, if it exits first. */
export function untilOutput(child: ChildProcessWithoutNullStreams, text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let output = ''
    let errors = ''
    child.stderr.on('data', (piece: Buffer) => {
      errors += piece.toString()
    })
    child.stdout.on('data', (piece: Buffer) => {
      output += piece.toString()
      if (output.includes(text)) resolve()
    })
    child.on('close', (code) => reject(new Error(`exited with ${code} before writing ${JSON.stringify(text)}: ${errors}`)))
  })
}

/**
 * Holds `path` with the `flock` program the way Python's `filelock` (and so `huggingface_hub`) holds its lock
 * files: an exclusive BSD flock(2) on that file. `release()` ends the holder.
 */
export async function holdWithFlockProgram(path: string): Promise<{ release: () => Promise<void> }> {
  await mkdir(dirname(path), { recursive: true })
  const child = spawn('flock', ['-x', path, '-c', 'printf held; exec cat >/dev/null'], { stdio: 'pipe' })
  await untilOutput(child, 'held')
  return {
    release: () =>
      new Promise<void>((resolve) => {
        child.once('close', () => resolve())
        child.stdin.end()
      }),
  }
}
