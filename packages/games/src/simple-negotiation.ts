import { describeValue, LudicError, parseArgument, type EnvironmentV1 } from '@ludic/core'
import { z } from 'zod'
import { formatNegotiationBundle, negotiationResources, parseNegotiationMove, type NegotiationBundle, type NegotiationResource } from './negotiation-offer.js'
import { createTranscript, type Transcript } from './transcript.js'
import {
  commonOptionsShape,
  createTwoPlayerEnvironment,
  maxTurnsOption,
  winLossRewards,
  type PlayerIndex,
  type TwoPlayerRules,
} from './two-player-environment.js'

export const simpleNegotiationOptionsSchema = z.strictObject({
  ...commonOptionsShape,
  /** Actions in the game, alternating, player0 first; then the larger gain in inventory value wins. Default: 10. */
  turns: z.number().int().positive().default(10),
  /** Truncate after this many actions (only matters when below `turns`). Default: 50 (SPIRAL's). */
  maxTurns: maxTurnsOption(50),
})
export type SimpleNegotiationOptions = z.input<typeof simpleNegotiationOptionsSchema>

export type NegotiationInventory = Record<NegotiationResource, number>

/** Both start with Wood 10, Gold 10. */
export const negotiationStartingInventory: Readonly<NegotiationInventory> = { Wood: 10, Gold: 10 }
/** player0 values Wood 5 / Gold 15; player1 Wood 15 / Gold 5. */
export const negotiationValues: readonly [Readonly<NegotiationInventory>, Readonly<NegotiationInventory>] = [
  { Wood: 5, Gold: 15 },
  { Wood: 15, Gold: 5 },
]

export function negotiationInventoryValue(inventory: Readonly<NegotiationInventory>, values: Readonly<NegotiationInventory>): number {
  return negotiationResources.reduce((sum, resource) => sum + inventory[resource] * values[resource], 0)
}

interface OpenOffer {
  from: PlayerIndex
  offered: NegotiationBundle
  requested: NegotiationBundle
}

interface NegotiationState {
  inventories: [NegotiationInventory, NegotiationInventory]
  /** Actions played so far. */
  turn: number
  offer: OpenOffer | undefined
  readonly transcript: Transcript
}

const holds = (inventory: NegotiationInventory, bundle: NegotiationBundle) =>
  negotiationResources.every((resource) => (bundle[resource] ?? 0) <= inventory[resource])
const describeOffer = (offer: { offered: NegotiationBundle; requested: NegotiationBundle }) =>
  `Offered items: ${formatNegotiationBundle(offer.offered)} -> Requested items: ${formatNegotiationBundle(offer.requested)}`
const describeInventory = (inventory: NegotiationInventory) => negotiationResources.map((resource) => `${resource} ${inventory[resource]}`).join(', ')

function negotiationPrompt(player: PlayerIndex, turns: number): string {
  const resources = negotiationResources
    .map(
      (resource) =>
        `\t+ ${`[${resource}]`.padEnd(8)}  Qty: ${String(negotiationStartingInventory[resource]).padEnd(2)}   Value: ${negotiationValues[player][resource]}`,
    )
    .join('\n')
  return [
    `You are Player ${player} in the Negotiation Game.`,
    'You have some resources, and your task is to trade such that the total value of your resources increases.',
    'The resources and associated values you currently have are:',
    resources,
    'At each turn, you can talk to your opponent or make a trade offer.',
    'Use the following special tokens for actions:',
    '  - [Offer]: To make a trade offer.',
    '    Format: [Offer: Offered Resources -> Requested Resources]',
    '    Example: [Offer: 3 Wood -> 2 Gold]',
    '  - [Accept]: To accept an incoming offer.',
    '  - [Deny]: To deny an incoming offer (default).',
    'YOU CAN INCLUDE ADDITIONAL TEXT BEFORE AND/OR AFTER THESE TOKENS.',
    '    Example: "I\'m open to negotiation."',
    'Every action must contain one of these tokens (the last one counts).',
    `The game lasts for ${turns} turns in total.`,
  ].join('\n')
}

function statusLines(state: NegotiationState, player: PlayerIndex, turns: number): string {
  const inventory = state.inventories[player]
  const value = negotiationInventoryValue(inventory, negotiationValues[player])
  const start = negotiationInventoryValue(negotiationStartingInventory, negotiationValues[player])
  const lines = [
    `[GAME] Turn ${state.turn + 1} of ${turns}. Your resources: ${describeInventory(inventory)} (total value ${value}; you started with ${start}).`,
  ]
  if (state.offer !== undefined && state.offer.from !== player) {
    lines.push(`Open offer to you from Player ${state.offer.from}: ${describeOffer(state.offer)}`)
    lines.push('Your available actions are: [Accept], [Deny], or a counter-offer [Offer: <your resources> -> <requested resources>]')
  } else {
    lines.push('No offer is open to you.')
    lines.push('Your available actions are: [Offer: <your resources> -> <requested resources>], or [Deny] to pass')
  }
  return lines.join('\n')
}

