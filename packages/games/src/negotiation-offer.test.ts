import { describe, expect, it } from 'vitest'
import { formatNegotiationBundle, parseNegotiationMove } from './negotiation-offer.js'

describe('parseNegotiationMove', () => {
  it.each([
    ['Offer: 3 Wood -> 2 Gold', { Wood: 3 }, { Gold: 2 }],
    ['offer: 3 wood -> 2 gold', { Wood: 3 }, { Gold: 2 }],
    ['Offer 3 Woods->2 Golds', { Wood: 3 }, { Gold: 2 }],
    ['Offer: I give 1 Wood → 1 Gold.', { Wood: 1 }, { Gold: 1 }],
    ['Offer: I offer 4 Gold => 9 Wood!', { Gold: 4 }, { Wood: 9 }],
    ['Offer: 2 Wood, 3 Wood -> 1 Gold', { Wood: 5 }, { Gold: 1 }],
    ['Offer: 2 Wood and 1 Wood -> 1 Gold', { Wood: 3 }, { Gold: 1 }],
    ['Offer: 2 Wood, and 1 Wood -> 1 Gold & 2 Gold', { Wood: 3 }, { Gold: 3 }],
    ['Offer: 1 Gold + 1 Gold -> 2 Wood', { Gold: 2 }, { Wood: 2 }],
    ['Offer:\n  5 Wood\n  ->\n  3 Gold', { Wood: 5 }, { Gold: 3 }],
  ])('reads %j', (text, offered, requested) => {
    expect(parseNegotiationMove(text)).toEqual({ kind: 'offer', offered, requested })
  })

  it.each([
    ['Accept', 'accept'],
    ['ACCEPT', 'accept'],
    ['deny', 'deny'],
    ['Deny.', 'deny'],
    ['Hello', 'unknown'],
    ['Accept the offer', 'unknown'],
    ['', 'unknown'],
  ])('reads %j as %s', (text, kind) => {
    expect(parseNegotiationMove(text).kind).toBe(kind)
  })

  it.each([
    ['Offer: 3 Wood', /exactly one "->"/],
    ['Offer: 3 Wood -> 2 Gold -> 1 Wood', /exactly one "->"/],
    ['Offer: -> 2 Gold', /nothing on the offered side/],
    ['Offer: 3 Wood ->', /nothing on the requested side/],
    ['Offer: 0 Wood -> 2 Gold', /positive whole number/],
    ['Offer: 1.5 Wood -> 2 Gold', /cannot read/],
    ['Offer: -3 Wood -> 2 Gold', /cannot read/],
    ['Offer: 3 Stone -> 2 Gold', /unknown resource "Stone"/],
    ['Offer: three Wood -> 2 Gold', /cannot read/],
    ['Offer: 3 Wood -> 2 Wood', /Wood is on both sides/],
    ['Offer: 99999999999999999999 Wood -> 1 Gold', /positive whole number/],
  ])('rejects the malformed offer %j', (text, reason) => {
    const move = parseNegotiationMove(text)
    expect(move.kind).toBe('malformed-offer')
    expect(move.kind === 'malformed-offer' && move.reason).toMatch(reason)
  })

  it('formats bundles in resource order', () => {
    expect(formatNegotiationBundle({ Gold: 2, Wood: 1 })).toBe('1 Wood, 2 Gold')
  })
})
