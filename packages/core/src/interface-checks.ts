import { z } from 'zod'
import type { PolicyV1, TokenizerV1 } from './interfaces.js'

/**
 * Runtime checks of the interfaces, written once: every package that takes a policy or a tokenizer as an
 * argument or an option checks it with these (`isPolicy(value)`, or `tokenizer: tokenizerSchema` in a zod
 * options schema), so "is a PolicyV1" means the same everywhere.
 */

const isObject = (value: unknown): value is Record<PropertyKey, unknown> => typeof value === 'object' && value !== null
const isFunction = (value: unknown): boolean => typeof value === 'function'
const isOptionalFunction = (value: unknown): boolean => value === undefined || typeof value === 'function'
const isOptionalTokenId = (value: unknown): boolean => value === undefined || (typeof value === 'number' && Number.isInteger(value))

/** Whether `value` is a `PolicyV1`: `specificationVersion` `'v1'`, a string `id` and a `generate` function. */
export function isPolicy(value: unknown): value is PolicyV1 {
  if (!isObject(value)) return false
  return value.specificationVersion === 'v1' && typeof value.id === 'string' && isFunction(value.generate)
}

/**
 * Whether `value` is a `TokenizerV1`: `specificationVersion` `'v1'`, a numeric `vocabSize`, integer or
 * undefined `bosTokenId` / `eosTokenId` / `padTokenId`, the functions `encode`, `decode`, `tokenToId` and
 * `idToToken`, and `applyChatTemplate` / `encodeChat` / `createStreamDecoder` functions where present.
 */
export function isTokenizer(value: unknown): value is TokenizerV1 {
  if (!isObject(value)) return false
  return (
    value.specificationVersion === 'v1' &&
    typeof value.vocabSize === 'number' &&
    isOptionalTokenId(value.bosTokenId) &&
    isOptionalTokenId(value.eosTokenId) &&
    isOptionalTokenId(value.padTokenId) &&
    isFunction(value.encode) &&
    isFunction(value.decode) &&
    isFunction(value.tokenToId) &&
    isFunction(value.idToToken) &&
    isOptionalFunction(value.applyChatTemplate) &&
    isOptionalFunction(value.encodeChat) &&
    isOptionalFunction(value.createStreamDecoder)
  )
}

/** A zod schema accepting a `PolicyV1` (see `isPolicy`), for options schemas: `policy: policySchema`. */
export const policySchema = z.custom<PolicyV1>(isPolicy, { message: "must be a PolicyV1 (specificationVersion 'v1', id, generate)" })

/** A zod schema accepting a `TokenizerV1` (see `isTokenizer`), for options schemas: `tokenizer: tokenizerSchema`. */
export const tokenizerSchema = z.custom<TokenizerV1>(isTokenizer, {
  message: "must be a TokenizerV1 (specificationVersion 'v1', vocabSize, bosTokenId, eosTokenId, padTokenId, encode, decode, tokenToId, idToToken)",
})
