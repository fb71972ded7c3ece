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
    if (typeof pattern === 'string') return matchesGlob(`.${name}`, globTokens(pattern))
    pattern.lastIndex = 0 // a global or sticky RegExp keeps state between calls
    return pattern.test(name)
  })
}

/**
 * A glob's parts over `'.' + name`, each segment bringing its leading dot so that a `**` segment can match none:
 * a literal character, `*` (a run without `.`), `**` inside a segment (any run) or a `**` segment (zero or more
 * whole segments, `(\.[^.]*)*`).
 */
type GlobToken = { kind: 'literal'; character: string } | { kind: 'star' } | { kind: 'any' } | { kind: 'segments' }

function globTokens(glob: string): GlobToken[] {
  const tokens: GlobToken[] = []
  for (const segment of glob.split('.')) {
    if (segment === '**') {
      tokens.push({ kind: 'segments' })
      continue
    }
    tokens.push({ kind: 'literal', character: '.' })
    for (let index = 0; index < segment.length; index++) {
      if (segment.startsWith('**', index)) {
        tokens.push({ kind: 'any' })
        index++
      } else if (segment[index] === '*') tokens.push({ kind: 'star' })
      else tokens.push({ kind: 'literal', character: segment[index]! })
    }
  }
  return tokens
}

/**
 * Matches by dynamic programming over (token, position), never by backtracking: time is tokens × characters and memory
 * two rows of characters, whatever the glob (as a RegExp, `**` × 10 took seconds on a 32-character name, and globs
 * come from files: PEFT's list of `target_modules`, run configs).
 */
function matchesGlob(text: string, tokens: readonly GlobToken[]): boolean {
  const width = text.length + 1
  // below[j]: tokens[i + 1..] match text[j..]; row[j]: tokens[i..] do; inSegment[j]: the same, inside a `segments` token's segment.
  let below = new Uint8Array(width)
  let row = new Uint8Array(width)
  const inSegment = new Uint8Array(width + 1)
  below[text.length] = 1
  for (let i = tokens.length - 1; i >= 0; i--) {
    const token = tokens[i]!
    row.fill(0)
    inSegment.fill(0)
    for (let j = text.length; j >= 0; j--) {
      const character = text[j]
      let value: boolean
      if (token.kind === 'literal') value = character === token.character && below[j + 1] === 1
      else if (token.kind === 'star') value = below[j] === 1 || (character !== undefined && character !== '.' && row[j + 1] === 1)
      else if (token.kind === 'any') value = below[j] === 1 || (character !== undefined && row[j + 1] === 1)
      else {
        value = below[j] === 1 || (character === '.' && inSegment[j + 1] === 1)
        inSegment[j] = value || (character !== undefined && character !== '.' && inSegment[j + 1] === 1) ? 1 : 0
      }
      row[j] = value ? 1 : 0
    }
    ;[below, row] = [row, below]
  }
  return below[0] === 1
}
