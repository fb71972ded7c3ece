import { LudicError } from '@ludic/core'
import { liarsDiceLegalActions, parseLiarsDiceObservation } from './liars-dice.js'
import { negotiationResources } from './negotiation-offer.js'
import { parseNegotiationObservation } from './simple-negotiation.js'

const availableLine = /^.*available (?:actions|moves)[^:\n]*:(.*)$/gim

/**
 * Simple Negotiation has no finite list of moves; scripted opponents pick from this menu: `[Accept]` (when
 * an offer is open to the player and it holds what is asked), `[Deny]`, and every offer of 1–3 units of
 * one resource it holds for 1–3 units of the other.
 */
function negotiationMenu(observation: string): string[] {
  const { inventory, offer } = parseNegotiationObservation(observation)
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
 * The legal actions of the player to act, read from an observation of any game of this package. For most
 * games they are the bracketed moves of the last "available actions" / "Available Moves" line; Liar's Dice
 * bids are rebuilt from the current bid and the dice in play; Simple Negotiation, whose offers are free
 * text, gives a finite menu (accept, deny, and offers of 1–3 units). Throws when the text shows none.
 */
export function legalActionsFromObservation(observation: string): string[] {
  if (/You are Player [01] in a 2-player Liar's Dice game/.test(observation)) {
    const { bid, diceInPlay } = parseLiarsDiceObservation(observation)
    return liarsDiceLegalActions(bid, diceInPlay)
  }
  if (/You are Player [01] in the Negotiation Game/.test(observation)) return negotiationMenu(observation)
  let last: string | undefined
  for (const match of observation.matchAll(availableLine)) last = match[1]
  const actions = [...(last ?? '').matchAll(/\[[^[\]]*\]/g)].map((match) => match[0])
  if (actions.length === 0) throw new LudicError('No legal actions found in the observation (expected an "available actions: [...]" line)')
  return actions
}
