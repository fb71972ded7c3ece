import type { ChatMessage, PolicyV1, Trajectory, TurnView } from '@ludic/core'
import {
  createNegotiationHeuristicPolicy,
  createRandomPolicy,
  createSimpleNegotiation,
  evaluationInvalidRewards,
  extractMove,
  negotiationInventoryValue,
  negotiationMenu,
  negotiationResources,
  negotiationStartingInventory,
  negotiationValues,
  parseNegotiationMove,
  parseNegotiationObservation,
  type NegotiationBundle,
  type NegotiationInventory,
} from '@ludic/games'
import { randomLegalPlay } from '@ludic/rollout'
import { evaluateAgainst } from '@ludic/trainer'
import { trainBpe, Tokenizer } from '@ludic/tokenizer'

export const endOfText = '<|end|>'

/**
 * The terse prompt of a model made from scratch: the seat (which fixes the values: player0 Wood 5 / Gold 15,
 * player1 Wood 15 / Gold 5), the turn, the resources held, and the offer open to the player, if any; the
 * rules preamble and the transcript are dropped (the state is all a move depends on).
 * `P1 turn 4/6 Wood 12 Gold 9\noffer 1 Gold -> 2 Wood`
 */
export function terseObservation(observation: string): string {
  const { player, turn, turns, inventory, offer } = parseNegotiationObservation(observation)
  const head = `P${player} turn ${turn}/${turns} Wood ${inventory.Wood} Gold ${inventory.Gold}`
  return offer === undefined ? `${head}\nno offer` : `${head}\noffer ${bundleText(offer.offered)} -> ${bundleText(offer.requested)}`
}

const bundleText = (bundle: NegotiationBundle) =>
  negotiationResources
    .filter((resource) => bundle[resource] !== undefined)
    .map((resource) => `${bundle[resource]} ${resource}`)
    .join(', ')

/** The rollout's prompt: one user message with the terse observation (scripted opponents decide from each request's turn view, see `playAgainst`). */
export const promptOf = (view: TurnView): ChatMessage[] => [{ role: 'user', content: terseObservation(view.observation) }]

/** The chat template: the last message, then `\n>` where the move goes. */
export const chatTemplate = (messages: readonly ChatMessage[]): string => `${messages.at(-1)?.content ?? ''}\n>`

/** The legal-move menu of a state: `[Accept]` (when an offer is open and payable), `[Deny]`, offers of 1–3 units. */
export const menuOf = (observation: string): string[] => negotiationMenu(parseNegotiationObservation(observation))

/** Random legal play's options here: the terse prompt, the menu as the legal moves. */
const playOptions = { prompt: promptOf, chatTemplate, legalActions: (view: TurnView) => menuOf(view.observation) }
const statesOf = (observations: readonly string[]): TurnView[] => observations.map((observation) => ({ role: '', observation }))

/**
 * Full observations of the states random legal play visits (`randomLegalPlay`): `episodes` games, every move drawn
 * uniformly from the menu (seeded). The warm-up's and the tokenizer's prompts come from them.
 */
export function randomPlayObservations(episodes: number, turns: number, seed: number): string[] {
  const play = randomLegalPlay({ ...playOptions, environment: () => createSimpleNegotiation({ turns }), games: episodes, seed, distinct: false })
  return play.states.map((view) => view.observation)
}

/**
 * Random legal play as supervised examples: at each distinct state random play visits, every menu move
 * once, and `[Accept]` and `[Deny]` `answerWeight` times each (so an open offer is answered, not only
 * countered, often enough for self-play to find out which answers pay).
 */
export function randomPlayExamples(observations: readonly string[], answerWeight: number): { prompt: string; response: string }[] {
  const copies = { '[Accept]': answerWeight, '[Deny]': answerWeight }
  const { examples } = randomLegalPlay({ ...playOptions, states: statesOf(observations), copies })
  return examples.map(({ prompt, response }) => ({ prompt, response }))
}

/** A byte-level BPE trained on what the model reads and writes: the terse prompts and every menu move, at every state visited. */
export function trainNegotiationTokenizer(observations: readonly string[], vocabSize: number): Tokenizer {
  const { corpus } = randomLegalPlay({ ...playOptions, states: statesOf(observations), distinct: false })
  return Tokenizer.fromJSON(trainBpe(corpus, { vocabSize, specialTokens: [endOfText] }), { eos_token: endOfText })
}

