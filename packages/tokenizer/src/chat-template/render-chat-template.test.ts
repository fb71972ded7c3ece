import { LudicError } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { byteLevelBpeJson } from '../../test/small-tokenizers.js'
import { Tokenizer } from '../tokenizer.js'
import { defaultTokenizerLimits, TokenizerLimitError, type TokenizerLimits } from '../tokenizer-limits.js'
import { renderChatTemplate } from './render-chat-template.js'

const context = { messages: [{ role: 'user', content: 'hi' }], addGenerationPrompt: false, specialTokens: { eos_token: '</s>' } }

function render(source: string, limits: Partial<TokenizerLimits> = {}, variables: Record<string, unknown> = {}): string {
  return renderChatTemplate(source, { ...context, variables }, { ...defaultTokenizerLimits, ...limits })
}

/** The error a rendering throws. */
function failure(call: () => unknown): { error: unknown } {
  try {
    call()
  } catch (error) {
    return { error }
  }
  throw new Error('expected the rendering to fail')
}

/**
 * The rendering fails on `limit`. Which check fired tells when it fired: `range()` refuses before making its list
 * (made, a list of 10⁸ would fail on maxChatTemplateLength, or on memory), and a builtin's guard ("would make a
 * string") before the builtin runs (after it, the check of every value says "a string of the chat template").
 */
function expectLimit(call: () => unknown, limit: keyof TokenizerLimits): TokenizerLimitError {
  const { error } = failure(call)
  expect(TokenizerLimitError.isInstance(error), String(error)).toBe(true)
  expect((error as TokenizerLimitError).limit).toBe(limit)
  expect((error as Error).message).toContain(`(limits.${limit}); raise it with the limits.${limit} option of loadTokenizer or Tokenizer.fromJSON`)
  return error as TokenizerLimitError
}

describe('chat templates are rendered within limits, as Jinja’s sandbox', () => {
  it('caps range() at 100,000 items, as Python Jinja’s MAX_RANGE (range(100000000) was out of memory)', () => {
    const error = expectLimit(() => render('{% for i in range(100000000) %}{% endfor %}'), 'maxChatTemplateRange')
    expect(error.value).toBe(100_000_000)
    expect(error.message).toMatch(/^range\(\) of 100000000 items \(100000000\) is over the limit of 100000/)
    expect(render('{{ range(100000) | length }} {{ range(10, 0, -3) | join(",") }} {{ range(3) | join(",") }}')).toBe('100000 10,7,4,1 0,1,2')
    expect(render('{{ range(150000) | length }}', { maxChatTemplateRange: 150_000 })).toBe('150000')
  })

  it('bounds loops: nested range(100000) loops stop at the step limit', () => {
    expectLimit(() => render('{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}'), 'maxChatTemplateSteps')
    expectLimit(() => render('{% for i in range(1000) %}{{ i }}{% endfor %}', { maxChatTemplateSteps: 5000 }), 'maxChatTemplateSteps')
    expect(render('{% for i in range(1000) %}{{ i }}{% endfor %}', { maxChatTemplateSteps: 20_000 })).toHaveLength(2890)
  })

  it('caps the length of the strings and lists a template builds, and of its output', () => {
    const doubling = (operation: string) =>
      `{% set ns = namespace(value=${operation === '~' ? "'ab'" : '[1, 2]'}) %}{% for i in range(64) %}{% set ns.value = ns.value ${operation} ns.value %}{% endfor %}{{ ns.value | length }}`
    expect(expectLimit(() => render(doubling('~')), 'maxChatTemplateLength').value).toBe(2 ** 24)
    expect(expectLimit(() => render(doubling('+'), { maxChatTemplateLength: 1000 }), 'maxChatTemplateLength').value).toBe(1024)
    expectLimit(() => render("{{ 'x' | indent(500000000, true) }}"), 'maxChatTemplateLength')
    expectLimit(() => render('{{ text }}', { maxChatTemplateLength: 10 }, { text: 'more than ten' }), 'maxChatTemplateLength')
    expect(render('{{ text }}', { maxChatTemplateLength: 13 }, { text: 'more than ten' })).toBe('more than ten')
  })

  it('checks the builtins that multiply sizes before they run (they took a second or more to build the string)', () => {
    const long = "{% set long = 'x' | indent(4000000, true) %}"
    const lines = "{% set ns = namespace(s='\\n') %}{% for i in range(22) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}"
    for (const source of [
      '{{ messages | tojson(indent=100000000) }}',
      `${lines}{{ ns.s | indent(100) }}`,
      `${lines}{{ ns.s | indent(width=100) }}`,
      `${long}{{ range(100000) | join(long) }}`,
      `${long}{{ ['a', 'b', 'c', 'd'] | join(separator=long) }}`,
      `${long}{{ long.replace(' ', 'yyy') }}`,
      `${long}{{ long | replace(' ', long) }}`,
    ]) {
      const error = expectLimit(() => render(source), 'maxChatTemplateLength')
      expect(error.message, source).toMatch(
        /^the (tojson|indent|join|replace) of the chat template would make a string whose length \(\d+\) is over the limit of 10000000/,
      )
    }
    expect(
      render(
        "{{ 'a\\nb' | indent(2, true) }}|{{ [1, [2]] | tojson(indent=2) }}|{{ ['a', 'b'] | join(', ') }}|{{ 'aXb'.replace('X', '--') }}|{{ 'aXb' | replace('X', '') }}",
      ),
    ).toBe('  a\n  b|[\n  1,\n  [\n    2\n  ]\n]|a, b|a--b|ab')
  })

  it('stops after chatTemplateTimeoutMs when single steps are slow (scans of a long string)', () => {
    const source = "{% set long = 'x' | indent(5000000, true) %}{% for i in range(50000) %}{% if 'zz' in long %}{% endif %}{% endfor %}"
    expectLimit(() => render(source, { chatTemplateTimeoutMs: 100 }), 'chatTemplateTimeoutMs')
  })

  it('keeps raise_exception, recursion and other failures typed (LudicError), and strftime_now working', () => {
    const raised = failure(() => render("{{ raise_exception('Conversation roles must alternate') }}")).error
    expect(LudicError.isInstance(raised) && raised.message).toBe('cannot render the chat template: Conversation roles must alternate')
    const recursion = failure(() => render('{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}')).error
    expect(LudicError.isInstance(recursion)).toBe(true)
    expect(render("{{ strftime_now('%Y') }}")).toBe(String(new Date().getFullYear()))
    expect(render('{{ true }} {{ none is none }} {{ True and not False }} {{ None }}')).toBe('true true true ')
  })

  it('uses the limits a tokenizer was loaded with', () => {
    const config = { chat_template: '{% for m in messages %}{{ range(150000) | length }} {{ m.content }}{% endfor %}' }
    const messages = [{ role: 'user' as const, content: 'hi' }]
    expectLimit(() => Tokenizer.fromJSON(byteLevelBpeJson(), config).applyChatTemplate(messages), 'maxChatTemplateRange')
    const raised = Tokenizer.fromJSON(byteLevelBpeJson(), config, { limits: { maxChatTemplateRange: 150_000 } })
    expect(raised.applyChatTemplate(messages)).toBe('150000 hi')
  })
})
