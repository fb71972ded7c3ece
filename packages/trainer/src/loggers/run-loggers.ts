import { closestName, InvalidArgumentError, LudicError } from '@ludic/core'
import { z } from 'zod'
import type { StepMetrics } from '../metrics-log.js'
import { nodePlatform } from '../platform.js'
import { isRunLogger, type RunLoggerV1 } from './run-logger.js'
import { wandbLoggerConfigSchema, type WandbEnvironment } from './wandb-config.js'

/** The loggers Ludic has, by name. */
export const loggerNames = ['jsonl', 'tensorboard', 'wandb'] as const
export type LoggerName = (typeof loggerNames)[number]

const loggerSpecSchemas = {
  jsonl: z.strictObject({ kind: z.literal('jsonl') }),
  /** `directory`: where the event files go, relative to the run directory or absolute. Default `tensorboard`. */
  tensorboard: z.strictObject({ kind: z.literal('tensorboard'), directory: z.string().min(1).optional() }),
  wandb: wandbLoggerConfigSchema.extend({ kind: z.literal('wandb') }),
}
/** A logger of Ludic's with its settings (plain data, as a run config file gives it). */
export type LoggerSpec = { [Name in LoggerName]: z.output<(typeof loggerSpecSchemas)[Name]> }[LoggerName]
/** A name (`'tensorboard'`), a logger with its settings (`{ kind: 'wandb', project: 'kuhn' }`), or (in code) a logger object. */
export type LoggerEntry = LoggerName | LoggerSpec | RunLoggerV1

const describeNames = loggerNames.map((name) => `'${name}'`).join(', ')

/** One entry of `loggers`; `objects`: a `RunLoggerV1` is accepted too (trainer configs, not files). */
function loggerEntrySchema(objects: boolean) {
  return z
    .custom<LoggerEntry>(() => true)
    .superRefine((value, context) => {
      if (typeof value === 'string') {
        if ((loggerNames as readonly string[]).includes(value)) return
        const near = closestName(value, loggerNames)
        context.addIssue({ code: 'custom', message: `is not a logger (${describeNames})${near === undefined ? '' : `; did you mean '${near}'?`}` })
        return
      }
      if (objects && isRunLogger(value)) return
      const kind = typeof value === 'object' && value !== null ? (value as { kind?: unknown }).kind : undefined
      if (typeof kind === 'string' && Object.hasOwn(loggerSpecSchemas, kind)) {
        const result = loggerSpecSchemas[kind as LoggerName].safeParse(value)
        for (const issue of result.error?.issues ?? []) context.addIssue({ code: 'custom', path: issue.path, message: issue.message })
        return
      }
      context.addIssue({
        code: 'custom',
        message: `must be a logger name (${describeNames}), an object { kind: <name>, … } of one${objects ? ', or a RunLoggerV1 (specificationVersion v1, name, start, log, text, close)' : ''}`,
      })
    })
}

/**
 * Where a trainer's metrics go, in order: `jsonl` (`metrics.jsonl` in the run directory), `tensorboard` (event files
 * under `<run directory>/tensorboard/`), `wandb` (Weights & Biases, online or offline), as names or objects with their
 * settings, or any `RunLoggerV1`. Each built-in logger at most once. Default `['jsonl']`: `metrics.jsonl` only.
 */
export const runLoggersSchema = z.array(loggerEntrySchema(true)).superRefine(refuseRepeats).default(['jsonl'])
/** `loggers` of a run config file: names or objects `{ kind, … }` (no code). Default `['jsonl']`. */
export const runConfigLoggersSchema = z.array(loggerEntrySchema(false)).superRefine(refuseRepeats).default(['jsonl'])

function refuseRepeats(entries: readonly LoggerEntry[], context: z.RefinementCtx): void {
  const seen = new Set<string>()
  entries.forEach((entry, index) => {
    const kind = typeof entry === 'string' ? entry : isRunLogger(entry) ? undefined : (entry as LoggerSpec).kind
    if (kind === undefined) return
    if (seen.has(kind)) context.addIssue({ code: 'custom', path: [index], message: `names the ${kind} logger a second time (each writes once)` })
    seen.add(kind)
  })
}

/** The trainers' configuration fields of their loggers. */
export const loggingConfigFields = {
  /** Where each step's metrics go (see `runLoggersSchema`). Default `['jsonl']`. */
  loggers: runLoggersSchema,
  /**
   * The configuration the loggers record (TensorBoard's `config` text, W&B's run config): plain data. Default: the
   * trainer config's plain settings (numbers, strings, booleans; the model, tokenizer, data and functions left out).
   * `ludic train` gives the run config file's.
   */
  loggedConfig: z.record(z.string(), z.unknown()).optional(),
}

/** The loggers of one run, called as one: what every trainer writes its steps through. */
export interface RunLoggers {
  /** Starts the loggers now; `resumed`: the run continues from the checkpoint of `step`, whose metrics are `history`. */
  start(resumed?: { step: number; history: readonly StepMetrics[] }): Promise<void>
  /** One step's metrics to every logger (starting them first if they are not). */
  log(metrics: StepMetrics): Promise<void>
  /** A text to every logger (starting them first if they are not). */
  text(tag: string, step: number, text: string): Promise<void>
  /** Closes every logger; a later `log` starts them again, continuing after the last step logged. */
  close(): Promise<void>
}