function negotiationRules(options: z.output<typeof simpleNegotiationOptionsSchema>): TwoPlayerRules<NegotiationState> {
  const current = (state: NegotiationState) => (state.turn % 2) as PlayerIndex
  const end = (state: NegotiationState) => {
    const gains = ([0, 1] as const).map(
      (player) =>
        negotiationInventoryValue(state.inventories[player], negotiationValues[player]) -
        negotiationInventoryValue(negotiationStartingInventory, negotiationValues[player]),
    ) as [number, number]
    const rewards = winLossRewards(gains[0], gains[1])
    const reason =
      rewards[0] === 0
        ? `Same change in inventory value for both players (${gains[0]}): a draw.`
        : `Player ${rewards[0] > 0 ? 0 : 1} won by having a larger gain in inventory value (Player 0: ${gains[0]}, Player 1: ${gains[1]}).`
    return { kind: 'end' as const, rewards, reason }
  }
  return {
    id: 'simple-negotiation-v1',
    start() {
      const state: NegotiationState = {
        inventories: [{ ...negotiationStartingInventory }, { ...negotiationStartingInventory }],
        turn: 0,
        offer: undefined,
        transcript: createTranscript(),
      }
      for (const player of [0, 1] as const) state.transcript.game(negotiationPrompt(player, options.turns), player)
      return state
    },
    currentPlayer: current,
    /**
     * `player0|turn 3|Wood 12, Gold 8|offer 2 Wood -> 3 Gold`: the turn (the game ends after `turns` actions), its own
     * resources (the opponent holds the rest of the fixed total) and the offer open to it (`offer none`).
     */
    stateKey(state, player) {
      const offer = state.offer !== undefined && state.offer.from !== player ? state.offer : undefined
      const open = offer === undefined ? 'none' : `${formatNegotiationBundle(offer.offered)} -> ${formatNegotiationBundle(offer.requested)}`
      return `player${player}|turn ${state.turn + 1}|${describeInventory(state.inventories[player])}|offer ${open}`
    },
    observation: (state, player) => `${state.transcript.render(player)}\n${statusLines(state, player, options.turns)}`,
    /** `NegotiationObservation` as plain data (its `offer` only when one is open to the player), for the scripted traders. */
    turnState(state, player) {
      const offer = state.offer !== undefined && state.offer.from !== player ? state.offer : undefined
      return {
        player,
        turn: state.turn + 1,
        turns: options.turns,
        values: { ...negotiationValues[player] },
        inventory: { ...state.inventories[player] },
        ...(offer === undefined ? {} : { offer: { from: offer.from, offered: { ...offer.offered }, requested: { ...offer.requested } } }),
      }
    },
    play(state, text) {
      const player = current(state)
      const other = (1 - player) as PlayerIndex
      const move = parseNegotiationMove(text)
      const offerToMe = state.offer !== undefined && state.offer.from !== player ? state.offer : undefined
      switch (move.kind) {
        case 'unknown':
          return { kind: 'invalid', reason: `${describeValue(`[${text}]`)} is not [Offer: ... -> ...], [Accept] or [Deny]` }
        case 'malformed-offer':
          return { kind: 'invalid', reason: `malformed offer: ${move.reason}` }
        case 'accept': {
          if (offerToMe === undefined) return { kind: 'invalid', reason: 'accepted an offer that was not made to them (no offer is open to them)' }
          if (!holds(state.inventories[player], offerToMe.requested)) {
            return { kind: 'invalid', reason: `accepted an offer without the resources it requests (${formatNegotiationBundle(offerToMe.requested)})` }
          }
          if (!holds(state.inventories[other], offerToMe.offered))
            throw new LudicError('Simple negotiation: the proposer no longer holds the offer (unreachable)')
          for (const resource of negotiationResources) {
            const given = offerToMe.offered[resource] ?? 0
            const taken = offerToMe.requested[resource] ?? 0
            state.inventories[other][resource] += taken - given
            state.inventories[player][resource] += given - taken
          }
          state.transcript.player(player, '[Accept]')
          state.transcript.game(`Player ${player} accepted the trade offer from Player ${other}.`)
          state.offer = undefined
          break
        }
        case 'deny':
          state.transcript.player(player, '[Deny]')
          if (offerToMe !== undefined) state.transcript.game(`Player ${player} denied the trade offer from Player ${other}.`)
          else state.transcript.game(`Player ${player} passed (no offer to deny).`)
          state.offer = undefined
          break
        case 'offer': {
          if (!holds(state.inventories[player], move.offered)) {
            return {
              kind: 'invalid',
              reason: `offered ${formatNegotiationBundle(move.offered)} while holding only ${describeInventory(state.inventories[player])}`,
            }
          }
          state.transcript.player(player, `[Offer: ${formatNegotiationBundle(move.offered)} -> ${formatNegotiationBundle(move.requested)}]`)
          if (offerToMe !== undefined) state.transcript.game(`Player ${player} implicitly denied the previous offer by making a counter-offer.`)
          state.offer = { from: player, offered: move.offered, requested: move.requested }
          state.transcript.game(`Player ${player} made the following offer to Player ${other}: ${describeOffer(state.offer)}`)
          break
        }
      }
      state.turn++
      return state.turn >= options.turns ? end(state) : { kind: 'continue' }
    },
  }
}

