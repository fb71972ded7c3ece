import { describeValue, LudicError, parseArgument, type EnvironmentV1, type Random } from '@ludic/core'
import { z } from 'zod'
import { abbreviate } from './action.js'
import { createTranscript, type Transcript } from './transcript.js'
import { commonOptionsShape, createTwoPlayerEnvironment, maxTurnsOption, type PlayerIndex, type TwoPlayerRules } from './two-player-environment.js'

export const liarsDiceOptionsSchema = z.strictObject({
  ...commonOptionsShape,
  /** Dice each player starts with. Default: 5 (TextArena's). */
  dice: z.number().int().min(1).max(20).default(5),
  /** Truncate (0/0) after this many actions (a full game with 5 dice each takes at most 144). Default: 200. */
  maxTurns: maxTurnsOption(200),
})
export type LiarsDiceOptions = z.input<typeof liarsDiceOptionsSchema>

export interface LiarsDiceBid {
  quantity: number
  face: number
}

/**
 * The legal actions: every bid `[Bid: quantity, face]` with quantity ≤ the dice in play and face 1–6 that
 * raises the current bid (neither lower, not both equal), in order of quantity then face; then `[Call]`
 * when there is a bid to call.
 */
export function liarsDiceLegalActions(bid: LiarsDiceBid | undefined, diceInPlay: number): string[] {
  const actions: string[] = []
  for (let quantity = Math.max(1, bid?.quantity ?? 1); quantity <= diceInPlay; quantity++) {
    for (let face = Math.max(1, bid?.face ?? 1); face <= 6; face++) {
      if (bid !== undefined && quantity === bid.quantity && face === bid.face) continue
      actions.push(`[Bid: ${quantity}, ${face}]`)
    }
  }
  if (bid !== undefined) actions.push('[Call]')
  return actions
}

interface LiarsDiceState {
  readonly random: Random
  dice: [number[], number[]]
  player: PlayerIndex
  round: number
  bid: (LiarsDiceBid & { by: PlayerIndex }) | undefined
  readonly transcript: Transcript
}

/** A bid, on text whose whitespace is collapsed to single spaces (no ambiguous repetitions: linear time). */
const bidPattern = /^bid ?:? ?(\d+)(?: ?, ?| )(\d+)$/i
const collapse = (move: string) => move.trim().replace(/\s+/g, ' ')

function liarsDicePrompt(player: PlayerIndex, dice: number): string {
  return [
    `You are Player ${player} in a 2-player Liar's Dice game.`,
    `Each player starts with ${dice} dice, rolled in secret at the start of every round.`,
    '',
    'Rules:',
    '- On your turn, you may either:',
    "  1) Make a new bid with a higher quantity or higher face (or both); i.e. '[Bid: 3, 4]' claims that at least 3 dice among all dice show a 4,",
    "  2) Call the last bid by typing '[Call]'.",
    '',
    'If you call:',
    '  - If the actual count of that face value among all dice is less than the bid, the last bidder loses one die.',
    '  - Otherwise, the caller loses one die.',
    'The player who lost a die starts the next round. A player who reaches 0 dice loses the game.',
  ].join('\n')
}

const total = (state: LiarsDiceState) => state.dice[0].length + state.dice[1].length

