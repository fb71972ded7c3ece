import type { ProgressStream } from '@ludic/report'

/** Where a command writes: a TTY or not, as `process.stdout` and `process.stderr`. */
export type OutputStream = ProgressStream

/**
 * What every command is given: where results (stdout) and progress and logs (stderr) go, the global flags, and
 * the signal that Ctrl+C aborts. Commands used from code take a partial one (`commandContext`).
 */
export interface CommandContext {
  /** Results: the tables, the summary; with `json`, one JSON document. */
  stdout: OutputStream
  /** Progress bars and log lines. */
  stderr: OutputStream
  /** Print the result as JSON on stdout (progress and logs stay on stderr). */
  json: boolean
  /** No progress bars and no log lines: only the result (and errors). */
  quiet: boolean
  /** Seeds everything random the command does, unless its config sets a seed. */
  seed: number | undefined
  /** The TensorFlow.js backend (`wasm`, `cpu`, `tensorflow`…). Default: the best installed (`LUDIC_BACKEND` overrides). */
  backend: string | undefined
  /** Aborted by Ctrl+C (the command stops cleanly) or by the caller. */
  signal: AbortSignal
  /** Relative paths of flags are taken from here. */
  cwd: string
}

/** A context with defaults: the process's streams, no JSON, not quiet, a signal never aborted, the working directory. */
export function commandContext(partial: Partial<CommandContext> = {}): CommandContext {
  return {
    stdout: partial.stdout ?? process.stdout,
    stderr: partial.stderr ?? process.stderr,
    json: partial.json ?? false,
    quiet: partial.quiet ?? false,
    seed: partial.seed,
    backend: partial.backend,
    signal: partial.signal ?? new AbortController().signal,
    cwd: partial.cwd ?? process.cwd(),
  }
}

/** A log line on stderr, unless quiet. */
export function log(context: CommandContext, line: string): void {
  if (!context.quiet) context.stderr.write(`${line}\n`)
}

/** The progress stream of a trainer or a bar: stderr, or none when quiet. */
export function progressStream(context: CommandContext): OutputStream | false {
  return context.quiet ? false : context.stderr
}

/** Writes a command's result: JSON when asked, else its text (when it has any). */
export function writeResult(context: CommandContext, result: unknown, text: () => string): void {
  if (context.json) context.stdout.write(`${JSON.stringify(result, null, 2)}\n`)
  else {
    const shown = text()
    if (shown !== '') context.stdout.write(shown.endsWith('\n') ? shown : `${shown}\n`)
  }
}

/** Resolves when `signal` is aborted (at once if it is already): a server command waits here for Ctrl+C. */
export function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve()
    signal.addEventListener('abort', () => resolve(), { once: true })
  })
}
