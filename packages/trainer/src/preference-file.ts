import { readFile, stat } from 'node:fs/promises'
import { jsonLinesLimitsSchema, ParseError, parseArgument, parseJsonLines, preferencePairSchema, type JsonLinesLimits, type PreferencePair } from '@ludic/core'

/**
 * Reads preference pairs from a JSON Lines file (TRL's formats, `preferencePairSchema`). The file's size is
 * checked against `limits.maxCharacters` before it is read; a bad line throws a `ParseError` naming it.
 */
export async function readPreferencePairs(path: string, limits: JsonLinesLimits = {}): Promise<PreferencePair[]> {
  const { maxCharacters } = parseArgument(jsonLinesLimitsSchema, limits, 'limits')
  const { size } = await stat(path)
  // A UTF-8 text has at least one UTF-16 code unit per 3 bytes: a larger file is over the limit before it is read.
  if (size > 3 * maxCharacters) throw new ParseError({ source: path, message: `is ${size} bytes, more than the limit of ${maxCharacters} characters allows` })
  return parseJsonLines(await readFile(path, 'utf8'), preferencePairSchema, path, limits)
}