function liarsDiceRules(options: z.output<typeof liarsDiceOptionsSchema>): TwoPlayerRules<LiarsDiceState> {
  const startRound = (state: LiarsDiceState, counts: [number, number], starter: PlayerIndex) => {
    state.round++
    state.dice = [0, 1].map((player) => Array.from({ length: counts[player]! }, () => 1 + state.random.nextInt(6))) as [number[], number[]]
    state.player = starter
    state.bid = undefined
    state.transcript.game(`Round ${state.round} starts with new dice: Player 0 has ${counts[0]}, Player 1 has ${counts[1]}. Player ${starter} bids first.`)
  }
  return {
    id: 'liars-dice-v0',
    start(random) {
      const state: LiarsDiceState = { random, dice: [[], []], player: 0, round: 0, bid: undefined, transcript: createTranscript() }
      for (const player of [0, 1] as const) state.transcript.game(liarsDicePrompt(player, options.dice), player)
      startRound(state, [options.dice, options.dice], 0)
      return state
    },
    currentPlayer: (state) => state.player,
    /**
     * `player0|dice 1,3,3,5,6|opponent dice 4|bid 3x4`: its own dice (sorted: their order does not matter), how many
     * dice the opponent holds, and the bid to raise or call (`bid none` at a round's start; the opponent made it).
     * Never the opponent's dice.
     */
    stateKey(state, player) {
      const own = [...state.dice[player]].sort((a, b) => a - b).join(',')
      const bid = state.bid === undefined ? 'none' : `${state.bid.quantity}x${state.bid.face}`
      return `player${player}|dice ${own}|opponent dice ${state.dice[1 - player]!.length}|bid ${bid}`
    },
    observation(state, player) {
      const bid = state.bid === undefined ? 'none' : `Quantity = ${state.bid.quantity}, Face Value = ${state.bid.face} (by Player ${state.bid.by})`
      const actions =
        state.bid === undefined
          ? `[Bid: quantity, face] with quantity 1-${total(state)} and face 1-6`
          : `[Call], or [Bid: quantity, face] raising the quantity or the face (or both), quantity at most ${total(state)}, face at most 6`
      return [
        state.transcript.render(player),
        `[GAME] Your dice: ${state.dice[player].join(', ')}. Dice in play: ${total(state)} (Player 0: ${state.dice[0].length}, Player 1: ${state.dice[1].length}).`,
        `Current bid: ${bid}`,
        `Your available actions are: ${actions}`,
      ].join('\n')
    },
    legalActions: (state) => liarsDiceLegalActions(state.bid, total(state)),
    canonicalMove(move) {
      const text = collapse(move)
      const bid = bidPattern.exec(text)
      if (bid !== null) return `Bid: ${Number(bid[1])}, ${Number(bid[2])}`
      return text
    },
    explainIllegal(state, move) {
      const text = collapse(move)
      if (/^call$/i.test(text)) return 'called with no bid to call'
      const bid = bidPattern.exec(text)
      if (bid === null) return `${describeValue(`[${text}]`)} is neither [Bid: quantity, face] nor [Call]`
      const quantity = Number(bid[1])
      const face = Number(bid[2])
      if (face < 1 || face > 6) return `face ${abbreviate(bid[2]!, 12)} is not 1-6`
      if (quantity < 1) return 'a bid needs a quantity of at least 1'
      if (quantity > total(state)) return `quantity ${abbreviate(bid[1]!, 12)} exceeds the ${total(state)} dice in play`
      const current = state.bid
      return current === undefined
        ? `bid ${quantity}, ${face} is not allowed`
        : `bid ${quantity}, ${face} does not raise the current bid ${current.quantity}, ${current.face} (neither number may go down, and one must go up)`
    },
    play(state, move) {
      const player = state.player
      const other = (1 - player) as PlayerIndex
      if (move !== '[Call]') {
        const match = /^\[Bid: (\d+), (\d+)\]$/.exec(move)!
        state.bid = { quantity: Number(match[1]), face: Number(match[2]), by: player }
        state.transcript.player(player, move)
        state.transcript.game(`Player ${player} bids ${state.bid.quantity} of face ${state.bid.face}.`)
        state.player = other
        return { kind: 'continue' }
      }
      const bid = state.bid
      if (bid === undefined) throw new LudicError("Liar's Dice: [Call] listed as legal with no bid (unreachable)")
      state.transcript.player(player, '[Call]')
      const count = state.dice[0].concat(state.dice[1]).filter((face) => face === bid.face).length
      const loser = count < bid.quantity ? bid.by : player
      const verdict =
        count < bid.quantity
          ? `which is LESS than ${bid.quantity}.\nPlayer ${loser} (the last bidder) loses one die.`
          : `which is >= ${bid.quantity}.\nPlayer ${loser} (the caller) loses one die.`
      state.transcript.game(
        `Player ${player} calls! The actual count of face ${bid.face} is ${count}, ${verdict}\n` +
          `Dice were: Player 0: ${state.dice[0].join(', ')}; Player 1: ${state.dice[1].join(', ')}.`,
      )
      const counts: [number, number] = [state.dice[0].length, state.dice[1].length]
      counts[loser]--
      if (counts[loser] === 0) {
        const winner = (1 - loser) as PlayerIndex
        return { kind: 'end', rewards: winner === 0 ? [1, -1] : [-1, 1], reason: `Player ${loser} has no dice left: Player ${winner} wins.` }
      }
      startRound(state, counts, loser)
      return { kind: 'continue' }
    },
  }
}

/**
 * Liar's Dice for two (`liars-dice-v0`): each player rolls `dice` dice in secret. Players bid
 * `[Bid: quantity, face]` ("at least that many dice among all show that face"), each bid raising the last
 * in quantity or face (neither going down), or `[Call]` the last bid: if fewer dice show the face than
 * bid, the bidder loses a die, else the caller. The loser of a call starts the next round (player0 starts
 * the first); whoever runs out of dice loses (−1, the other +1). Same seed and same actions, same dice.
 */
export function createLiarsDice(options: LiarsDiceOptions = {}): EnvironmentV1 {
  const parsed = parseArgument(liarsDiceOptionsSchema, options, 'options')
  return createTwoPlayerEnvironment(liarsDiceRules(parsed), parsed)
}

/** Reads the current bid and the dice in play from a Liar's Dice observation (the last status lines). */
export function parseLiarsDiceObservation(observation: string): { bid: LiarsDiceBid | undefined; diceInPlay: number } {
  const diceMatches = [...observation.matchAll(/Dice in play: (\d+) \(/g)]
  const bidMatches = [...observation.matchAll(/^Current bid: (?:none|Quantity = (\d+), Face Value = (\d+))/gm)]
  const dice = diceMatches.at(-1)
  const bid = bidMatches.at(-1)
  if (dice === undefined || bid === undefined) throw new LudicError("Liar's Dice: cannot read the dice in play and the current bid from the observation")
  return {
    bid: bid[1] === undefined ? undefined : { quantity: Number(bid[1]), face: Number(bid[2]) },
    diceInPlay: Number(dice[1]),
  }
}
