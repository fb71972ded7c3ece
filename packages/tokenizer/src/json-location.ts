import { ParseError, parseInput } from '@ludic/core'
import { z } from 'zod'
import { raiseLimitHint, type TokenizerLimits } from './tokenizer-limits.js'

/** Where a value sits in the file being parsed: the file (`'tokenizer.json'` or a path) and the JSON path. */
export interface JsonLocation {
  readonly source: string
  readonly path: readonly (string | number)[]
}

/** The location of a field inside `location`. */
export function childLocation(location: JsonLocation, ...keys: (string | number)[]): JsonLocation {
  return { source: location.source, path: [...location.path, ...keys] }
}

/** Parses `value` with a zod schema (core's `parseInput`); on failure throws a `ParseError` with the JSON path of the bad field. */
export function parseJson<Schema extends z.ZodType>(schema: Schema, value: unknown, location: JsonLocation): z.output<Schema> {
  return parseInput(schema, value, location)
}

/** Builds one pipeline component from its JSON (within `limits`), dispatching on `type`. */
export type ComponentBuilder<Component> = (json: unknown, location: JsonLocation, limits: TokenizerLimits) => Component

/**
 * Dispatches on the `type` field of a component's JSON. An unknown type gives a `ParseError` at
 * `…type` that names the type and the supported ones.
 */
export function buildComponent<Component>(
  kind: string,
  builders: Readonly<Record<string, ComponentBuilder<Component>>>,
  json: unknown,
  location: JsonLocation,
  limits: TokenizerLimits,
): Component {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new ParseError({ source: location.source, path: location.path, message: `a ${kind} must be an object with a "type"` })
  }
  const type = (json as { type?: unknown }).type
  if (typeof type !== 'string') {
    throw new ParseError({ source: location.source, path: [...location.path, 'type'], message: `a ${kind} needs a string "type"` })
  }
  const builder = Object.hasOwn(builders, type) ? builders[type] : undefined
  if (builder === undefined) {
    throw new ParseError({
      source: location.source,
      path: [...location.path, 'type'],
      message: `unsupported ${kind} type '${type}'; supported: ${Object.keys(builders).join(', ')}`,
    })
  }
  return builder(json, location, limits)
}

/**
 * Reads the items of a `Sequence` component (`{ type: 'Sequence', [itemsKey]: [...] }`), checking before
 * any is built that the Sequence is at most `limits.maxSequenceDepth` deep (so that a file nesting them
 * thousands deep is a ParseError, not a stack overflow) and holds at most `limits.maxSequenceLength`
 * components, those of nested Sequences included (each runs on the whole text). Its depth is read from its
 * JSON path: one more than the number of `itemsKey` steps on it.
 */
export function readSequenceItems(kind: string, itemsKey: string, json: unknown, location: JsonLocation, limits: TokenizerLimits): unknown[] {
  let depth = 1
  for (const key of location.path) if (key === itemsKey) depth++
  if (depth > limits.maxSequenceDepth) {
    throw new ParseError({
      source: location.source,
      path: location.path,
      message: `${kind} Sequences nest ${depth} deep here, over the limit of ${limits.maxSequenceDepth} (limits.maxSequenceDepth); ${raiseLimitHint('maxSequenceDepth')}`,
    })
  }
  const items = parseJson(z.object({ [itemsKey]: z.array(z.unknown()) }), json, location)[itemsKey] as unknown[]
  // Count the components (nested Sequences and theirs too) down to the depth limit, stopping past the length
  // limit: shared objects count each time they are used, as they run each time.
  let count = 0
  const pending: [unknown, number][] = items.map((item) => [item, depth + 1])
  while (pending.length > 0 && count <= limits.maxSequenceLength) {
    const [item, itemDepth] = pending.pop()!
    count++
    const nested =
      typeof item === 'object' && item !== null && (item as { type?: unknown }).type === 'Sequence' ? (item as Record<string, unknown>)[itemsKey] : undefined
    if (Array.isArray(nested) && itemDepth <= limits.maxSequenceDepth) {
      for (const child of nested.slice(0, limits.maxSequenceLength + 1)) pending.push([child, itemDepth + 1])
    }
  }
  if (count > limits.maxSequenceLength) {
    throw new ParseError({
      source: location.source,
      path: [...location.path, itemsKey],
      message: `a Sequence of more than ${limits.maxSequenceLength} ${kind}s, nested Sequences included, is over the limit (limits.maxSequenceLength); ${raiseLimitHint('maxSequenceLength')}`,
    })
  }
  return items
}