/** What an episode did to the inventories: each player's change in inventory value, and the trades made. */
export interface NegotiationOutcome {
  valueChange: [number, number]
  deals: number
}

/**
 * Replays an episode's moves (the game's rules: one open offer, every answer closes it, accepting trades)
 * up to its first invalid move, which ends the game; returns the players' value changes and the trades.
 */
export function negotiationOutcome(
  trajectory: Pick<Trajectory, 'turns'> | { turns: readonly Pick<Trajectory['turns'][number], 'role' | 'action' | 'invalidAction'>[] },
): NegotiationOutcome {
  const inventories: [NegotiationInventory, NegotiationInventory] = [{ ...negotiationStartingInventory }, { ...negotiationStartingInventory }]
  let offer: { from: 0 | 1; offered: NegotiationBundle; requested: NegotiationBundle } | undefined
  let deals = 0
  for (const turn of trajectory.turns) {
    if (turn.invalidAction) break
    const player: 0 | 1 = turn.role === 'player0' ? 0 : 1
    const move = parseNegotiationMove(extractMove(turn.action) ?? '')
    if (move.kind === 'accept' && offer !== undefined && offer.from !== player) {
      for (const resource of negotiationResources) {
        const given = offer.offered[resource] ?? 0
        const taken = offer.requested[resource] ?? 0
        inventories[offer.from][resource] += taken - given
        inventories[player][resource] += given - taken
      }
      deals++
      offer = undefined
    } else if (move.kind === 'deny') {
      offer = undefined
    } else if (move.kind === 'offer') {
      offer = { from: player, offered: move.offered, requested: move.requested }
    }
  }
  const change = (player: 0 | 1) =>
    negotiationInventoryValue(inventories[player], negotiationValues[player]) -
    negotiationInventoryValue(negotiationStartingInventory, negotiationValues[player])
  return { valueChange: [change(0), change(1)], deals }
}

export interface MatchFigures {
  /** The learner's mean change in inventory value per game (its seat's values). */
  meanValueChange: number
  /** The opponent's mean change in inventory value per game. */
  opponentValueChange: number
  /** Share of games the learner wins (larger gain; an invalid move loses). */
  winRate: number
  /** The Wilson score interval of `winRate`, 95% (`evaluateAgainst`'s). */
  winRateInterval: { low: number; high: number }
  /** Mean game reward of the learner (+1 win, −1 loss, 0 draw; an invalid move −1). */
  meanReward: number
  /** Share of games with at least one accepted trade. */
  dealRate: number
  /** Share of the learner's moves that were invalid. */
  invalidRate: number
}

/**
 * The learner against an opponent (`evaluateAgainst`: seats alternating, the learner reads the terse prompt, the
 * opponent the full observation), sampled at temperature 1, an invalid move counted as a loss
 * (`evaluationInvalidRewards`); each game replayed for its value changes and trades (`negotiationOutcome`).
 */
export async function playAgainst(
  learner: PolicyV1,
  opponent: PolicyV1,
  options: { episodes: number; turns: number; seed: number; maxTokens: number },
): Promise<MatchFigures> {
  const match = await evaluateAgainst({
    learner,
    opponent,
    environments: [() => createSimpleNegotiation({ turns: options.turns, ...evaluationInvalidRewards })],
    episodes: options.episodes,
    seed: options.seed,
    prompt: (view) => promptOf(view),
    generation: { maxTokens: options.maxTokens, temperature: 1 },
  })
  let value = 0
  let opponentValue = 0
  let deals = 0
  match.trajectories.forEach((trajectory, index) => {
    const seat = match.learnerSeats[index] === 'player0' ? 0 : 1
    const outcome = negotiationOutcome(trajectory)
    value += outcome.valueChange[seat]
    opponentValue += outcome.valueChange[1 - seat]!
    if (outcome.deals > 0) deals++
  })
  const games = match.episodes
  return {
    meanValueChange: value / games,
    opponentValueChange: opponentValue / games,
    winRate: match.winRate,
    winRateInterval: { low: match.winRateInterval[0], high: match.winRateInterval[1] },
    meanReward: match.meanReward,
    dealRate: deals / games,
    invalidRate: match.invalidRate,
  }
}

/** The two opponents of the evaluation. */
export const opponents = (seed: number) => ({
  heuristic: createNegotiationHeuristicPolicy({ seed }),
  random: createRandomPolicy({ seed, id: 'random' }),
})
