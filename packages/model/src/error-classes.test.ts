import { checkErrorClasses } from '@ludic/core/test'
import * as tensors from '@ludic/tensors'
import * as tensorsTest from '@ludic/tensors/test'
import { TensorLeakError } from '@ludic/tensors/test'
import * as tokenizer from '@ludic/tokenizer'
import {
  defaultTokenizerLimits,
  MergeOutOfVocabularyError,
  MissingChatTemplateError,
  PrecompiledCharsmapError,
  TokenizerLimitError,
  UnsupportedPatternError,
} from '@ludic/tokenizer'
import { describe, it } from 'vitest'
import { CheckpointMismatchError } from './checkpoint/checkpoint-mismatch-error.js'
import { ConfinedPathError } from './lora/confined-files.js'
import { ContextLengthError } from './model/context-length.js'
import * as model from './index.js'
import { NonFiniteGradientError } from './training/non-finite-gradient-error.js'

describe('error classes', () => {
  it("each exported error class's isInstance accepts its own instances and its subclasses' only (those of core, tensors and tokenizer included)", () => {
    checkErrorClasses([model, tensors, tensorsTest, tokenizer], {
      ContextLengthError: () => new ContextLengthError({ argument: 'inputIds', value: 3000, limit: 2048, requested: 3000, message: 'example' }),
      CheckpointMismatchError: () => new CheckpointMismatchError({ source: 'checkpoint', missing: ['lm_head.weight'], unexpected: [], misshaped: [] }),
      ConfinedPathError: () => new ConfinedPathError({ argument: 'directory', value: '/elsewhere', message: 'example', notFound: true }),
      NonFiniteGradientError: () => new NonFiniteGradientError({ parameters: ['w'], norm: Number.NaN }),
      TensorLeakError: () => new TensorLeakError(1, 2, 'example'),
      EngineInternalsError: () => new tensors.EngineInternalsError({ foundVersion: '4.23.0', expectedVersion: '4.22.0', detail: 'example' }),
      MergeOutOfVocabularyError: () => new MergeOutOfVocabularyError({ index: 0, token: 'ab' }),
      PrecompiledCharsmapError: () => new PrecompiledCharsmapError({ message: 'example', location: { source: 'tokenizer.json', path: [] } }),
      UnsupportedPatternError: () => new UnsupportedPatternError('example'),
      MissingChatTemplateError: () => new MissingChatTemplateError('example'),
      TokenizerLimitError: () => new TokenizerLimitError({ limit: 'maxSequenceGrowth', value: 100, limits: defaultTokenizerLimits, what: 'the growth' }),
    })
  })
})
