import { describeValue, formatPath, InvalidArgumentError, LudicError, ParseError } from '@ludic/core'

/**
 * The exit codes of `ludic`, one row each: the one table `ludic --help` prints (`exitCodeHelp`), the README's table
 * (`exitCodeMarkdown`, checked by a test) and `exitCodes` come from here, and every row has its test.
 */
export const exitCodeTable = [
  { name: 'ok', code: 0, meaning: 'success' },
  {
    name: 'failed',
    code: 1,
    meaning: "the run failed (a runtime error; `serve`: a fatal fault of the model's backend, for a supervisor to restart it)",
  },
  {
    name: 'usage',
    code: 2,
    meaning: 'usage or config error: bad flags, an invalid config file (every wrong field is listed), a plugin that fails to import, a port in use (`--port`)',
  },
  {
    name: 'notFound',
    code: 3,
    meaning:
      'input not found or unreadable: a file, a model folder (or one without `config.json`), a checkpoint cut short, a data file, a repository, a run directory to view',
  },
  { name: 'network', code: 4, meaning: 'network or Hugging Face Hub error' },
  {
    name: 'interrupted',
    code: 130,
    meaning: 'interrupted: Ctrl+C or SIGTERM (a training run saves a checkpoint first; `serve` and `view` stop; a second Ctrl+C quits at once)',
  },
] as const

type ExitCodeRow = (typeof exitCodeTable)[number]

/** The exit codes by name: `exitCodes.notFound` is 3. */
export const exitCodes = Object.fromEntries(exitCodeTable.map((row) => [row.name, row.code])) as {
  readonly [Row in ExitCodeRow as Row['name']]: Row['code']
}
export type ExitCode = ExitCodeRow['code']

/** The exit-code table as `ludic --help` prints it. */
export const exitCodeHelp = ['Exit codes:', ...exitCodeTable.map((row) => `  ${String(row.code).padEnd(5)}${row.meaning.replaceAll('`', '')}`)].join('\n')

/** The exit-code table as the README shows it (Markdown). */
export function exitCodeMarkdown(): string {
  return ['| Code | Meaning |', '| --- | --- |', ...exitCodeTable.map((row) => `| ${row.code} | ${row.meaning} |`)].join('\n')
}

/** A failure the command line reports as it is, with its exit code (e.g. a missing file: 3). */
export class CliError extends LudicError {
  override readonly name: string = 'CliError'
  readonly exitCode: ExitCode

  constructor(message: string, exitCode: ExitCode, options: { cause?: unknown } = {}) {
    super(message, options)
    this.exitCode = exitCode
  }
}

/**
 * A `ParseError` of what the user wrote (a config file, or a command-line value such as `--plugin` or a suite's
 * options), with what was read (so the message can show each wrong value). Its exit code is a usage error (2) unless
 * its cause says more: a missing or unreadable input behind a field (`model.path`, a data file) is 3, a network
 * fault 4 (`exitCodeOf`).
 */
export class ConfigError extends CliError {
  override readonly name = 'ConfigError'
  readonly input: unknown

  constructor(cause: ParseError, input: unknown) {
    super(cause.message, codeOfChain(causes(cause), cause), { cause })
    this.input = input
  }
}

/** The run was stopped by its signal (Ctrl+C). */
export class InterruptedError extends CliError {
  override readonly name = 'InterruptedError'
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
/** File-system codes of an input that is not there or cannot be read. */
const unreadableCodes = new Set(['ENOENT', 'ENOTDIR', 'EISDIR', 'EACCES', 'EPERM'])

const nameOf = (item: unknown) => (item as { name?: unknown } | null)?.name
const codeOf = (item: unknown) => {
  const code = (item as { code?: unknown } | null)?.code
  return typeof code === 'string' ? code : ''
}

/**
 * The exit code of an error (see `exitCodeTable`), from its cause chain, the first rule that matches:
 * 1. a `CliError` in the chain: its own code (the command said what it is);
 * 2. aborted (Ctrl+C): 130;
 * 3. a Hugging Face Hub error: 3 for a missing repository or file, else 4;
 * 4. a file-system error of an input (`ENOENT`, `EACCES`, `EISDIR`…): 3; a network error: 4;
 * 5. a `ParseError`: input that exists but cannot be read as what it should be (a model folder's `config.json`, a
 *    checkpoint cut short, a data file, a tokenizer): 3 — except the user's own words, the config file and the command
 *    line, which the command wraps in a `ConfigError`: their `ParseError` is a usage error (2);
 * 6. an `InvalidArgumentError` (a wrong value given to a function: a flag's, a config field's): 2;
 * 7. anything else: the run failed, 1.
 */
export function exitCodeOf(error: unknown): ExitCode {
  return codeOfChain(causes(error), undefined)
}

/** `exitCodeOf` over a cause chain; `own` is the `ParseError` of the user's own words (a `ConfigError`'s cause). */
function codeOfChain(chain: readonly unknown[], own: unknown): ExitCode {
  const explicit = chain.find((item) => item instanceof CliError)
  if (explicit instanceof CliError) return explicit.exitCode
  if (chain.some((item) => nameOf(item) === 'AbortError')) return exitCodes.interrupted
  const hub = chain.find((item) => nameOf(item) === 'HubError') as { reason?: string } | undefined
  if (hub !== undefined) return hub.reason === 'missing' ? exitCodes.notFound : exitCodes.network
  if (chain.some((item) => unreadableCodes.has(codeOf(item)))) return exitCodes.notFound
  // A run directory whose checkpoints or KL reference cannot be read: an input that is there but unusable.
  if (chain.some((item) => (item as { name?: string })?.name === 'ResumeError')) return exitCodes.notFound
  if (chain.some((item) => networkCodes.has(codeOf(item)))) return exitCodes.network
  if (chain.some((item) => item !== own && ParseError.isInstance(item))) return exitCodes.notFound
  if (chain.some((item) => item === own || InvalidArgumentError.isInstance(item))) return exitCodes.usage
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
 * ` (did you mean "steps"?)` for an unknown key when `@ludic/core`'s `parseInput` found a known one near it: its message
 * of the issue names it as `"stepz" (did you mean "steps"?)`. Else `''`.
 */
function suggestionFor(message: string, key: string): string {
  const near = new RegExp(`${JSON.stringify(key).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(did you mean ("(?:[^"\\\\]|\\\\.)*")\\?\\)`).exec(message)?.[1]
  return near === undefined ? '' : ` (did you mean ${near}?)`
}

/**
 * One line per wrong field of a zod error: `path: message (allowed: a | b | c)`; the offending value is named when
 * `input` (what was parsed) is given. Unions report their closest branch.
 */
export function formatIssues(error: { issues: readonly Issue[] }, input?: unknown): string[] {
  return flatten(error.issues).map((issue) => {
    const path = issue.path.map((part) => (typeof part === 'symbol' ? String(part) : part)) as (string | number)[]
    if (issue.code === 'unrecognized_keys' && issue.keys !== undefined)
      return issue.keys.map((key) => `${formatPath([...path, key])}: unknown field${suggestionFor(issue.message, key)}`).join('\n')
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
    // A zod error's message is its issues as JSON, which the message already states: not printed again.
    const cause =
      error.cause instanceof Error && !isZodError(error.cause) && !error.message.includes(error.cause.message) ? `\n  cause: ${error.cause.message}` : ''
    return `${error.message}${cause}`
  }
  return String(error)
}
