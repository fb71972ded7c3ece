import { ParseError, parseInput } from '@ludic/core'
import type { z } from 'zod'
import type { TokenizerLimits } from './tokenizer-limits.js'

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
