/**
 * The index of a sharded checkpoint, `model.safetensors.index.json`, as transformers writes it:
 *
 * ```json
 * {
 *   "metadata": {
 *     "total_parameters": 1235814400,
 *     "total_size": 2471628800
 *   },
 *   "weight_map": {
 *     "lm_head.weight": "model-00002-of-00002.safetensors",
 *     "model.embed_tokens.weight": "model-00001-of-00002.safetensors"
 *   }
 * }
 * ```
 *
 * `total_size` is the sum of the tensors' bytes (headers not counted). The text is Python's
 * `json.dumps(index, indent=2, sort_keys=True) + "\n"`, byte for byte.
 */
import { describeValue, ParseError } from '@ludic/core'
import { findDuplicateJsonKey } from './find-duplicate-json-key.js'

export interface ShardIndex {
  /** The index's `metadata` object (`total_size`, `total_parameters`…), as parsed. */
  metadata: Record<string, unknown>
  /** Tensor name → shard file name (relative to the index's directory), in the index's order. */
  weightMap: Map<string, string>
}

/** Parses an index file's text; `source` (its path) names it in errors. */
export function parseShardIndex(text: string, source: string): ShardIndex {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    throw new ParseError({
      source,
      message: `the index is not valid JSON (${error instanceof Error ? error.message : String(error)})`,
      cause: error,
    })
  }
  if (!isPlainObject(json)) throw new ParseError({ source, message: `the index must be a JSON object, got ${describeValue(json)}` })
  const duplicate = findDuplicateJsonKey(text)
  if (duplicate !== undefined) throw new ParseError({ source, path: duplicate, message: 'this key appears more than once' })

  const metadata = json.metadata ?? {}
  if (!isPlainObject(metadata)) {
    throw new ParseError({ source, path: ['metadata'], message: `must be an object, got ${describeValue(metadata)}` })
  }
  const weightMapJson = json.weight_map
  if (!isPlainObject(weightMapJson)) {
    throw new ParseError({
      source,
      path: ['weight_map'],
      message: `must be an object mapping tensor names to shard file names, got ${describeValue(weightMapJson)}`,
    })
  }
  const weightMap = new Map<string, string>()
  for (const [name, file] of Object.entries(weightMapJson)) {
    if (typeof file !== 'string' || !isPlainFileName(file)) {
      throw new ParseError({
        source,
        path: ['weight_map', name],
        message: `must be the file name of a shard in the same directory, got ${describeValue(file)}`,
      })
    }
    weightMap.set(name, file)
  }
  return { metadata, weightMap }
}

/** Formats an index as transformers does: sorted keys, 2-space indent, ASCII-only, final newline. */
export function formatShardIndex(index: { metadata: Readonly<Record<string, number | string>>; weightMap: ReadonlyMap<string, string> }): string {
  return `${formatPythonJson({ metadata: { ...index.metadata }, weight_map: Object.fromEntries(index.weightMap) }, '')}\n`
}

type JsonTree = string | number | { [key: string]: JsonTree }

/** Python's `json.dumps(value, indent=2, sort_keys=True)` for objects of strings and integers. */
function formatPythonJson(value: JsonTree, indent: string): string {
  if (typeof value === 'string') return pythonJsonString(value)
  if (typeof value === 'number') return String(value)
  const keys = Object.keys(value).sort(compareCodePoints)
  if (keys.length === 0) return '{}'
  const inner = `${indent}  `
  const lines = keys.map((key) => `${inner}${pythonJsonString(key)}: ${formatPythonJson(value[key]!, inner)}`)
  return `{\n${lines.join(',\n')}\n${indent}}`
}

/** Python's `json.dumps` string with `ensure_ascii=True`: everything outside space..~ escaped. */
function pythonJsonString(text: string): string {
  let result = '"'
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index)
    const short = shortEscapes[code]
    if (short !== undefined) result += short
    else if (code < 0x20 || code > 0x7e) result += `\\u${code.toString(16).padStart(4, '0')}`
    else result += text[index]
  }
  return `${result}"`
}

const shortEscapes: Record<number, string> = {
  34: '\\"',
  92: '\\\\',
  8: '\\b',
  12: '\\f',
  10: '\\n',
  13: '\\r',
  9: '\\t',
}

/** Orders strings by Unicode code point, as Python sorts `str`. */
export function compareCodePoints(left: string, right: string): number {
  const leftPoints = Array.from(left, (character) => character.codePointAt(0)!)
  const rightPoints = Array.from(right, (character) => character.codePointAt(0)!)
  const length = Math.min(leftPoints.length, rightPoints.length)
  for (let index = 0; index < length; index++) {
    if (leftPoints[index] !== rightPoints[index]) return leftPoints[index]! - rightPoints[index]!
  }
  return leftPoints.length - rightPoints.length
}

/** A bare file name: no directory part, not `.`/`..`, no NUL (an index must not point outside its folder). */
export function isPlainFileName(name: string): boolean {
  return name.length > 0 && name !== '.' && name !== '..' && !/[/\\\0]/.test(name)
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
