import { ParseError } from '@ludic/core'
import type { JsonLocation } from '../json-location.js'
import { toByteLevel } from '../byte-level/byte-level-alphabet.js'
import type { PreTokenizer } from './pre-tokenizer.js'

/**
 * `Sequence`: each pre-tokenizer in turn, on every piece of the one before (its steps, nested Sequences
 * flattened, call each other: `limits.maxSequenceLength` bounds them). At most one step is `ByteLevel`'s
 * byte mapping, which would otherwise encode the bytes of bytes, doubling the text each time.
 */
export function createSequencePreTokenizer(preTokenizers: readonly PreTokenizer[], location: JsonLocation): PreTokenizer {
  const steps = preTokenizers.flatMap((preTokenizer) => preTokenizer.steps)
  if (steps.filter((step) => step.kind === 'map' && step.map === toByteLevel).length > 1) {
    throw new ParseError({
      source: location.source,
      path: location.path,
      message: 'more than one ByteLevel pre-tokenizer: each would map the bytes of the one before, doubling the text',
    })
  }
  return { steps }
}
