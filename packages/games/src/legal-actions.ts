import type { TurnContext } from '@ludic/core'
import { negotiationResources } from './negotiation-offer.js'
import { requireTurn } from './opponent-policy.js'
import { negotiationTurnState, type NegotiationObservation } from './simple-negotiation.js'

/**
 * Simple Negotiation has no finite list of moves; scripted opponents pick from this menu: `[Accept]` (when
 * an offer is open to the player and it holds what is asked), `[Deny]`, and every offer of 1–3 units of
 * one resource it holds for 1–3 units of the other.
 */
export function negotiationMenu(situation: Pick<NegotiationObservation, 'inventory' | 'offer'>): string[] {
  const { inventory, offer } = situation
  const menu: string[] = []
  if (offer !== undefined && negotiationResources.every((resource) => (offer.requested[resource] ?? 0) <= inventory[resource])) menu.push('[Accept]')
  menu.push('[Deny]')
  for (const give of negotiationResources) {
    for (const get of negotiationResources) {
      if (give === get) continue
      for (let given = 1; given <= Math.min(3, inventory[give]); given++) {
        for (let taken = 1; taken <= 3; taken++) menu.push(`[Offer: ${given} ${give} -> ${taken} ${get}]`)
      }
    }
  }
  return menu
}

/**
 * The moves a scripted player chooses among, from a turn's structured view (`GenerationRequest.turn`): the
 * environment's `legalActions`; for Simple Negotiation, whose offers are free text, the finite `negotiationMenu`
 * of the turn's `state`. Never read from the observation's wording. A turn without them is an
 * `InvalidArgumentError` naming `request.turn` or the missing field (`who` says which player asks).
 */
export function turnLegalActions(turn: TurnContext | undefined, who = 'the scripted player'): readonly string[] {
  if (turn?.environmentId === 'simple-negotiation-v1' && turn.legalActions === undefined) {
    return negotiationMenu(negotiationTurnState(requireTurn(turn, 'state', who).state))
  }
  return requireTurn(turn, 'legalActions', who).legalActions
}
