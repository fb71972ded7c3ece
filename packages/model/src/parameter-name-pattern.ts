import { z } from 'zod'

/**
 * A pattern over parameter and layer names, the dotted Hugging Face names (`model.layers.0.self_attn.q_proj.weight`).
 * One rule wherever Ludic matches names (`model.freeze`, `model.unfreeze`, AdamW's `excludeFromWeightDecay`,
 * LoRA's `targetModules`):
 *
 * - a **string** is a glob over the whole name: `*` matches any run of characters inside one segment (never a
 *   `.`), `**` any run across segments, and a `**` segment (`**.bias`, `model.**`, `a.**.b`) zero or more whole
 *   segments; every other character is literal. `'model.embed_tokens.weight'` is that name only, `'**.bias'`
 *   every bias, `'**norm.weight'` every norm's weight, `'model.layers.*.self_attn.*_proj.weight'` the attention
 *   projections, `'**'` everything.
 * - a **RegExp** is tested against the whole name with `.test`: it matches anywhere in the name unless anchored
 *   (`/\.bias$/`, `/^model\.layers\.[01]\./`).
 */
export type ParameterNamePattern = string | RegExp

export const parameterNamePatternSchema = z.union([z.string().min(1), z.instanceof(RegExp)])

/** Whether `name` matches `patterns` (one pattern, or any of a list; see `ParameterNamePattern`). */
export function matchesParameterNamePattern(name: string, patterns: ParameterNamePattern | readonly ParameterNamePattern[]): boolean {
  const list: readonly ParameterNamePattern[] = typeof patterns === 'string' || patterns instanceof RegExp ? [patterns] : patterns
  return list.some((pattern) => {
    if (typeof pattern === 'string') return globToRegExp(pattern).test(`.${name}`)
    pattern.lastIndex = 0 // a global or sticky RegExp keeps state between calls
    return pattern.test(name)
  })
}

/** The glob as a RegExp over `'.' + name`: each segment brings its leading dot, so a `**` segment can match none. */
function globToRegExp(glob: string): RegExp {
  const escapeRegExp = (text: string) => text.replace(/[.+?^${}()|[\]\\]/g, '\\$&')
  const segments = glob.split('.').map((segment) =>
    segment === '**'
      ? '(?:\\.[^.]*)*'
      : `\\.${segment
          .split('**')
          .map((part) => part.split('*').map(escapeRegExp).join('[^.]*'))
          .join('.*')}`,
  )
  return new RegExp(`^${segments.join('')}$`)
}
