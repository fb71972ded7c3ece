import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { isPolicy, isTokenizer, policySchema, tokenizerSchema } from './interface-checks.js'
import { createByteTokenizer } from './test/byte-tokenizer.js'
import { createScriptedPolicy } from './test/scripted-policy.js'

describe('isPolicy / policySchema', () => {
  it('accepts a PolicyV1 and rejects look-alikes', () => {
    const policy = createScriptedPolicy({ replies: ['x'] })
    expect(isPolicy(policy)).toBe(true)
    expect(isPolicy({ specificationVersion: 'v1', id: 'p', generate: async () => [] })).toBe(true)
    expect(isPolicy({ specificationVersion: 'v2', id: 'p', generate: async () => [] })).toBe(false)
    expect(isPolicy({ specificationVersion: 'v1', generate: async () => [] })).toBe(false)
    expect(isPolicy({ specificationVersion: 'v1', id: 'p' })).toBe(false)
    expect(isPolicy(null)).toBe(false)
    expect(isPolicy(async () => [])).toBe(false)
  })

  it('names what a PolicyV1 needs in a schema', () => {
    const schema = z.object({ policy: policySchema })
    const result = schema.safeParse({ policy: { id: 'p' } })
    expect(result.success).toBe(false)
    expect(result.error?.issues[0]?.path).toEqual(['policy'])
    expect(result.error?.issues[0]?.message).toBe("must be a PolicyV1 (specificationVersion 'v1', id, generate)")
  })
})

describe('isTokenizer / tokenizerSchema', () => {
  it('accepts a TokenizerV1', () => {
    expect(isTokenizer(createByteTokenizer())).toBe(true)
    const { applyChatTemplate: _template, encodeChat: _encodeChat, createStreamDecoder: _decoder, ...withoutOptional } = createByteTokenizer()
    expect(isTokenizer(withoutOptional)).toBe(true)
    expect(isTokenizer({ ...createByteTokenizer(), bosTokenId: undefined, eosTokenId: undefined, padTokenId: undefined })).toBe(true)
  })

  it.each([
    ['specificationVersion', { specificationVersion: 'v2' }],
    ['vocabSize', { vocabSize: '259' }],
    ['bosTokenId', { bosTokenId: null }],
    ['eosTokenId', { eosTokenId: 1.5 }],
    ['padTokenId', { padTokenId: '0' }],
    ['encode', { encode: undefined }],
    ['decode', { decode: 'decode' }],
    ['tokenToId', { tokenToId: undefined }],
    ['idToToken', { idToToken: {} }],
    ['applyChatTemplate', { applyChatTemplate: 'template' }],
    ['encodeChat', { encodeChat: 'encode' }],
    ['createStreamDecoder', { createStreamDecoder: null }],
  ])('rejects a tokenizer with a wrong %s', (_member, change) => {
    expect(isTokenizer({ ...createByteTokenizer(), ...change })).toBe(false)
  })

  it('rejects non-objects and names what a TokenizerV1 needs in a schema', () => {
    expect(isTokenizer(null)).toBe(false)
    expect(isTokenizer('tokenizer')).toBe(false)
    const result = z.object({ tokenizer: tokenizerSchema.optional() }).safeParse({ tokenizer: { encode: () => new Int32Array(0) } })
    expect(result.success).toBe(false)
    expect(result.error?.issues[0]?.path).toEqual(['tokenizer'])
    expect(result.error?.issues[0]?.message).toMatch(/^must be a TokenizerV1 \(specificationVersion 'v1', vocabSize, .*encode, decode, tokenToId, idToToken\)$/)
  })
})
