import { parseArgument, type EnvironmentV1, type Random } from '@ludic/core'
import { z } from 'zod'
import { createTranscript, type Transcript } from './transcript.js'
import {
  commonOptionsShape,
  createTwoPlayerEnvironment,
  maxTurnsOption,
  winLossRewards,
  type PlayerIndex,
  type PlayResult,
  type TwoPlayerRules,
} from './two-player-environment.js'

export const kuhnPokerOptionsSchema = z.strictObject({
  ...commonOptionsShape,
  /**
   * `standard`: OpenSpiel's payoffs (a bet or call adds 1 chip to the pot), which make exact evaluation
   * possible. `spiral`: SPIRAL's released code, for reproduction (bets add nothing to the pot; the winner
   * of the last round wins the episode). Default: `standard`.
   */
  variant: z.enum(['standard', 'spiral']).default('standard'),
  /** Rounds per episode; the first actor alternates, round 1 starting with player1 (as SPIRAL). Default: 5. */
  rounds: z.number().int().positive().default(5),
  /** Episode reward: `winLoss` (sign of the net chips, 0 on a tie) or `chips` (net chips). Default: `winLoss`. */
  reward: z.enum(['winLoss', 'chips']).default('winLoss'),
  /** Truncate after this many actions (a round has at most 3). Default: 50 (SPIRAL's). */
  maxTurns: maxTurnsOption(50),
})
export type KuhnPokerOptions = z.input<typeof kuhnPokerOptionsSchema>
export type ParsedKuhnPokerOptions = z.output<typeof kuhnPokerOptionsSchema>

/** Card names by rank: 0 = J, 1 = Q, 2 = K. */
export const kuhnCardNames = ['J', 'Q', 'K'] as const

/** The cards of one round: `[card of player0, card of player1]`, ranks 0–2. */
export type KuhnDeal = readonly [number, number]

/** Legal actions after a round's history (`p` = check or fold, `b` = bet or call). */
export function kuhnLegalActions(history: string): readonly string[] {
  return history.endsWith('b') ? ['[fold]', '[call]'] : ['[check]', '[bet]']
}

/** The first actor of round `round` (0-based): player1 in round 1, then alternating. */
export function kuhnFirstActor(round: number): PlayerIndex {
  return round % 2 === 0 ? 1 : 0
}

function kuhnPrompt(player: PlayerIndex, options: ParsedKuhnPokerOptions): string {
  const goal =
    options.reward === 'chips' ? '- Your reward is your net number of chips after all rounds' : '- The player with the most chips after all rounds wins'
  return [
    `You are Player ${player} in a ${options.rounds} round game of Kuhn Poker.`,
    'Game Rules:',
    '- Kuhn Poker uses a 3-card deck with J, Q, K (J lowest, K highest)',
    '- Each player antes 1 chip and receives 1 card each round',
    `- Game continues for ${options.rounds} rounds`,
    goal,
    '',
    'Action Rules:',
    "- '[check]': Pass without betting (only if no bet is on the table)",
    "- '[bet]': Add 1 chip to the pot (only if no bet is on the table)",
    "- '[call]': Match an opponent's bet by adding 1 chip to the pot",
    "- '[fold]': Surrender your hand and let your opponent win the pot",
  ].join('\n')
}

interface KuhnState {
  readonly deals: readonly KuhnDeal[]
  round: number
  /** The round's actions so far, `p`/`b`, first actor first. */
  history: string
  chips: [number, number]
  lastRoundWinner: PlayerIndex
  readonly transcript: Transcript
}

/** Deals one round: shuffles J, Q, K and gives the first two cards to player0 and player1. */
function dealRound(random: Random): KuhnDeal {
  const deck = random.shuffle([0, 1, 2])
  return [deck[0]!, deck[1]!]
}

/**
 * The rules, with an optional fixed deal per round (used to render the 12 information states exactly as
 * the environment shows them).
 */
