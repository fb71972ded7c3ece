import { describeValue, formatPath, InvalidArgumentError, LudicError, ParseError } from '@ludic/core'

/**
 * The exit codes of `ludic` (also in `ludic --help` and the README):
 * 0 ok; 1 the run failed; 2 usage or config error (bad flags, an invalid config file); 3 an input not found (a
 * file, a checkpoint, a repository); 4 a network or Hugging Face Hub error; 130 interrupted (SIGINT).
 */
export const exitCodes = { ok: 0, failed: 1, usage: 2, notFound: 3, network: 4, interrupted: 130 } as const
export type ExitCode = (typeof exitCodes)[keyof typeof exitCodes]

/** The exit-code table as `ludic --help` prints it. */
export const exitCodeHelp = [
  'Exit codes:',
  '  0    success',
  '  1    the run failed (a runtime error)',
  '  2    usage or config error (bad flags, an invalid config file)',
  '  3    input not found (a file, a checkpoint, a repository)',
  '  4    network or Hugging Face Hub error',
  '  130  interrupted (Ctrl+C; a training run saves a checkpoint first)',
].join('\n')

/** A failure the command line reports as it is, with its exit code (e.g. a missing file: 3). */
export class CliError extends LudicError {
  override readonly name = 'CliError'
  readonly exitCode: ExitCode

  constructor(message: string, exitCode: ExitCode, options: { cause?: unknown } = {}) {
    super(message, options)
    this.exitCode = exitCode
  }
}

/** A config file that could not be used, with what was read from it (so the message can show each wrong value). */
export class ConfigError extends CliError {
  readonly input: unknown

  constructor(cause: ParseError, input: unknown) {
    super(cause.message, exitCodeOf(cause), { cause })
    this.input = input
  }
}

/** The run was stopped by its signal (Ctrl+C). */
export class InterruptedError extends CliError {
  constructor(message = 'interrupted') {
    super(message, exitCodes.interrupted)
  }
}

/** The errors of `error`'s cause chain, `error` first. */
function causes(error: unknown): unknown[] {
  const chain: unknown[] = []
  for (let current = error; current !== undefined && current !== null && chain.length < 16; current = (current as { cause?: unknown }).cause) {
    chain.push(current)
    if (typeof current !== 'object') break
  }
  return chain
}

const networkCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT'])

/** The exit code of an error: see `exitCodes`. */
export function exitCodeOf(error: unknown): ExitCode {
  const chain = causes(error)
  if (error instanceof CliError) return error.exitCode
  if (chain.some((item) => item instanceof InterruptedError || (item as { name?: string })?.name === 'AbortError')) return exitCodes.interrupted
  const hub = chain.find((item) => (item as { name?: string })?.name === 'HubError') as { reason?: string } | undefined
  if (hub !== undefined) return hub.reason === 'missing' ? exitCodes.notFound : exitCodes.network
  if (chain.some((item) => (item as { code?: string })?.code === 'ENOENT')) return exitCodes.notFound
  // A run directory whose checkpoints or KL reference cannot be read: an input that is there but unusable.
  if (chain.some((item) => (item as { name?: string })?.name === 'ResumeError')) return exitCodes.notFound
  if (chain.some((item) => networkCodes.has((item as { code?: string })?.code ?? ''))) return exitCodes.network
  if (ParseError.isInstance(error) || InvalidArgumentError.isInstance(error)) return exitCodes.usage
  return exitCodes.failed
}

/** A zod issue, as much of it as the formatting reads. */
interface Issue {
  code: string
  path: PropertyKey[]
  message: string
  values?: unknown[]
  keys?: string[]
  errors?: Issue[][]
}

const isZodError = (value: unknown): value is { issues: Issue[] } =>
  typeof value === 'object' && value !== null && Array.isArray((value as { issues?: unknown }).issues) && (value as { name?: string }).name === 'ZodError'

/** The issues of a union: the branch that went furthest (fewest issues, a known `kind`/`type` matched), each under the union's path. */
function flatten(issues: readonly Issue[], prefix: PropertyKey[] = []): Issue[] {
  const flat: Issue[] = []
  for (const issue of issues) {
    const path = [...prefix, ...issue.path]
    if (issue.code === 'invalid_union' && issue.errors !== undefined && issue.errors.length > 0) {
      const best = [...issue.errors].sort((a, b) => a.length - b.length)[0]!
      if (best.length > 0) {
        flat.push(...flatten(best, path))
        continue
      }
    }
    flat.push({ ...issue, path })
  }
  return flat
}

/** The value at `path` inside `root`, if any. */
function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let value = root
  for (const key of path) {
    if (value === null || typeof value !== 'object') return undefined
    value = (value as Record<PropertyKey, unknown>)[key]
  }
  return value
}

/**
 * One line per wrong field of a zod error: `path: message (allowed: a | b | c)`; the offending value is named when
 * `input` (what was parsed) is given. Unions report their closest branch.
 */
export function formatIssues(error: { issues: readonly Issue[] }, input?: unknown): string[] {
  return flatten(error.issues).map((issue) => {
    const path = issue.path.map((part) => (typeof part === 'symbol' ? String(part) : part)) as (string | number)[]
    if (issue.code === 'unrecognized_keys' && issue.keys !== undefined)
      return issue.keys.map((key) => `${formatPath([...path, key])}: unknown field`).join('\n')
    const where = formatPath(path)
    if (issue.code === 'invalid_value' && issue.values !== undefined) {
      const allowed = issue.values.map((value) => (typeof value === 'string' ? value : describeValue(value)))
      const given = input === undefined ? '' : ` (got ${describeValue(valueAt(input, path))})`
      const message = issue.message.startsWith('Invalid option') || issue.message.startsWith('Invalid input') ? 'not an allowed value' : issue.message
      return message.includes(allowed[0] ?? '\u0000') ? `${where}: ${message}${given}` : `${where}: ${message}${given} (allowed: ${allowed.join(' | ')})`
    }
    return `${where}: ${issue.message}`
  })
}

/**
 * The one block `ludic` prints for a failure: a headline, then for a config error every wrong field on its own line.
 */
export function formatError(error: unknown, options: { input?: unknown } = {}): string {
  if (error instanceof ConfigError) return formatError(error.cause, { input: error.input })
  const chain = causes(error)
  const zod = chain.find(isZodError)
  if (ParseError.isInstance(error) && zod !== undefined) {
    const lines = formatIssues(zod, options.input).flatMap((line) => line.split('\n'))
    const prefix = error.path.slice(0, error.path.length - (zod.issues[0]?.path.length ?? 0))
    const shown = prefix.length === 0 ? lines : lines.map((line) => `${formatPath(prefix)}.${line}`)
    return [`invalid ${error.source}: ${lines.length} wrong field${lines.length === 1 ? '' : 's'}`, ...shown.map((line) => `  ${line}`)].join('\n')
  }
  if (error instanceof Error) {
    const cause = error.cause instanceof Error && !error.message.includes(error.cause.message) ? `\n  cause: ${error.cause.message}` : ''
    return `${error.message}${cause}`
  }
  return String(error)
}
