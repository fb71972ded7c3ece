/**
 * The error hierarchy shared by every Ludic package.
 *
 * `LudicError.isInstance(error)` works across copies of this package (two versions installed side
 * by side, or a bundled copy) because it checks a `Symbol.for` marker rather than the prototype chain.
 */
const marker = Symbol.for('ludic.error')

export interface LudicErrorOptions {
  cause?: unknown
}

/**
 * Formats a value for an error message: short, unambiguous, never throws. Values JSON cannot show (it writes a RegExp,
 * a Map, a Set or an Error as `{}`) are described by what they are, `/q_proj/`, `Map(2)`, `RangeError: …`, at any depth.
 */
export function describeValue(value: unknown, maxLength = 80): string {
  let text: string
  try {
    if (typeof value === 'string') text = JSON.stringify(value)
    else if (typeof value === 'number') text = Object.is(value, -0) ? '-0' : String(value)
    else if (value === undefined) text = 'undefined'
    else if (Array.isArray(value) && value.every((item) => typeof item === 'number')) text = `[${value.join(', ')}]`
    else {
      const special = describeSpecial(value)
      text = special ?? JSON.stringify(value, (_key, item: unknown) => describeSpecial(item) ?? item) ?? String(value)
    }
  } catch {
    text = Object.prototype.toString.call(value)
  }
  return text.length > maxLength ? `${text.slice(0, maxLength - 1)}…` : text
}

/** How `describeValue` writes a value that JSON would lose or misstate; undefined for the others. */
function describeSpecial(value: unknown): string | undefined {
  if (typeof value === 'bigint') return `${value}n`
  if (typeof value === 'function') return `[function ${value.name || 'anonymous'}]`
  if (typeof value === 'symbol') return value.toString()
  if (typeof value !== 'object' || value === null) return undefined
  if (ArrayBuffer.isView(value)) {
    const length = 'length' in value ? (value as unknown as { length: number }).length : value.byteLength
    return `${value.constructor.name}(${length})`
  }
  const kind = Object.prototype.toString.call(value).slice(8, -1)
  if (kind === 'RegExp') return String(value)
  if (kind === 'Map' || kind === 'Set') return `${kind}(${(value as { size: number }).size})`
  if (kind === 'WeakMap' || kind === 'WeakSet' || kind === 'Promise') return kind
  if (kind === 'ArrayBuffer') return `ArrayBuffer(${(value as ArrayBuffer).byteLength})`
  if (kind === 'Error' || value instanceof Error) return `${(value as Error).name}: ${(value as Error).message}`
  return undefined
}

export class LudicError extends Error {
  private readonly [marker] = true
  override readonly name: string = 'LudicError'

  constructor(message: string, options: LudicErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
  }

  static isInstance(error: unknown): error is LudicError {
    return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[marker] === true
  }
}

const invalidArgumentMarker = Symbol.for('ludic.error.InvalidArgumentError')

/** An argument of a public function has a wrong value: names the argument and the value. */
export class InvalidArgumentError extends LudicError {
  private readonly [invalidArgumentMarker] = true
  override readonly name = 'InvalidArgumentError'
  readonly argument: string
  readonly value: unknown

  constructor(options: { argument: string; value: unknown; message: string; cause?: unknown }) {
    super(`Invalid argument '${options.argument}' (value: ${describeValue(options.value)}): ${options.message}`, options)
    this.argument = options.argument
    this.value = options.value
  }

  static override isInstance(error: unknown): error is InvalidArgumentError {
    return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[invalidArgumentMarker] === true
  }
}

const parseMarker = Symbol.for('ludic.error.ParseError')

/**
 * Input read from outside (a file, JSON, a server's answer) is malformed. `source` names where it came
 * from (a path, `'tokenizer.json'`, a URL); `path` locates the bad part inside it (a JSON path such as
 * `['model', 'merges', 3]`, or a tensor name).
 */
export class ParseError extends LudicError {
  private readonly [parseMarker] = true
  override readonly name = 'ParseError'
  readonly source: string
  readonly path: readonly (string | number)[]

