import { describe, expect, it } from 'vitest'
import { findDuplicateJsonKey } from './find-duplicate-json-key.js'

describe('findDuplicateJsonKey', () => {
  it.each([
    ['{"a":1,"b":2}', undefined],
    ['{"a":{"x":1},"b":{"x":2}}', undefined],
    ['[{"a":1},{"a":2}]', undefined],
    ['{"a":["a","a"],"b":"a"}', undefined],
    ['"a"', undefined],
    ['{"a":1,"a":2}', ['a']],
    [' { "w" : { "dtype" : "F32" , "dtype" : "F16" } } ', ['w', 'dtype']],
    ['{"a":{},"b":[{},{"k":1,"k":2}]}', ['b', 1, 'k']],
    ['{"\\u0061":1,"a":2}', ['a']],
    ['{"x\\"y":1,"x\\"y":2}', ['x"y']],
    ['{"{[,":"}]","{[,":0}', ['{[,']],
  ] as const)('%s → %j', (text, expected) => {
    JSON.parse(text) // the scanner's contract: valid JSON only
    expect(findDuplicateJsonKey(text)).toEqual(expected)
  })

  it('scans deep nesting without recursion', () => {
    const depth = 200_000
    expect(findDuplicateJsonKey(`${'['.repeat(depth)}${']'.repeat(depth)}`)).toBeUndefined()
  })
})