export function createKuhnPokerRules(options: ParsedKuhnPokerOptions, fixedDeals?: readonly KuhnDeal[]): TwoPlayerRules<KuhnState> {
  const current = (state: KuhnState): PlayerIndex => {
    const first = kuhnFirstActor(state.round)
    return state.history.length % 2 === 0 ? first : ((1 - first) as PlayerIndex)
  }
  const startRound = (state: KuhnState) => {
    const deal = state.deals[state.round]!
    const first = kuhnFirstActor(state.round)
    for (const player of [0, 1] as const) {
      let message = `Starting round ${state.round + 1} out of ${options.rounds} rounds.\nYour card is: ${kuhnCardNames[deal[player]]}`
      if (player === first) message += `\nYour available actions are: ${kuhnLegalActions('').join(', ')}`
      state.transcript.game(message, player)
    }
  }
  const endRound = (state: KuhnState): PlayResult => {
    const first = kuhnFirstActor(state.round)
    const second = (1 - first) as PlayerIndex
    const deal = state.deals[state.round]!
    const history = state.history
    const pot = options.variant === 'spiral' ? 2 : 2 + [...history].filter((action) => action === 'b').length
    const folded = history === 'bp' || history === 'pbp'
    let winner: PlayerIndex
    if (folded) {
      const folder = history === 'bp' ? second : first
      winner = (1 - folder) as PlayerIndex
      state.transcript.game(`Player ${folder} has folded. Player ${winner} wins pot of ${pot} chips.`)
    } else {
      winner = deal[0] > deal[1] ? 0 : 1
      const loser = (1 - winner) as PlayerIndex
      state.transcript.game(`Cards: Player 0 had ${kuhnCardNames[deal[0]]}, Player 1 had ${kuhnCardNames[deal[1]]}`)
      state.transcript.game(
        `Showdown: Player ${winner}'s ${kuhnCardNames[deal[winner]]} beats Player ${loser}'s ${kuhnCardNames[deal[loser]]}. ` +
          `Player ${winner} wins pot of ${pot} chips.`,
      )
    }
    // The winner nets what the loser put in: the ante, plus the loser's bet or call at a showdown.
    const stake = folded ? 1 : pot / 2
    state.chips[winner] += stake
    state.chips[(1 - winner) as PlayerIndex] -= stake
    state.lastRoundWinner = winner
    state.transcript.game(`Chips after round ${state.round + 1}: Player 0: ${state.chips[0]}; Player 1: ${state.chips[1]}`)
    state.round++
    state.history = ''
    if (state.round < options.rounds) {
      startRound(state)
      return { kind: 'continue' }
    }
    const [chips0, chips1] = state.chips
    if (options.reward === 'chips') {
      return { kind: 'end', rewards: [chips0, chips1], reason: `After ${options.rounds} rounds: Player 0 has ${chips0} chips, Player 1 has ${chips1}` }
    }
    if (options.variant === 'spiral') {
      const last = state.lastRoundWinner
      return { kind: 'end', rewards: last === 0 ? [1, -1] : [-1, 1], reason: `Player ${last} won the last round, which decides the game (SPIRAL's rule)` }
    }
    const rewards = winLossRewards(chips0, chips1)
    const reason =
      rewards[0] === 0
        ? `At the end of ${options.rounds} rounds, both players had the same number of chips.`
        : `Player ${rewards[0] > 0 ? 0 : 1} won by having more chips at the end of all ${options.rounds} rounds.`
    return { kind: 'end', rewards, reason }
  }

  // The chip standing bears on the outcome unless only the last round counts (SPIRAL's rule with winLoss).
  const chipsMatter = options.variant === 'standard' || options.reward === 'chips'
  return {
    id: 'kuhn-poker-v1',
    start(random) {
      const deals = fixedDeals ?? Array.from({ length: options.rounds }, () => dealRound(random))
      const state: KuhnState = { deals, round: 0, history: '', chips: [0, 0], lastRoundWinner: 0, transcript: createTranscript() }
      for (const player of [0, 1] as const) state.transcript.game(kuhnPrompt(player, options), player)
      startRound(state)
      return state
    },
    currentPlayer: current,
    /**
     * The player's information state: `player1|round 2|chips +1|card K|history pb` — the round, its own net chips
     * so far (left out under SPIRAL's last-round rule, where they do not count), its card and the round's actions
     * (`p` check or fold, `b` bet or call; `-` before any). Never the opponent's card; earlier rounds count only
     * through the chips, since every round is dealt afresh.
     */
    stateKey(state, player) {
      const chips = state.chips[player]
      const standing = chipsMatter ? `|chips ${chips > 0 ? '+' : ''}${chips}` : ''
      return `player${player}|round ${state.round + 1}${standing}|card ${kuhnCardNames[state.deals[state.round]![player]]}|history ${state.history || '-'}`
    },
    observation: (state, player) => state.transcript.render(player),
    legalActions: (state) => kuhnLegalActions(state.history),
    /** `{ informationState: '1pb' }`: OpenSpiel's name of the round's information state (card 0 = J … 2 = K, then the history), for the tabular players. */
    turnState: (state, player) => ({ informationState: `${state.deals[state.round]![player]}${state.history}` }),
    play(state, move) {
      const actor = current(state)
      state.transcript.player(actor, move)
      state.history += move === '[bet]' || move === '[call]' ? 'b' : 'p'
      if (['pp', 'bp', 'bb', 'pbp', 'pbb'].includes(state.history)) return endRound(state)
      state.transcript.game(`Your available actions are: ${kuhnLegalActions(state.history).join(', ')}`, current(state))
      return { kind: 'continue' }
    },
  }
}

/**
 * Kuhn Poker (`kuhn-poker-v1`): a deck of J < Q < K, each player antes 1 and gets one card. The first
 * actor plays `[check]` or `[bet]`; after a check the other plays `[check]` (showdown) or `[bet]`; facing a
 * bet a player plays `[fold]` or `[call]` (showdown). An episode is `rounds` rounds; the first actor
 * alternates, starting with player1. Observations are TextArena's `[GAME]` / `[Player k]` lines.
 * Same seed, same deals.
 */
export function createKuhnPoker(options: KuhnPokerOptions = {}): EnvironmentV1 {
  const parsed = parseArgument(kuhnPokerOptionsSchema, options, 'options')
  return createTwoPlayerEnvironment(createKuhnPokerRules(parsed), parsed)
}
