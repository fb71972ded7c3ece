import type { PolicyV1 } from '@ludic/core'
import { negotiationResources, type NegotiationBundle } from './negotiation-offer.js'
import { createOpponentPolicy, requireTurn } from './opponent-policy.js'
import { negotiationTurnState, type NegotiationInventory } from './simple-negotiation.js'

const bundleValue = (bundle: NegotiationBundle, values: NegotiationInventory) =>
  negotiationResources.reduce((sum, resource) => sum + (bundle[resource] ?? 0) * values[resource], 0)

/**
 * The value-raising trades a player can propose: give 1–`maxQuantity` units of one resource it holds
 * for 1–`maxQuantity` units of the other, when what it gets is worth more to it than what it gives.
 */
export function valueRaisingOffers(inventory: NegotiationInventory, values: NegotiationInventory, maxQuantity = 3): string[] {
  const offers: string[] = []
  for (const give of negotiationResources) {
    for (const get of negotiationResources) {
      if (give === get) continue
      for (let given = 1; given <= Math.min(maxQuantity, inventory[give]); given++) {
        for (let taken = 1; taken <= maxQuantity; taken++) {
          if (taken * values[get] > given * values[give]) offers.push(`[Offer: ${given} ${give} -> ${taken} ${get}]`)
        }
      }
    }
  }
  return offers
}

/**
 * A Simple Negotiation opponent, deciding from the turn's structured `state` (`negotiationTurnState`): it accepts an offer made to it when the trade raises its own inventory
 * value (and it holds what is asked); otherwise it proposes a value-raising trade (`valueRaisingOffers`,
 * chosen at random with its seed), which also denies any open offer; with nothing to offer it plays `[Deny]`.
 */
export function createNegotiationHeuristicPolicy(options: { seed?: number; maxQuantity?: number; id?: string } = {}): PolicyV1 {
  const id = options.id ?? 'negotiation-heuristic'
  return createOpponentPolicy({
    id,
    seed: options.seed ?? 0,
    decide(_observation, random, turn) {
      const { values, inventory, offer } = negotiationTurnState(requireTurn(turn, 'state', `the negotiation trader '${id}'`).state)
      if (offer !== undefined) {
        const canPay = negotiationResources.every((resource) => (offer.requested[resource] ?? 0) <= inventory[resource])
        if (canPay && bundleValue(offer.offered, values) > bundleValue(offer.requested, values)) return '[Accept]'
      }
      const offers = valueRaisingOffers(inventory, values, options.maxQuantity ?? 3)
      return offers.length > 0 ? random.choice(offers) : '[Deny]'
    },
  })
}
