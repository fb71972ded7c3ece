import { describe, expect, it } from 'vitest'
import { pythonStrip } from './python-string-methods.js'

describe('pythonStrip', () => {
  it.each([
    ['\n\n  text  \n', 'left', '\n', '  text  \n'],
    ['\n\n  text  \n', 'right', '\n', '\n\n  text  '],
    ['\n\n  text  \n', 'both', '\n', '  text  '],
    ['xxhixyx', 'both', 'xy', 'hi'],
    [' \t\u0085 text \u001f\u3000', 'both', undefined, 'text'],
    ['\ufeff text \ufeff', 'both', undefined, '\ufeff text \ufeff'],
    ['\ufeff text \ufeff', 'both', null, '\ufeff text \ufeff'],
    ['😀a😀', 'both', '😀', 'a'],
    ['', 'both', undefined, ''],
  ] as const)('%j.%s(%j) is %j, as in Python', (text, side, characters, expected) => {
    expect(pythonStrip(text, side, characters)).toBe(expected)
  })

  it('refuses a value that is not a string', () => {
    expect(() => pythonStrip(3, 'both')).toThrow(TypeError)
  })
})
