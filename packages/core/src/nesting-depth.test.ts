import { describe, expect, it } from 'vitest'
import { pathBeyondDepth } from './nesting-depth.js'

describe('pathBeyondDepth', () => {
  it('finds the first container past the limit, with its path', () => {
    expect(pathBeyondDepth({ a: [{ b: 1 }] }, 3)).toBeUndefined()
    expect(pathBeyondDepth({ a: [{ b: [] }] }, 3)).toEqual(['a', 0, 'b'])
    expect(pathBeyondDepth([1, 'x', null], 1)).toBeUndefined()
    expect(pathBeyondDepth(5, 0)).toBeUndefined()
  })

  it('measures 200,000 nested arrays without a stack overflow, and ends on a cyclic value', () => {
    const deep = JSON.parse(`${'['.repeat(200_000)}${']'.repeat(200_000)}`) as unknown
    expect(pathBeyondDepth(deep, 64)).toEqual(Array.from({ length: 64 }, () => 0))
    const cyclic: Record<string, unknown> = {}
    cyclic.self = cyclic
    expect(pathBeyondDepth(cyclic, 10)).toHaveLength(10)
  })
})
