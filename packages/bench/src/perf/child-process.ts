import { spawn } from 'node:child_process'

/** What a child process answered: its last JSON line, or why there is none. */
export type ChildAnswer<Result> = Result | { error: string }

export function isChildError(answer: unknown): answer is { error: string } {
  return typeof answer === 'object' && answer !== null && typeof (answer as { error?: unknown }).error === 'string'
}

/**
 * Runs `command args…` and returns the last line of its standard output that is a JSON object, or `{ error }`
 * (exit status, the end of its standard error, a time-out, an abort). Its standard error is passed to `onLine`
 * line by line (progress of the measurement).
 */
export function runJsonProcess<Result>(
  command: string,
  args: readonly string[],
  options: { timeoutMs: number; signal?: AbortSignal; env?: NodeJS.ProcessEnv; onLine?: (line: string) => void },
): Promise<ChildAnswer<Result>> {
  return new Promise((resolve) => {
    if (options.signal?.aborted) {
      resolve({ error: 'aborted' })
      return
    }
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env: options.env ?? process.env })
    let stdout = ''
    let stderr = ''
    let pending = ''
    let ended: string | undefined
    const timer = setTimeout(() => {
      ended = `timed out after ${Math.round(options.timeoutMs / 1000)} s`
      child.kill('SIGKILL')
    }, options.timeoutMs)
    const abort = () => {
      ended = 'aborted'
      child.kill('SIGKILL')
    }
    options.signal?.addEventListener('abort', abort, { once: true })
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk
    })
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk
      pending += chunk
      const lines = pending.split('\n')
      pending = lines.pop() ?? ''
      for (const line of lines) if (line.trim() !== '') options.onLine?.(line)
    })
    const finish = (status: number | null, failure?: Error) => {
      clearTimeout(timer)
      options.signal?.removeEventListener('abort', abort)
      const line = stdout
        .split('\n')
        .reverse()
        .find((text) => text.startsWith('{'))
      if (ended === undefined && failure === undefined && status === 0 && line !== undefined) {
        try {
          resolve(JSON.parse(line) as Result)
          return
        } catch (error) {
          resolve({ error: `answered malformed JSON (${(error as Error).message})` })
          return
        }
      }
      const reason = ended ?? failure?.message ?? (stderr || stdout).trim().split('\n').slice(-3).join(' ')
      resolve({ error: reason || `exit status ${status}` })
    }
    child.on('error', (error) => finish(null, error))
    child.on('close', (status) => finish(status))
  })
}
