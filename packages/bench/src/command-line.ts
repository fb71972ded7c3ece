import { InvalidArgumentError } from '@ludic/core'
import type { z } from 'zod'
import { benchSuiteNames, benchSuites } from './bench-suites.js'

/** The kind of value an option takes, read from its zod schema (defaults and optionals unwrapped). */
type Kind = 'boolean' | 'number' | 'string' | { list: Kind } | 'unknown'

function kindOf(schema: z.ZodType | undefined): Kind {
  const definition = (schema as { _zod?: { def?: Record<string, unknown> } } | undefined)?._zod?.def
  if (definition === undefined) return 'unknown'
  switch (definition.type) {
    case 'default':
    case 'prefault':
    case 'optional':
    case 'nullable':
      return kindOf(definition.innerType as z.ZodType)
    case 'boolean':
      return 'boolean'
    case 'number':
      return 'number'
    case 'string':
    case 'enum':
    case 'literal':
      return 'string'
    case 'array':
      return { list: kindOf(definition.element as z.ZodType) }
    case 'union': {
      const kinds = (definition.options as z.ZodType[]).map(kindOf)
      return kinds.includes('string') ? 'string' : (kinds[0] ?? 'unknown')
    }
    default:
      return 'unknown'
  }
}

function convert(kind: Kind, text: string): unknown {
  if (typeof kind === 'object') {
    // A list: comma-separated; a list of lists: lists separated by commas, their items by `+` (`kuhn-poker-v1+tictactoe-v0,pig-dice-v0`).
    return text
      .split(',')
      .filter((item) => item !== '')
      .map((item) => (typeof kind.list === 'object' ? convert(kind.list, item.replaceAll('+', ',')) : convert(kind.list, item)))
  }
  if (kind === 'number') return /^-?\d+(\.\d+)?(e-?\d+)?$/i.test(text) ? Number(text) : text
  if (kind === 'boolean') return text === 'true' ? true : text === 'false' ? false : text
  return text
}

/**
 * A suite's options from command-line words, by its schema: `--quick` (a flag alone is `true`), `--presets tiny,small`
 * (lists are comma-separated; lists of lists `a+b,c`), `--repetitions 3`, `--peer-threads 2,1`; kebab-case flags
 * become camelCase fields. Values the schema does not expect stay strings, so `runBenchSuite` names them; an unknown
 * suite is an `InvalidArgumentError` listing the names.
 */
export function benchOptionsFromArguments(name: string, argv: readonly string[]): Record<string, unknown> {
  if (!Object.hasOwn(benchSuites, name))
    throw new InvalidArgumentError({ argument: 'name', value: name, message: `is not a bench suite (${benchSuiteNames.join(', ')})` })
  const shape = ((benchSuites[name]!.optionsSchema as unknown as { shape?: Record<string, z.ZodType> }).shape ?? {}) as Record<string, z.ZodType>
  const options: Record<string, unknown> = {}
  for (let index = 0; index < argv.length; index++) {
    const flag = argv[index]!
    if (!flag.startsWith('--') || flag.length === 2) throw new InvalidArgumentError({ argument: 'argv', value: flag, message: 'expected --name [value]' })
    const field = flag.slice(2).replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase())
    const kind = kindOf(shape[field])
    const next = argv[index + 1]
    if (kind === 'boolean' && (next === undefined || next.startsWith('--'))) {
      options[field] = true
      continue
    }
    if (next === undefined) throw new InvalidArgumentError({ argument: 'argv', value: flag, message: 'has no value' })
    options[field] = convert(kind, next)
    index++
  }
  return options
}
