import { describeValue } from '@ludic/core'
import { abbreviate } from './action.js'

/** The resources of Simple Negotiation, in display order. */
export const negotiationResources = ['Wood', 'Gold'] as const
export type NegotiationResource = (typeof negotiationResources)[number]
export type NegotiationBundle = Readonly<Partial<Record<NegotiationResource, number>>>

/** A parsed move of Simple Negotiation. */
export type NegotiationMove =
  | { readonly kind: 'offer'; readonly offered: NegotiationBundle; readonly requested: NegotiationBundle }
  | { readonly kind: 'accept' }
  | { readonly kind: 'deny' }
  | { readonly kind: 'malformed-offer'; readonly reason: string }
  | { readonly kind: 'unknown' }

const arrow = /\s*(?:->|→|=>)\s*/
const separator = /\s*,\s*(?:and\s+)?|\s+and\s+|\s*[&+]\s*/i
const item = /^(\d+)\s*([a-z]+)$/i

function parseBundle(text: string, side: string): NegotiationBundle | string {
  const items = text.split(separator).filter((part) => part !== '')
  if (items.length === 0) return `nothing ${side}`
  const bundle: Partial<Record<NegotiationResource, number>> = {}
  for (const entry of items) {
    const match = item.exec(entry)
    if (match === null) return `cannot read ${describeValue(entry, 40)} ${side} (expected a quantity and a resource, e.g. "3 Wood")`
    const quantity = Number(match[1])
    const name = match[2]!.toLowerCase().replace(/s$/, '')
    const resource = negotiationResources.find((candidate) => candidate.toLowerCase() === name)
    if (resource === undefined) return `unknown resource ${describeValue(match[2], 40)} ${side} (resources: ${negotiationResources.join(', ')})`
    if (!Number.isSafeInteger(quantity) || quantity <= 0) return `quantity ${abbreviate(match[1]!, 20)} ${side} must be a positive whole number`
    bundle[resource] = (bundle[resource] ?? 0) + quantity
    if (!Number.isSafeInteger(bundle[resource])) return `quantity of ${resource} ${side} is too large`
  }
  return bundle
}

/** Drops trailing `.,!?;` and spaces (a loop: a regular expression would backtrack quadratically). */
function trimTrailingPunctuation(text: string): string {
  let end = text.length
  while (end > 0 && '.,!?; '.includes(text[end - 1]!)) end--
  return text.slice(0, end)
}

/**
 * Reads a move (the text inside its brackets): `Accept`, `Deny`, or a free-form offer such as
 * `Offer: 3 Wood -> 2 Gold`, `Offer: 2 Wood, 1 Gold -> 4 Gold`… (lists with commas, "and", "&" or "+";
 * names in any case, plural `Woods`/`Golds`; an optional `I give`/`I offer`; `→` or `=>` for the arrow;
 * trailing punctuation ignored). An offer needs at least one positive whole quantity on each side, known
 * resources only, and no resource on both sides; otherwise it is malformed.
 */
export function parseNegotiationMove(move: string): NegotiationMove {
  const text = move.trim().replace(/\s+/g, ' ')
  if (/^accept[.!]?$/i.test(text)) return { kind: 'accept' }
  if (/^deny[.!]?$/i.test(text)) return { kind: 'deny' }
  const offer = /^offer\b\s*:?\s*([\s\S]*)$/i.exec(text)
  if (offer === null) return { kind: 'unknown' }
  const body = trimTrailingPunctuation(offer[1]!.replace(/^I (?:give|offer)\s+/i, ''))
  const sides = body.split(arrow)
  if (sides.length !== 2) return { kind: 'malformed-offer', reason: 'an offer needs exactly one "->" between what you give and what you ask for' }
  const offered = parseBundle(sides[0]!, 'on the offered side')
  if (typeof offered === 'string') return { kind: 'malformed-offer', reason: offered }
  const requested = parseBundle(sides[1]!, 'on the requested side')
  if (typeof requested === 'string') return { kind: 'malformed-offer', reason: requested }
  const both = negotiationResources.find((resource) => offered[resource] !== undefined && requested[resource] !== undefined)
  if (both !== undefined) return { kind: 'malformed-offer', reason: `${both} is on both sides of the offer` }
  return { kind: 'offer', offered, requested }
}

/** `3 Wood, 2 Gold`: the bundle's resources in display order. */
export function formatNegotiationBundle(bundle: NegotiationBundle): string {
  return negotiationResources
    .filter((resource) => bundle[resource] !== undefined)
    .map((resource) => `${bundle[resource]} ${resource}`)
    .join(', ')
}
