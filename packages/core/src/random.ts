import { InvalidArgumentError } from './errors.js'

/**
 * A seeded, splittable pseudo-random generator (xoshiro128**, seeded through SplitMix32).
 *
 * Every random choice in Ludic takes one: sampling, shuffles, environment deals. Same seed, same
 * sequence, on every platform. `split()` derives an independent child stream (and advances the parent),
 * so a run can hand one stream to each episode without the streams overlapping in practice.
 * `getState()` / `createRandom({ state })` save and restore a generator exactly (training checkpoints).
 */
export interface Random {
  /** A uniformly distributed 32-bit unsigned integer. */
  nextUint32(): number
  /** A uniformly distributed float in [0, 1) with 53 random bits. */
  nextFloat(): number
  /** A uniformly distributed integer in [0, maxExclusive), without modulo bias. */
  nextInt(maxExclusive: number): number
  /** A standard normal sample (Box–Muller; uses two floats, keeps no spare, so `getState` is complete). */
  nextNormal(): number
  /** Shuffles `items` in place (Fisher–Yates) and returns it. */
  shuffle<T>(items: T[]): T[]
  /** A uniformly chosen element of a non-empty array. */
  choice<T>(items: readonly T[]): T
  /** An index drawn with probability proportional to `weights` (non-negative, finite, not all zero). */
  sampleIndex(weights: ArrayLike<number>): number
  /** An independent child generator; advances this one. */
  split(): Random
  /** A copy in the same state. */
  clone(): Random
  /** The full state (4 words), for checkpoints. */
  getState(): Uint32Array
}

export type RandomSeed = number | { state: ArrayLike<number> }

function splitMix32(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x9e3779b9) >>> 0
    let z = state
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0
    return (z ^ (z >>> 16)) >>> 0
  }
}

function rotateLeft(value: number, shift: number): number {
  return ((value << shift) | (value >>> (32 - shift))) >>> 0
}

/** Mixes numbers and strings into one 32-bit seed (FNV-1a over their text, then avalanche). */
export function deriveSeed(...parts: readonly (string | number)[]): number {
  let hash = 0x811c9dc5
  for (const part of parts) {
    const text = typeof part === 'number' ? `n${part}` : `s${part}`
    for (let index = 0; index < text.length; index++) {
      hash ^= text.charCodeAt(index)
      hash = Math.imul(hash, 0x01000193) >>> 0
    }
    hash ^= 0xff
    hash = Math.imul(hash, 0x01000193) >>> 0
  }
  return splitMix32(hash)()
}

class Xoshiro128 implements Random {
  private readonly state: Uint32Array

  constructor(state: Uint32Array) {
    this.state = state
  }

  nextUint32(): number {
    const s = this.state
    const result = Math.imul(rotateLeft(Math.imul(s[1]!, 5) >>> 0, 7), 9) >>> 0
    const t = (s[1]! << 9) >>> 0
    s[2]! ^= s[0]!
    s[3]! ^= s[1]!
    s[1]! ^= s[2]!
    s[0]! ^= s[3]!
    s[2]! ^= t
    s[3] = rotateLeft(s[3]!, 11)
    return result
  }

  nextFloat(): number {
    const high = this.nextUint32() >>> 5 // 27 bits
    const low = this.nextUint32() >>> 6 // 26 bits
    return (high * 67108864 + low) / 9007199254740992
  }

  nextInt(maxExclusive: number): number {
    if (!Number.isInteger(maxExclusive) || maxExclusive < 1 || maxExclusive > 2 ** 32) {
      throw new InvalidArgumentError({
        argument: 'maxExclusive',
        value: maxExclusive,
        message: 'must be an integer in [1, 2^32]',
      })
    }
    // Rejection sampling: draw below the largest multiple of maxExclusive.
    const limit = 2 ** 32 - (2 ** 32 % maxExclusive)
    for (;;) {
      const value = this.nextUint32()
      if (value < limit) return value % maxExclusive
    }
  }

  nextNormal(): number {
    let u = 0
    while (u === 0) u = this.nextFloat()
    const v = this.nextFloat()
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v)
  }

  shuffle<T>(items: T[]): T[] {
    for (let index = items.length - 1; index > 0; index--) {
      const other = this.nextInt(index + 1)
      const item = items[index] as T
      items[index] = items[other] as T
      items[other] = item
    }
    return items
  }

  choice<T>(items: readonly T[]): T {
    if (items.length === 0) throw new InvalidArgumentError({ argument: 'items', value: items, message: 'must not be empty' })
    return items[this.nextInt(items.length)] as T
  }

  sampleIndex(weights: ArrayLike<number>): number {
    let total = 0
    for (let index = 0; index < weights.length; index++) {
      const weight = weights[index]!
      if (!(weight >= 0) || !Number.isFinite(weight)) {
        throw new InvalidArgumentError({
          argument: `weights[${index}]`,
          value: weight,
          message: 'weights must be finite and non-negative',
        })
      }
      total += weight
    }
    if (!(total > 0)) throw new InvalidArgumentError({ argument: 'weights', value: weights, message: 'weights must not all be zero' })
    let target = this.nextFloat() * total
    let last = -1
    for (let index = 0; index < weights.length; index++) {
      const weight = weights[index]!
      if (weight === 0) continue
      last = index
      target -= weight
      if (target < 0) return index
    }
    return last // rounding left a sliver at the end
  }

  split(): Random {
    const seed = splitMix32(this.nextUint32() ^ rotateLeft(this.nextUint32(), 16))
    return new Xoshiro128(Uint32Array.of(seed(), seed(), seed(), seed()))
  }

  clone(): Random {
    return new Xoshiro128(this.state.slice())
  }

  getState(): Uint32Array {
    return this.state.slice()
  }
}

/**
 * Creates a generator from a seed (any safe integer; the whole value counts) or from a saved state.
 */
export function createRandom(seed: RandomSeed): Random {
  if (typeof seed === 'number') {
    if (!Number.isSafeInteger(seed)) {
      throw new InvalidArgumentError({ argument: 'seed', value: seed, message: 'must be a safe integer' })
    }
    const low = seed >>> 0
    const high = Math.floor(seed / 2 ** 32) >>> 0
    const mix = splitMix32(low ^ Math.imul(high, 0x9e3779b1))
    const state = Uint32Array.of(mix(), mix(), mix(), mix())
    if (state.every((word) => word === 0)) state[0] = 1
    return new Xoshiro128(state)
  }
  const state = Uint32Array.from(seed.state)
  if (state.length !== 4 || Array.from(seed.state).some((word) => !Number.isInteger(word) || word < 0 || word > 0xffffffff)) {
    throw new InvalidArgumentError({ argument: 'seed.state', value: seed.state, message: 'must be 4 unsigned 32-bit integers' })
  }
  if (state.every((word) => word === 0)) {
    throw new InvalidArgumentError({ argument: 'seed.state', value: seed.state, message: 'must not be all zero' })
  }
  return new Xoshiro128(state)
}
