import { LudicError, parseArgument, turnContextOf, type TurnContext } from '@ludic/core'
import { createKuhnPokerRules, kuhnCardNames, kuhnFirstActor, kuhnPokerOptionsSchema, type KuhnDeal, type KuhnPokerOptions } from './kuhn-poker.js'
import { kuhnInformationStateNames, type KuhnInformationStateName } from './kuhn-policy.js'
import { createTwoPlayerEnvironment } from './two-player-environment.js'

export interface KuhnInformationState {
  /** OpenSpiel's name: card (0 = J, 1 = Q, 2 = K) then history, e.g. `"1pb"`. */
  name: KuhnInformationStateName
  /** The acting player's card, `'J'`, `'Q'` or `'K'`. */
  card: string
  /** The round's history before this decision (`p` = check, `b` = bet). */
  history: string
  /** 0 for the round's first actor, 1 for the second. */
  position: 0 | 1
  /** The environment role that acts here in round 1 (player1 acts first in round 1). */
  role: string
  /** The observation the environment shows at this decision. */
  observation: string
  /** The legal actions the environment lists, passive first: `['[check]', '[bet]']` or `['[fold]', '[call]']`. */
  legalActions: readonly string[]
  /** The turn view a request for this decision carries (`GenerationRequest.turn`), as the rollout gives it. */
  turn: TurnContext
}

/**
 * The 12 information states of Kuhn Poker as the environment shows them: each is reached in round 1 of
 * an episode of `createKuhnPoker(options)` (default options: 5 rounds, the observation says so) with the
 * acting player holding the state's card and the state's history played. The opponent's card is not
 * visible before a showdown, so the observation depends only on the state.
 */
export function kuhnInformationStates(options: KuhnPokerOptions = {}): KuhnInformationState[] {
  const parsed = parseArgument(kuhnPokerOptionsSchema, options, 'options')
  return kuhnInformationStateNames.map((name) => {
    const card = Number(name[0])
    const history = name.slice(1)
    const position = (history.length % 2) as 0 | 1
    const actor = position === 0 ? kuhnFirstActor(0) : ((1 - kuhnFirstActor(0)) as 0 | 1)
    const deal: [number, number] = [0, 0]
    deal[actor] = card
    deal[1 - actor] = (card + 1) % 3
    const deals: KuhnDeal[] = new Array(parsed.rounds).fill(deal)
    const environment = createTwoPlayerEnvironment(createKuhnPokerRules(parsed, deals), { ...parsed, maxTurns: Number.MAX_SAFE_INTEGER })
    let view = environment.reset(0)
    for (const action of history) {
      const next = environment.step(action === 'b' ? '[bet]' : '[check]').next
      if (next === undefined) throw new LudicError(`Kuhn information state ${name}: the round ended early`)
      view = next
    }
    return {
      name,
      card: kuhnCardNames[card]!,
      history,
      position,
      role: view.role,
      observation: view.observation,
      legalActions: view.legalActions ?? [],
      turn: turnContextOf(environment.id, view),
    }
  })
}

const roundStart = /\[GAME\] Starting round \d+ out of \d+ rounds\.\nYour card is: ([JQK])/g
const moveLine = /^\[Player ([01])\] \[(check|bet|fold|call)\]$/gm

/**
 * The information state (OpenSpiel's name, e.g. `"1pb"`) of the player to act, read from a Kuhn Poker
 * observation: the card of the last round started and the moves played since. Throws if the text is not a
 * Kuhn Poker observation at a decision.
 */
export function kuhnInformationStateOf(observation: string): KuhnInformationStateName {
  let start: RegExpExecArray | undefined
  for (const match of observation.matchAll(roundStart)) start = match
  if (start === undefined) throw new LudicError('Kuhn Poker: no "Starting round … Your card is: …" line in the observation')
  const rest = observation.slice(start.index + start[0].length)
  let history = ''
  for (const match of rest.matchAll(moveLine)) history += match[2] === 'bet' || match[2] === 'call' ? 'b' : 'p'
  const name = `${kuhnCardNames.indexOf(start[1] as 'J' | 'Q' | 'K')}${history}`
  if (!(kuhnInformationStateNames as readonly string[]).includes(name)) {
    throw new LudicError(`Kuhn Poker: the observation ends at history ${JSON.stringify(history)}, which is not a decision`)
  }
  return name as KuhnInformationStateName
}
