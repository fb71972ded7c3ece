import { describe, expect, it } from 'vitest'
import { findRegExpBacktrackingHazard } from './regex-backtracking.js'

describe('findRegExpBacktrackingHazard', () => {
  it.each([
    ['(.+)+X', '+ at offset 4'],
    ['^(?:(.+)+X)$', '+ at offset 8'],
    ['(a|a)*', '* at offset 5'],
    ['(\\w+\\s?)*', '* at offset 8'],
    ['(a?){20}', '{20} at offset 4'],
    ['(?<name>a+)+', '+ at offset 11'],
    ['(?=(a+)+)', '+ at offset 7'],
    ['(?:[a-z]+|\\d)*?$', '* at offset 13'],
  ])('refuses %s: a repeated part that can match in more than one way (rule 1, whatever the text)', (source, where) => {
    expect(findRegExpBacktrackingHazard(source)).toContain(`the quantifier ${where} repeats a part that can itself match in more than one way`)
  })

  it.each([
    '.*\\.(q_proj|v_proj)',
    '^(?:.*decoder.*(SelfAttention|EncDecAttention).*(q|v)$)$',
    '^(?!.*visual).*(?:q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj).*',
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+",
    '(?:(?=(?<atomic0>(?:a)+))\\k<atomic0>)+', // the tokenizer's emulation of a possessive a++: atomic
    '(?:(?!vision).)*',
    'a{2,3}b{4}',
    '[(+*]+\\(\\{',
    '\\u{1F600}+',
  ])('accepts %s, which backtracks polynomially with few quantifiers in a row', (source) => {
    expect(findRegExpBacktrackingHazard(source, { flags: 'u', textLength: 64 })).toBeUndefined()
  })

  it('refuses many variable quantifiers in a row when the text length is known (rule 2), and says so', () => {
    const source = `^(?:${'.*'.repeat(10)}X)$`
    expect(findRegExpBacktrackingHazard(source)).toBeUndefined() // rule 1 alone cannot see it
    expect(findRegExpBacktrackingHazard(source, { textLength: 32 })).toMatch(
      /can backtrack polynomially: up to .* ways to try a match on a text of 32 characters/,
    )
    expect(findRegExpBacktrackingHazard('(?:a|a)(?:a|a)'.repeat(20), { textLength: 32 })).toMatch(/polynomially/)
    expect(findRegExpBacktrackingHazard(source, { textLength: 32, maxPaths: Number.POSITIVE_INFINITY })).toBeUndefined()
  })

  it('never throws, whatever the source (syntax errors are the compiler to report)', () => {
    for (const source of ['(', ')', '\\', '[', '(?', '(?<', '*', 'a{', 'a{1,', '\\k<', '\\u{', '((((a', 'a))))'])
      expect(() => findRegExpBacktrackingHazard(source, { textLength: 10 })).not.toThrow()
  })
})