  constructor(options: { source: string; path?: readonly (string | number)[]; message: string; cause?: unknown }) {
    const path = options.path ?? []
    const where = path.length > 0 ? ` at ${formatPath(path)}` : ''
    super(`Cannot parse ${options.source}${where}: ${options.message}`, options)
    this.source = options.source
    this.path = path
  }

  static override isInstance(error: unknown): error is ParseError {
    return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[parseMarker] === true
  }
}

/** Formats a JSON path like `model.merges[3]`. */
export function formatPath(path: readonly (string | number)[]): string {
  let text = ''
  for (const part of path) {
    if (typeof part === 'number') text += `[${part}]`
    else if (/^[A-Za-z_$][\w$]*$/.test(part)) text += text === '' ? part : `.${part}`
    else text += `[${JSON.stringify(part)}]`
  }
  return text === '' ? '(root)' : text
}

const backendMarker = Symbol.for('ludic.error.BackendError')

/** A compute backend is missing, failed to start, or lacks a capability. `backend` names it. */
export class BackendError extends LudicError {
  private readonly [backendMarker] = true
  override readonly name = 'BackendError'
  readonly backend: string

  constructor(options: { backend: string; message: string; cause?: unknown }) {
    super(`Backend '${options.backend}': ${options.message}`, options)
    this.backend = options.backend
  }

  static override isInstance(error: unknown): error is BackendError {
    return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[backendMarker] === true
  }
}

const shapeMarker = Symbol.for('ludic.error.ShapeError')

/** A tensor or array has the wrong shape. `-1` in `expected` means any size along that axis. */
export class ShapeError extends LudicError {
  private readonly [shapeMarker] = true
  override readonly name = 'ShapeError'
  readonly argument: string
  readonly expected: readonly number[]
  readonly actual: readonly number[]

  constructor(options: {
    argument: string
    expected: readonly number[]
    actual: readonly number[]
    message?: string
    cause?: unknown
  }) {
    const detail = options.message === undefined ? '' : `: ${options.message}`
    super(
      `Shape of '${options.argument}' is [${options.actual.join(', ')}], expected [${options.expected
        .map((size) => (size === -1 ? '*' : String(size)))
        .join(', ')}]${detail}`,
      options,
    )
    this.argument = options.argument
    this.expected = options.expected
    this.actual = options.actual
  }

  static override isInstance(error: unknown): error is ShapeError {
    return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[shapeMarker] === true
  }
}

const fileSystemMarker = Symbol.for('ludic.error.FileSystemError')

/**
 * The operating system refused an operation on a file (a full disk, a missing permission, a read-only file
 * system…), naming the file: Node's own errors for a write, flush or close on an open file name none
 * (`ENOSPC: no space left on device, write`). `code` is the system's (`ENOSPC`, `EACCES`…), `path` the file,
 * `operation` what was being done to it; the original error is the `cause`.
 */
export class FileSystemError extends LudicError {
  private readonly [fileSystemMarker] = true
  override readonly name = 'FileSystemError'
  readonly path: string
  readonly operation: string
  readonly code: string | undefined

  constructor(options: { path: string; operation: string; cause?: unknown; code?: string }) {
    const cause = options.cause as { code?: unknown; message?: unknown } | undefined
    const code = options.code ?? (typeof cause?.code === 'string' ? cause.code : undefined)
    const detail = typeof cause?.message === 'string' ? cause.message : (code ?? 'failed')
    super(`Cannot ${options.operation} ${options.path}: ${detail}`, options)
    this.path = options.path
    this.operation = options.operation
    this.code = code
  }

  /**
   * `error` as a `FileSystemError` naming `path` when it is a system error (one with a string `code`, as Node's
   * are); any other error (a `LudicError` already, a bug) is returned as it is.
   */
  static wrap(error: unknown, path: string, operation: string): unknown {
    if (LudicError.isInstance(error)) return error
    const code = (error as { code?: unknown } | undefined)?.code
    return typeof code === 'string' ? new FileSystemError({ path, operation, cause: error, code }) : error
  }

  static override isInstance(error: unknown): error is FileSystemError {
    return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[fileSystemMarker] === true
  }
}
