import { describe, expect, it } from 'vitest'
import { InvalidArgumentError } from './errors.js'
import { createRandom, deriveSeed } from './random.js'

describe('createRandom', () => {
  it('same seed, same sequence; different seeds differ', () => {
    const a = createRandom(42)
    const b = createRandom(42)
    const c = createRandom(43)
    const first = Array.from({ length: 100 }, () => a.nextUint32())
    expect(Array.from({ length: 100 }, () => b.nextUint32())).toEqual(first)
    expect(Array.from({ length: 100 }, () => c.nextUint32())).not.toEqual(first)
    // Large seeds use their high bits too.
    expect(createRandom(2 ** 40).nextUint32()).not.toBe(createRandom(2 ** 41).nextUint32())
  })

  it('is pinned: the sequence for a seed never changes between releases', () => {
    const random = createRandom(1)
    expect(Array.from({ length: 4 }, () => random.nextUint32())).toMatchInlineSnapshot(`
      [
        2442144158,
        3238099751,
        3819917871,
        2104621829,
      ]
    `)
  })

  it('nextFloat is in [0, 1) with a uniform mean and variance', () => {
    const random = createRandom(7)
    let sum = 0
    let sumSquares = 0
    const count = 200_000
    let outside = 0
    for (let index = 0; index < count; index++) {
      const value = random.nextFloat()
      if (!(value >= 0 && value < 1)) outside++
      sum += value
      sumSquares += value * value
    }
    const mean = sum / count
    expect(outside).toBe(0)
    expect(mean).toBeCloseTo(0.5, 2)
    expect(sumSquares / count - mean * mean).toBeCloseTo(1 / 12, 2)
  })

  it('nextInt is unbiased (chi-squared over 6 buckets)', () => {
    const random = createRandom(3)
    const counts = new Array<number>(6).fill(0)
    const draws = 60_000
    for (let index = 0; index < draws; index++) counts[random.nextInt(6)]!++
    const expected = draws / 6
    const chiSquared = counts.reduce((total, observed) => total + (observed - expected) ** 2 / expected, 0)
    expect(chiSquared).toBeLessThan(20.5) // p = 0.001 at 5 degrees of freedom
  })

  it('nextNormal has mean 0 and variance 1', () => {
    const random = createRandom(11)
    const values = Array.from({ length: 100_000 }, () => random.nextNormal())
    const mean = values.reduce((a, b) => a + b, 0) / values.length
    const variance = values.reduce((a, b) => a + (b - mean) ** 2, 0) / values.length
    expect(Math.abs(mean)).toBeLessThan(0.02)
    expect(Math.abs(variance - 1)).toBeLessThan(0.02)
  })

  it('shuffle permutes, choice and sampleIndex follow their distributions', () => {
    const random = createRandom(5)
    const items = Array.from({ length: 20 }, (_, index) => index)
    const shuffled = random.shuffle([...items])
    expect([...shuffled].sort((a, b) => a - b)).toEqual(items)
    expect(shuffled).not.toEqual(items)
    const counts = [0, 0, 0]
    for (let index = 0; index < 30_000; index++) counts[random.sampleIndex([1, 0, 3])]!++
    expect(counts[1]).toBe(0)
    expect(counts[0]! / 30_000).toBeCloseTo(0.25, 1)
    expect(random.choice(['only'])).toBe('only')
  })

  it('split gives independent, reproducible streams', () => {
    const parent = createRandom(9)
    const child = parent.split()
    const again = createRandom(9).split()
    const childValues = Array.from({ length: 10 }, () => child.nextUint32())
    expect(Array.from({ length: 10 }, () => again.nextUint32())).toEqual(childValues)
    expect(Array.from({ length: 10 }, () => parent.nextUint32())).not.toEqual(childValues)
  })

  it('getState restores exactly, also mid-way through normals', () => {
    const random = createRandom(12)
    random.nextNormal()
    const restored = createRandom({ state: random.getState() })
    const clone = random.clone()
    const expected = [random.nextNormal(), random.nextFloat(), random.nextInt(1000)]
    expect([restored.nextNormal(), restored.nextFloat(), restored.nextInt(1000)]).toEqual(expected)
    expect([clone.nextNormal(), clone.nextFloat(), clone.nextInt(1000)]).toEqual(expected)
  })

  it('rejects bad seeds and arguments with InvalidArgumentError', () => {
    expect(() => createRandom(1.5)).toThrow(InvalidArgumentError)
    expect(() => createRandom(Number.NaN)).toThrow(/seed/)
    expect(() => createRandom({ state: [0, 0, 0, 0] })).toThrow(/all zero/)
    expect(() => createRandom({ state: [1, 2, 3] })).toThrow(/seed.state/)
    const random = createRandom(1)
    expect(() => random.nextInt(0)).toThrow(/'maxExclusive' \(value: 0\)/)
    expect(() => random.sampleIndex([1, Number.NaN])).toThrow(/weights\[1\]/)
    expect(() => random.sampleIndex([0, 0])).toThrow(/all be zero/)
    expect(() => random.choice([])).toThrow(/items/)
  })

  it('deriveSeed mixes its parts deterministically', () => {
    expect(deriveSeed('episode', 3)).toBe(deriveSeed('episode', 3))
    expect(deriveSeed('episode', 3)).not.toBe(deriveSeed('episode', 4))
    expect(deriveSeed('3')).not.toBe(deriveSeed(3))
    expect(deriveSeed('a', 'b')).not.toBe(deriveSeed('ab'))
  })
})
