import { checkErrorClasses } from '@ludic/core/test'
import { describe, it } from 'vitest'
import * as tokenizer from './index.js'
import { MissingChatTemplateError } from './chat-template/missing-chat-template-error.js'
import { MergeOutOfVocabularyError } from './models/bpe.js'
import { PrecompiledCharsmapError } from './normalizers/precompiled.js'
import { UnsupportedPatternError } from './regex/oniguruma-to-javascript.js'
import { defaultTokenizerLimits, TokenizerLimitError } from './tokenizer-limits.js'

describe('error classes', () => {
  it("each exported error class's isInstance accepts its own instances and its subclasses' only (core's included)", () => {
    checkErrorClasses([tokenizer], {
      MissingChatTemplateError: () => new MissingChatTemplateError('example'),
      MergeOutOfVocabularyError: () => new MergeOutOfVocabularyError({ index: 0, token: 'ab' }),
      PrecompiledCharsmapError: () => new PrecompiledCharsmapError({ message: 'example', location: { source: 'tokenizer.json', path: ['normalizer'] } }),
      UnsupportedPatternError: () => new UnsupportedPatternError('example'),
      TokenizerLimitError: () => new TokenizerLimitError({ limit: 'maxSequenceGrowth', value: 100, limits: defaultTokenizerLimits, what: 'the growth' }),
    })
  })
})
