import { z } from 'zod'

/**
 * A parameter-name pattern: a `RegExp` (tested against the whole name with `.test`), or a string where
 * `*` matches any run of characters and everything else is literal, matched against the whole name
 * (`'*.bias'`, `'*norm.weight'`, `'model.embed_tokens.weight'`).
 */
export type ParameterNamePattern = string | RegExp

export const parameterNamePatternSchema = z.union([z.string().min(1), z.instanceof(RegExp)])

/** Whether `name` matches any of `patterns`. */
export function matchesAnyPattern(name: string, patterns: readonly ParameterNamePattern[]): boolean {
  return patterns.some((pattern) => {
    if (typeof pattern === 'string') return globToRegExp(pattern).test(name)
    pattern.lastIndex = 0 // a global or sticky RegExp keeps state between calls
    return pattern.test(name)
  })
}

function globToRegExp(pattern: string): RegExp {
  const body = pattern
    .split('*')
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*')
  return new RegExp(`^${body}$`)
}
