import { InvalidArgumentError } from '@ludic/core'
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

/**
 * `['batch.episodesPerStep=4', 'environments.0.options.rounds=1']` on a parsed config file → a copy with those
 * fields set (the file is not changed). A value is read as YAML: `4`, `true`, `[a, b]`, `{ x: 1 }`, anything else a
 * string. Objects and arrays missing on the way are made (an array where the next key is a number). An entry
 * without `=`, with an empty path, through a value that is not an object, or whose value is not YAML is an
 * `InvalidArgumentError` naming it.
 */
export function applyConfigOverrides(config: unknown, overrides: readonly string[]): unknown {
  const root: unknown = structuredClone(config ?? {})
  for (const [index, override] of overrides.entries()) {
    const equals = override.indexOf('=')
    const keys = equals < 0 ? [] : override.slice(0, equals).split('.')
    if (keys.length === 0 || keys.some((key) => key.length === 0))
      throw new InvalidArgumentError({ argument: `overrides[${index}]`, value: override, message: 'must be path=value, e.g. batch.episodesPerStep=4' })
    let target = root
    for (const [depth, key] of keys.entries()) {
      if (typeof target !== 'object' || target === null || forbiddenKeys.has(key))
        throw new InvalidArgumentError({ argument: `overrides[${index}]`, value: override, message: `cannot set ${keys.slice(0, depth + 1).join('.')}` })
      const container = target as Record<string, unknown>
      if (depth === keys.length - 1) container[key] = overrideValue(override.slice(equals + 1), index, override)
      else {
        container[key] ??= /^\d+$/.test(keys[depth + 1]!) ? [] : {}
        target = container[key]
      }
    }
  }
  return root
}

const forbiddenKeys = new Set(['__proto__', 'prototype', 'constructor'])

/** An override's value, read as YAML; a value that is not YAML (`[a, b`) is an `InvalidArgumentError` naming the entry. */
function overrideValue(text: string, index: number, override: string): unknown {
  try {
    return parseYaml(text)
  } catch (error) {
    throw new InvalidArgumentError({
      argument: `overrides[${index}]`,
      value: override,
      message: `the value is not YAML (${(error as Error).message.split('\n')[0]})`,
      cause: error,
    })
  }
}