export interface RunLoggersOptions {
  /** The parsed `config.loggers`. */
  loggers: readonly LoggerEntry[]
  /** What the errors call the list. Default `config.loggers`. */
  argument?: string
  /** The run directory; undefined: none (`jsonl` then writes nothing; `tensorboard` and offline `wandb` are refused). */
  directory: string | undefined
  /** The training loop (`RunStartV1.trainer`). */
  trainer: string
  /** The configuration the loggers record (`RunStartV1.config`). */
  config: Readonly<Record<string, unknown>>
  notify: (message: string) => void
  /** W&B's variables. Default: `process.env`. */
  environment?: WandbEnvironment
  /** Finds `@wandb/sdk` (tests). Default: `require.resolve` from this package. */
  resolveWandbSdk?: () => string
}

/**
 * Makes the loggers of `loggers` now, so that a logger that cannot work is refused before anything trains (an
 * `InvalidArgumentError` naming `config.loggers.<i>`: TensorBoard or offline W&B without a run directory, online W&B
 * without `@wandb/sdk` or an API key; in the browser entry, any of Ludic's loggers that writes files or needs Node:
 * `tensorboard`, `wandb`, `jsonl` with a run directory).
 */
export function createRunLoggers(options: RunLoggersOptions): RunLoggers {
  const argument = options.argument ?? 'config.loggers'
  const loggers = options.loggers.map((entry, index) => {
    if (isRunLogger(entry)) return entry
    const spec: LoggerSpec = typeof entry === 'string' ? { kind: entry } : entry
    // `metrics.jsonl` without a run directory writes nothing, in a browser as in Node.
    if (spec.kind === 'jsonl' && options.directory === undefined) return idleLogger('jsonl')
    const platform = nodePlatform(`${argument}.${index}`, entry)
    try {
      return platform.createFileLogger(spec, options)
    } catch (error) {
      if (!LudicError.isInstance(error)) throw error
      throw new InvalidArgumentError({
        argument: `${argument}.${index}`,
        value: entry,
        message: error.message,
        cause: error,
      })
    }
  })
  let started = false
  let lastStep: number | undefined
  const start = async (resumed?: { step: number; history: readonly StepMetrics[] }) => {
    const resumedAtStep = resumed?.step ?? lastStep
    for (const logger of loggers) {
      await logger.start({
        directory: options.directory,
        trainer: options.trainer,
        config: redactSecrets(options.config),
        notify: options.notify,
        ...(resumedAtStep === undefined ? {} : { resumedAtStep }),
        ...(resumed === undefined ? {} : { history: resumed.history }),
      })
    }
    started = true
  }
  return {
    start,
    async log(metrics) {
      if (!started) await start()
      for (const logger of loggers) await logger.log(metrics)
      lastStep = metrics.step
    },
    async text(tag, step, text) {
      if (!started) await start()
      for (const logger of loggers) await logger.text(tag, step, text)
    },
    async close() {
      if (!started) return
      started = false
      for (const logger of loggers) await logger.close()
    },
  }
}

/** A logger that records nothing (`jsonl` without a run directory). */
const idleLogger = (name: string): RunLoggerV1 => ({ specificationVersion: 'v1', name, start() {}, log() {}, text() {}, close() {} })

/** The `notify` of trainers that take none: a warning on stderr. */
/** Field names whose string values a run's recorded configuration does not keep: keys, tokens, passwords. */
const secretField = /(?:api[-_]?key|secret|password|passphrase|authorization|(?:access|auth|bearer|hf)[-_]?token)$/i

/**
 * A copy of a plain configuration with every string under a secret-looking field name (`apiKey`, `hfToken`, `password`
 * …) replaced by `<redacted>`: what the loggers record (TensorBoard's text, W&B's run config) and `ludic train`'s
 * `run-config.json`, since run directories and tracker projects get shared.
 */
export function redactSecrets<T>(config: T): T {
  const redact = (value: unknown, key: string): unknown => {
    if (typeof value === 'string') return secretField.test(key) ? '<redacted>' : value
    if (Array.isArray(value)) return value.map((item) => redact(item, key))
    if (typeof value === 'object' && value !== null && (Object.getPrototypeOf(value) === Object.prototype || Object.getPrototypeOf(value) === null))
      return Object.fromEntries(Object.entries(value).map(([name, item]) => [name, redact(item, name)]))
    return value
  }
  return redact(config, '') as T
}

export const warnNotify = (message: string): void => console.warn(`[ludic trainer] ${message}`)

/**
 * A trainer config's plain settings, for the loggers to record: numbers, strings, booleans and null, and arrays and
 * plain objects of them, at most 8 deep; the fields named in `leaveOut` (the model, the data), functions and class
 * instances left out, long arrays cut to their length.
 */
export function plainConfig(config: Readonly<Record<string, unknown>>, leaveOut: readonly string[] = []): Record<string, unknown> {
  const plain = (value: unknown, depth: number): unknown => {
    if (value === null || typeof value === 'string' || typeof value === 'boolean') return value
    if (typeof value === 'number') return Number.isFinite(value) ? value : String(value)
    if (depth >= 8) return undefined
    if (Array.isArray(value)) return value.length > 64 ? `[${value.length} items]` : value.map((item) => plain(item, depth + 1) ?? null)
    if (typeof value === 'object' && (Object.getPrototypeOf(value) === Object.prototype || Object.getPrototypeOf(value) === null)) {
      const entries = Object.entries(value as Record<string, unknown>).map(([key, item]) => [key, plain(item, depth + 1)] as const)
      return Object.fromEntries(entries.filter(([, item]) => item !== undefined))
    }
    return undefined
  }
  return plain(Object.fromEntries(Object.entries(config).filter(([key]) => !leaveOut.includes(key))), 0) as Record<string, unknown>
}
