import { InvalidArgumentError, pathBeyondDepth } from '@ludic/core'
import { parse as parseYaml } from 'yaml'

/**
 * `--steps 10 --sft-steps 20 --run-directory runs/x --progress false` → `{ steps: 10, sftSteps: 20, runDirectory:
 * 'runs/x', progress: false }`: kebab-case flags become camelCase names, numbers and booleans are converted, every
 * other value stays a string. The result is meant for a zod options schema, which checks names and types.
 */
export function parseCommandLineOptions(argv: readonly string[]): Record<string, unknown> {
  const options: Record<string, unknown> = {}
  for (let index = 0; index < argv.length; index += 2) {
    const flag = argv[index]!
    const value = argv[index + 1]
    if (!flag.startsWith('--') || flag.length === 2) throw new InvalidArgumentError({ argument: 'argv', value: flag, message: 'expected --name value pairs' })
    if (value === undefined) throw new InvalidArgumentError({ argument: 'argv', value: flag, message: 'has no value (expected --name value pairs)' })
    const name = flag.slice(2).replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase())
    options[name] = /^-?\d+(\.\d+)?(e-?\d+)?$/i.test(value) ? Number(value) : value === 'true' || value === 'false' ? value === 'true' : value
  }
  return options
}

/** The deepest nesting of objects and arrays a run config (and an override's value) may have. */
export const runConfigMaxDepth = 64

/**
 * `['batch.episodesPerStep=4', 'environments.0.options.rounds=1']` on a parsed config file → a copy with those
 * fields set (the file is not changed). A value is read as YAML: `4`, `true`, `[a, b]`, `{ x: 1 }`, anything else a
 * string. Objects and arrays missing on the way are made (an array where the next key is a number). An index into an
 * array may be at most its length (the next one appends): `environments.4294967294.game=x` would make an array of
 * four billion holes. An entry without `=`, with an empty path, through a value that is not an object, with an index
 * past an array's end or a key that is not an index on an array, through `__proto__`, `constructor` or `prototype`,
 * with a value that is not YAML or nested more than 64 deep, is an `InvalidArgumentError` naming it.
 */
export function applyConfigOverrides(config: unknown, overrides: readonly string[]): unknown {
  const tooDeep = pathBeyondDepth(config, runConfigMaxDepth)
  if (tooDeep !== undefined)
    throw new InvalidArgumentError({
      argument: 'config',
      value: tooDeep.join('.'),
      message: `is nested more than ${runConfigMaxDepth} objects and arrays deep`,
    })
  const root: unknown = structuredClone(config ?? {})
  for (const [index, override] of overrides.entries()) {
    const argument = `overrides[${index}]`
    const equals = override.indexOf('=')
    const keys = equals < 0 ? [] : override.slice(0, equals).split('.')
    if (keys.length === 0 || keys.some((key) => key.length === 0))
      throw new InvalidArgumentError({ argument, value: override, message: 'must be path=value, e.g. batch.episodesPerStep=4' })
    const value = parseOverrideValue(override.slice(equals + 1), argument, override)
    let target = root
    for (const [depth, key] of keys.entries()) {
      const path = keys.slice(0, depth + 1).join('.')
      if (typeof target !== 'object' || target === null || forbiddenKeys.has(key))
        throw new InvalidArgumentError({ argument, value: override, message: `cannot set ${path}` })
      if (Array.isArray(target)) {
        const at = /^(0|[1-9]\d*)$/.test(key) ? Number(key) : Number.NaN
        if (!(at <= target.length)) {
          const where = keys.slice(0, depth).join('.') || 'the config'
          throw new InvalidArgumentError({
            argument,
            value: override,
            message: Number.isNaN(at)
              ? `cannot set ${path}: ${where} is a list, indexed by 0, 1, 2…`
              : `cannot set ${path}: ${where} has ${target.length} item${target.length === 1 ? '' : 's'}, so its index is at most ${target.length} (which appends one)`,
          })
        }
      }
      const container = target as Record<string, unknown>
      if (depth === keys.length - 1) container[key] = value
      else {
        container[key] ??= /^\d+$/.test(keys[depth + 1]!) ? [] : {}
        target = container[key]
      }
    }
  }
  return root
}

/** An override's value as YAML (aliases expanding past 100 and nesting past `runConfigMaxDepth` are refused). */
function parseOverrideValue(text: string, argument: string, override: string): unknown {
  let value: unknown
  try {
    value = parseYaml(text, { maxAliasCount: 100 })
  } catch (error) {
    throw new InvalidArgumentError({ argument, value: override, message: `has a value that is not YAML (${(error as Error).message})`, cause: error })
  }
  if (pathBeyondDepth(value, runConfigMaxDepth) !== undefined)
    throw new InvalidArgumentError({ argument, value: override, message: `has a value nested more than ${runConfigMaxDepth} objects and arrays deep` })
  return value
}

const forbiddenKeys = new Set(['__proto__', 'prototype', 'constructor'])