/**
 * Simple Negotiation (`simple-negotiation-v1`, SPIRAL's): both start with Wood 10 and Gold 10; player0
 * values Wood 5 / Gold 15, player1 Wood 15 / Gold 5 (each sees only its own values). Actions are free
 * text containing `[Offer: 3 Wood -> 2 Gold]` (free-form lists, see `parseNegotiationMove`), `[Accept]` or
 * `[Deny]`. One offer is open at a time and every answer closes it: accepting trades, denying drops it, a
 * counter-offer denies it and opens the new one. `[Deny]` with no offer open to you passes. Invalid: no
 * such token, a malformed offer, offering what you don't hold, accepting without the requested
 * resources, accepting when no offer is made to you. After `turns` actions (player0 first), the larger
 * gain in inventory value wins (+1/−1), equal gains draw; since ΔV0 − ΔV1 = 20·(ΔWood0 + ΔGold0), whoever
 * ends with more units wins and no trade is a draw.
 */
export function createSimpleNegotiation(options: SimpleNegotiationOptions = {}): EnvironmentV1 {
  const parsed = parseArgument(simpleNegotiationOptionsSchema, options, 'options')
  return createTwoPlayerEnvironment(negotiationRules(parsed), parsed)
}

export interface NegotiationObservation {
  player: PlayerIndex
  /** The turn to play, from 1, and the game's number of turns (`Turn 3 of 10`). */
  turn: number
  turns: number
  values: NegotiationInventory
  inventory: NegotiationInventory
  /** The offer open to the player, if any. */
  offer: { from: PlayerIndex; offered: NegotiationBundle; requested: NegotiationBundle } | undefined
}

const inventorySchema = z.strictObject({ Wood: z.number().int().min(0), Gold: z.number().int().min(0) })
const bundleSchema = z.strictObject({ Wood: z.number().int().min(0).optional(), Gold: z.number().int().min(0).optional() })
const negotiationTurnStateSchema = z.strictObject({
  player: z.union([z.literal(0), z.literal(1)]),
  turn: z.number().int().positive(),
  turns: z.number().int().positive(),
  values: inventorySchema,
  inventory: inventorySchema,
  offer: z.strictObject({ from: z.union([z.literal(0), z.literal(1)]), offered: bundleSchema, requested: bundleSchema }).optional(),
})

/**
 * The acting player's situation from a turn's structured `state` (`TurnView.state` of `simple-negotiation-v1`,
 * passed on as `GenerationRequest.turn.state`): what the scripted traders decide from. Malformed state is an
 * `InvalidArgumentError` naming `argument` and the field.
 */
export function negotiationTurnState(state: unknown, argument = 'request.turn.state'): NegotiationObservation {
  const parsed = parseArgument(negotiationTurnStateSchema, state, argument)
  const { player, turn, turns, values, inventory } = parsed
  return { player, turn, turns, values, inventory, offer: parsed.offer as NegotiationObservation['offer'] }
}

/**
 * Reads the acting player's situation from a Simple Negotiation observation: the game's own parser of its own
 * text (the scripted players read `negotiationTurnState` instead, so a reworded observation plays the same).
 */
export function parseNegotiationObservation(observation: string): NegotiationObservation {
  const player = /You are Player ([01]) in the Negotiation Game/.exec(observation)?.[1]
  const values: Partial<NegotiationInventory> = {}
  for (const resource of negotiationResources) {
    const match = new RegExp(`\\[${resource}\\]\\s+Qty: \\d+\\s+Value: (\\d+)`).exec(observation)
    if (match !== null) values[resource] = Number(match[1])
  }
  const status = observation.slice(observation.lastIndexOf('[GAME] Turn '))
  const turn = /^\[GAME\] Turn (\d+) of (\d+)\./.exec(status)
  const inventory: Partial<NegotiationInventory> = {}
  const held = /Your resources: ([^(]*)\(/.exec(status)?.[1] ?? ''
  for (const resource of negotiationResources) {
    const match = new RegExp(`${resource} (\\d+)`).exec(held)
    if (match !== null) inventory[resource] = Number(match[1])
  }
  if (player === undefined || turn === null || negotiationResources.some((resource) => values[resource] === undefined || inventory[resource] === undefined)) {
    throw new LudicError('Simple negotiation: cannot read the player, turn, values and resources from the observation')
  }
  const open = /Open offer to you from Player ([01]): Offered items: (.*) -> Requested items: (.*)/.exec(status)
  let offer: NegotiationObservation['offer']
  if (open !== null) {
    const parsed = parseNegotiationMove(`Offer: ${open[2]} -> ${open[3]}`)
    if (parsed.kind === 'offer') offer = { from: Number(open[1]) as PlayerIndex, offered: parsed.offered, requested: parsed.requested }
  }
  return {
    player: Number(player) as PlayerIndex,
    turn: Number(turn[1]),
    turns: Number(turn[2]),
    values: values as NegotiationInventory,
    inventory: inventory as NegotiationInventory,
    offer,
  }
}
