import { parseArgument, type EnvironmentV1, type Random } from '@ludic/core'
import { z } from 'zod'
import { commonOptionsShape, createTwoPlayerEnvironment, maxTurnsOption, type PlayerIndex, type TwoPlayerRules } from './two-player-environment.js'

export const pigDiceOptionsSchema = z.strictObject({
  ...commonOptionsShape,
  /** The first player to bank this many points wins. Default: 100 (TextArena's). */
  targetScore: z.number().int().positive().default(100),
  /** Truncate (0/0) after this many actions, each roll or hold counting one. Default: 500 (TextArena's). */
  maxTurns: maxTurnsOption(500),
})
export type PigDiceOptions = z.input<typeof pigDiceOptionsSchema>

interface PigState {
  readonly random: Random
  scores: [number, number]
  player: PlayerIndex
  turnTotal: number
  turnRolls: number[]
  /** What the other player did on their last turn, shown at the start of this one. */
  lastTurn: string | undefined
}

function pigPrompt(player: PlayerIndex, targetScore: number): string {
  return [
    `You are Player ${player} playing a game of Pig Dice.`,
    'Rules:',
    "- On your turn, you can either '[roll]' or '[hold]'",
    '- Roll a 2-6: Add to your turn total',
    '- Roll a 1: Lose turn total and end turn',
    '- Hold: Add turn total to your score and end turn',
    `- First to ${targetScore} points wins`,
    '',
    "When it's your turn, you'll see the current scores and turn total.",
    "Respond with '[roll]' to roll the die or '[hold]' to bank your points.",
  ].join('\n')
}

function pigRules(options: z.output<typeof pigDiceOptionsSchema>): TwoPlayerRules<PigState> {
  const passTurn = (state: PigState, summary: string) => {
    state.lastTurn = summary
    state.player = state.player === 0 ? 1 : 0
    state.turnTotal = 0
    state.turnRolls = []
  }
  return {
    id: 'pig-dice-v0',
    start: (random) => ({ random, scores: [0, 0], player: 0, turnTotal: 0, turnRolls: [], lastTurn: undefined }),
    currentPlayer: (state) => state.player,
    /** `player0|score 12|opponent 30|turn total 8`: the banked scores and the points at stake this turn (the rolls that made them do not matter). */
    stateKey: (state, player) => `player${player}|score ${state.scores[player]}|opponent ${state.scores[1 - player]}|turn total ${state.turnTotal}`,
    observation(state, player) {
      const lines = [pigPrompt(player, options.targetScore), '', `Current Scores: Player 0: '${state.scores[0]}'; Player 1: '${state.scores[1]}'`]
      if (state.lastTurn !== undefined && state.turnRolls.length === 0) lines.push(state.lastTurn)
      lines.push(`Your current turn total is ${state.turnTotal}.`)
      lines.push(
        state.turnRolls.length > 0
          ? `Your roll history for this turn: ${state.turnRolls.map((roll) => `'${roll}'`).join(', ')}`
          : 'This is the first roll of your turn.',
      )
      lines.push("Available actions: '[roll]' or '[hold]'")
      return lines.join('\n')
    },
    legalActions: () => ['[roll]', '[hold]'],
    play(state, move) {
      const player = state.player
      if (move === '[roll]') {
        const roll = 1 + state.random.nextInt(6)
        if (roll === 1) {
          const rolls = [...state.turnRolls, 1].join(', ')
          passTurn(state, `Player ${player} rolled ${rolls} and busted, losing ${state.turnTotal} points.`)
        } else {
          state.turnTotal += roll
          state.turnRolls.push(roll)
        }
        return { kind: 'continue' }
      }
      const banked = state.turnTotal
      state.scores[player] += banked
      if (state.scores[player] >= options.targetScore) {
        return {
          kind: 'end',
          rewards: player === 0 ? [1, -1] : [-1, 1],
          reason: `Player ${player} won by reaching ${state.scores[player]} points (target ${options.targetScore}).`,
        }
      }
      const rolls = state.turnRolls.length > 0 ? `rolled ${state.turnRolls.join(', ')} and ` : ''
      passTurn(state, `Player ${player} ${rolls}held, banking ${banked} points.`)
      return { kind: 'continue' }
    },
  }
}

/**
 * Pig Dice (`pig-dice-v0`): on your turn `[roll]` a die — 2–6 adds to your turn total, 1 loses it and ends
 * your turn — or `[hold]` to bank the turn total and pass. The first to `targetScore` wins (+1/−1).
 * player0 starts. Dice come from the episode's seed: same seed and same actions, same rolls.
 */
export function createPigDice(options: PigDiceOptions = {}): EnvironmentV1 {
  const parsed = parseArgument(pigDiceOptionsSchema, options, 'options')
  return createTwoPlayerEnvironment(pigRules(parsed), parsed)
}
