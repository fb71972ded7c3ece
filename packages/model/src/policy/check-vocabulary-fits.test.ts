import { InvalidArgumentError } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { checkVocabularyFits } from './check-vocabulary-fits.js'

describe('checkVocabularyFits', () => {
  it("accepts a model vocabulary as large as the tokenizer's or larger (padding rows)", () => {
    expect(() => checkVocabularyFits({ vocabSize: 259 }, { vocabSize: 259 })).not.toThrow()
    expect(() => checkVocabularyFits({ vocabSize: 151669 }, { vocabSize: 151936 })).not.toThrow()
  })

  it('refuses a tokenizer with ids past the model vocabulary, naming both sizes', () => {
    const fits = () => checkVocabularyFits({ vocabSize: 259 }, { vocabSize: 64 })
    expect(fits).toThrow(InvalidArgumentError)
    expect(fits).toThrow(/tokenizer has 259 ids, model has 64/)
  })
})
