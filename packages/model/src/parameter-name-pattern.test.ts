import { createRandom } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { matchesParameterNamePattern, parameterNamePatternSchema, type ParameterNamePattern } from './parameter-name-pattern.js'

const names = [
  'model.embed_tokens.weight',
  'model.layers.0.input_layernorm.weight',
  'model.layers.0.self_attn.q_proj.weight',
  'model.layers.0.self_attn.q_proj.bias',
  'model.layers.0.self_attn.q_proj.lora_A.weight',
  'model.layers.10.mlp.up_proj.weight',
  'model.norm.weight',
  'lm_head.weight',
]

const table: { pattern: ParameterNamePattern | ParameterNamePattern[]; matches: string[] }[] = [
  { pattern: 'model.embed_tokens.weight', matches: ['model.embed_tokens.weight'] },
  { pattern: 'embed', matches: [] }, // a string is never a substring
  { pattern: 'model.embed_tokens', matches: [] }, // nor a prefix
  { pattern: '**', matches: names },
  { pattern: 'model.**', matches: names.filter((name) => name.startsWith('model.')) },
  { pattern: '**.bias', matches: ['model.layers.0.self_attn.q_proj.bias'] },
  { pattern: '*.weight', matches: ['lm_head.weight'] }, // `*` stays inside one segment
  { pattern: '**norm.weight', matches: ['model.layers.0.input_layernorm.weight', 'model.norm.weight'] },
  { pattern: '**.*norm.weight', matches: ['model.layers.0.input_layernorm.weight', 'model.norm.weight'] },
  { pattern: 'model.layers.*.self_attn.*_proj.weight', matches: ['model.layers.0.self_attn.q_proj.weight'] },
  { pattern: 'model.layers.*.**.weight', matches: names.filter((name) => name.startsWith('model.layers.') && name.endsWith('.weight')) },
  { pattern: 'model.**.q_proj.**', matches: names.filter((name) => name.includes('.q_proj.')) },
  { pattern: '**.layers.1*.**', matches: ['model.layers.10.mlp.up_proj.weight'] },
  { pattern: 'model.layers.0.self_attn.q_proj.(weight)', matches: [] }, // regular-expression characters are literal
  { pattern: /embed_tokens|layers\.0\.input/, matches: ['model.embed_tokens.weight', 'model.layers.0.input_layernorm.weight'] }, // a RegExp searches
  { pattern: /^lm_head\./, matches: ['lm_head.weight'] },
  { pattern: /\.bias$/g, matches: ['model.layers.0.self_attn.q_proj.bias'] }, // a global RegExp's lastIndex is reset
  { pattern: ['**.bias', /^lm_head/], matches: ['model.layers.0.self_attn.q_proj.bias', 'lm_head.weight'] },
  { pattern: [], matches: [] },
]

describe('matchesParameterNamePattern', () => {
  it.each(table)('$pattern', ({ pattern, matches }) => {
    expect(names.filter((name) => matchesParameterNamePattern(name, pattern))).toEqual(matches)
    expect(names.filter((name) => matchesParameterNamePattern(name, pattern))).toEqual(matches) // stateless
  })

  it('matches a glob without backtracking: `**` × 20 on a layer name answers at once (as a RegExp it backtracked for minutes)', () => {
    // PEFT's list form of target_modules is read from adapter_config.json as '**.' + module: a file chooses the glob.
    expect(matchesParameterNamePattern('model.layers.10.self_attn.q_proj', `**.${'**'.repeat(20)}X`)).toBe(false)
    expect(matchesParameterNamePattern('model.layers.10.self_attn.q_proj', `**.${'*'.repeat(40)}j`)).toBe(true)
    expect(matchesParameterNamePattern('model.layers.10.self_attn.q_proj', '**.**.**.**.**.**.**.**.**.**.**.**.**.X')).toBe(false)
  })

  it('matches as the glob read as a RegExp would, on random globs and names', () => {
    const random = createRandom(34)
    const pieces = ['*', '**', '.', 'a', 'b', '.**.', '**.', '.**']
    const characters = ['a', 'b', '.', '_']
    for (let trial = 0; trial < 2_000; trial++) {
      const glob = Array.from({ length: 1 + random.nextInt(5) }, () => random.choice(pieces)).join('')
      const name = Array.from({ length: random.nextInt(8) }, () => random.choice(characters)).join('')
      expect(matchesParameterNamePattern(name, glob), `${glob} on ${JSON.stringify(name)}`).toBe(referenceGlob(glob).test(`.${name}`))
    }
  })

  it('validates patterns: a non-empty string or a RegExp', () => {
    expect(parameterNamePatternSchema.safeParse('**.bias').success).toBe(true)
    expect(parameterNamePatternSchema.safeParse(/bias/).success).toBe(true)
    expect(parameterNamePatternSchema.safeParse('').success).toBe(false)
    expect(parameterNamePatternSchema.safeParse(() => true).success).toBe(false)
  })
})

/** The glob as a RegExp over `'.' + name` (how it was matched before: right, but backtracking). */
function referenceGlob(glob: string): RegExp {
  const escapeText = (text: string) => text.replace(/[.+?^${}()|[\]\\]/g, '\\$&')
  const segments = glob.split('.').map((segment) =>
    segment === '**'
      ? '(?:\\.[^.]*)*'
      : `\\.${segment
          .split('**')
          .map((part) => part.split('*').map(escapeText).join('[^.]*'))
          .join('.*')}`,
  )
  return new RegExp(`^${segments.join('')}$`)
}
