import { ParseError } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { compareCodePoints, formatShardIndex, parseShardIndex } from './shard-index.js'

describe('formatShardIndex', () => {
  it('writes what Python’s json.dumps(index, indent=2, sort_keys=True) + "\\n" writes', () => {
    const text = formatShardIndex({
      metadata: { total_size: 10, total_parameters: 3 },
      weightMap: new Map([
        ['z', 'model-00002-of-00002.safetensors'],
        ['\u00e9\u{1F600}\n\u007f"\\', 'model-00001-of-00002.safetensors'],
        ['\uff21', 'model-00001-of-00002.safetensors'],
        ['A', 'model-00002-of-00002.safetensors'],
      ]),
    })
    // Captured from Python 3.11: code-point key order, ASCII-only escapes (\u007f, surrogate pairs).
    expect(text).toBe(
      '{\n  "metadata": {\n    "total_parameters": 3,\n    "total_size": 10\n  },\n  "weight_map": {\n    "A": "model-00002-of-00002.safetensors",\n    "z": "model-00002-of-00002.safetensors",\n    "\\u00e9\\ud83d\\ude00\\n\\u007f\\"\\\\": "model-00001-of-00002.safetensors",\n    "\\uff21": "model-00001-of-00002.safetensors"\n  }\n}\n',
    )
    expect(parseShardIndex(text, 'index').weightMap.get('\u00e9\u{1F600}\n\u007f"\\')).toBe('model-00001-of-00002.safetensors')
  })

  it('sorts by code point, not UTF-16 unit', () => {
    expect(['\u{1F600}', '\uff21', 'b', 'B'].sort(compareCodePoints)).toEqual(['B', 'b', '\uff21', '\u{1F600}'])
  })
})

describe('parseShardIndex', () => {
  it('reads metadata and the weight map in order', () => {
    const index = parseShardIndex('{"metadata":{"total_size":8},"weight_map":{"b":"s2.safetensors","a":"s1.safetensors"}}', 'index.json')
    expect(index.metadata).toEqual({ total_size: 8 })
    expect([...index.weightMap]).toEqual([
      ['b', 's2.safetensors'],
      ['a', 's1.safetensors'],
    ])
    expect(parseShardIndex('{"weight_map":{}}', 'index.json').metadata).toEqual({})
  })

  it.each<[string, string, (string | number)[], RegExp]>([
    ['broken JSON', '{"weight_map":', [], /not valid JSON/],
    ['not an object', '[1]', [], /must be a JSON object/],
    ['no weight_map', '{"metadata":{}}', ['weight_map'], /must be an object mapping tensor names/],
    ['metadata not an object', '{"metadata":3,"weight_map":{}}', ['metadata'], /must be an object/],
    ['file not a string', '{"weight_map":{"w":1}}', ['weight_map', 'w'], /file name of a shard/],
    ['file outside the directory', '{"weight_map":{"w":"../secret.safetensors"}}', ['weight_map', 'w'], /file name of a shard/],
    ['absolute file', '{"weight_map":{"w":"/etc/passwd"}}', ['weight_map', 'w'], /file name of a shard/],
    ['duplicate tensor', '{"weight_map":{"w":"a.safetensors","w":"b.safetensors"}}', ['weight_map', 'w'], /more than once/],
  ])('%s is a ParseError', (_, text, path, message) => {
    let caught: unknown
    try {
      parseShardIndex(text, 'checkpoint/model.safetensors.index.json')
    } catch (error) {
      caught = error
    }
    expect(ParseError.isInstance(caught)).toBe(true)
    expect((caught as ParseError).path).toEqual(path)
    expect((caught as ParseError).message).toMatch(message)
    expect((caught as ParseError).source).toBe('checkpoint/model.safetensors.index.json')
  })
})
