import { LudicError, parseArgument, type EnvironmentV1 } from '@ludic/core'
import { z } from 'zod'
import { createTranscript, type Transcript } from './transcript.js'
import {
  commonOptionsShape,
  createTwoPlayerEnvironment,
  maxTurnsOption,
  winLossRewards,
  type PlayerIndex,
  type TwoPlayerRules,
} from './two-player-environment.js'

const points = z.number().int().min(0)

export const iteratedPrisonersDilemmaOptionsSchema = z.strictObject({
  ...commonOptionsShape,
  /** Decision rounds. Default: 10. */
  rounds: z.number().int().positive().default(10),
  /** Payoffs: both cooperate (R), defect against a cooperator (T), cooperate against a defector (S), both defect (P). Default: 3/5/0/1. */
  payoffs: z
    .strictObject({ reward: points.default(3), temptation: points.default(5), sucker: points.default(0), punishment: points.default(1) })
    .default({ reward: 3, temptation: 5, sucker: 0, punishment: 1 }),
  /** Truncate (0/0) after this many actions (a game takes 2 per round). Default: 50. */
  maxTurns: maxTurnsOption(50),
})
export type IteratedPrisonersDilemmaOptions = z.input<typeof iteratedPrisonersDilemmaOptionsSchema>

type Choice = 'cooperate' | 'defect'

interface DilemmaState {
  round: number
  player: PlayerIndex
  /** player0's hidden choice, while player1 decides. */
  pending: Choice | undefined
  scores: [number, number]
  readonly transcript: Transcript
}

function dilemmaRules(options: z.output<typeof iteratedPrisonersDilemmaOptionsSchema>): TwoPlayerRules<DilemmaState> {
  const { reward, temptation, sucker, punishment } = options.payoffs
  const prompt = (player: PlayerIndex) =>
    [
      `You are Player ${player} in an Iterated Prisoner's Dilemma game.`,
      '',
      'Game Structure:',
      `- The game consists of ${options.rounds} decision rounds`,
      "- In each round, both players choose to Cooperate or Defect without seeing the other's choice",
      '',
      'Payoff Matrix:',
      `- Both Cooperate: Both get ${reward} points`,
      `- Both Defect: Both get ${punishment} points`,
      `- One Defects, One Cooperates: Defector gets ${temptation}, Cooperator gets ${sucker}`,
      '',
      'How to Play:',
      '- Use [Cooperate] or [Defect]',
      '- The player with the higher total after all rounds wins',
    ].join('\n')
  const payoff = (own: Choice, other: Choice) =>
    own === 'cooperate' ? (other === 'cooperate' ? reward : sucker) : other === 'cooperate' ? temptation : punishment
  const describe = (choices: [Choice, Choice]) => {
    if (choices[0] === choices[1]) return choices[0] === 'cooperate' ? 'Both players cooperated' : 'Both players defected'
    return choices[0] === 'cooperate' ? 'Player 0 cooperated, Player 1 defected' : 'Player 0 defected, Player 1 cooperated'
  }
  return {
    id: 'iterated-prisoners-dilemma-v0',
    start() {
      const state: DilemmaState = { round: 1, player: 0, pending: undefined, scores: [0, 0], transcript: createTranscript() }
      for (const player of [0, 1] as const) state.transcript.game(prompt(player), player)
      return state
    },
    currentPlayer: (state) => state.player,
    /**
     * `player1|round 3|score 8|opponent 3`: the round and the totals so far, which are all the rules carry forward
     * (the choices that made them do not change the rest of the game); player0's choice of this round, which
     * player1 has not seen, is not in it.
     */
    stateKey: (state, player) => `player${player}|round ${state.round}|score ${state.scores[player]}|opponent ${state.scores[1 - player]}`,
    observation: (state, player) =>
      `${state.transcript.render(player)}\n[GAME] Round ${state.round} of ${options.rounds}: make your decision.\nYour available actions are: [Cooperate], [Defect]`,
    legalActions: () => ['[Cooperate]', '[Defect]'],
    play(state, move) {
      const choice: Choice = move === '[Cooperate]' ? 'cooperate' : 'defect'
      if (state.player === 0) {
        state.pending = choice
        state.player = 1
        return { kind: 'continue' }
      }
      const choices: [Choice, Choice] = [state.pending!, choice]
      const gained: [number, number] = [payoff(choices[0], choices[1]), payoff(choices[1], choices[0])]
      state.scores[0] += gained[0]
      state.scores[1] += gained[1]
      state.transcript.game(
        `Round ${state.round} Results:\n${describe(choices)}\n` +
          `Player 0 scored ${gained[0]}, total: ${state.scores[0]}\nPlayer 1 scored ${gained[1]}, total: ${state.scores[1]}`,
      )
      state.pending = undefined
      state.player = 0
      if (state.round === options.rounds) {
        const rewards = winLossRewards(state.scores[0], state.scores[1])
        const reason =
          rewards[0] === 0
            ? `Game ended in a draw. Both players scored ${state.scores[0]} points.`
            : `Player ${rewards[0] > 0 ? 0 : 1} won with ${Math.max(...state.scores)} points vs ${Math.min(...state.scores)} points`
        return { kind: 'end', rewards, reason }
      }
      state.round++
      return { kind: 'continue' }
    },
  }
}

/**
 * Iterated Prisoner's Dilemma (`iterated-prisoners-dilemma-v0`): `rounds` rounds (default 10) of
 * `[Cooperate]` / `[Defect]`, payoffs 3/5/0/1 by default. Choices are simultaneous: player0 chooses,
 * then player1 chooses without seeing it, then both see the round's result. The higher total wins
 * (+1/−1), equal totals draw.
 */
export function createIteratedPrisonersDilemma(options: IteratedPrisonersDilemmaOptions = {}): EnvironmentV1 {
  const parsed = parseArgument(iteratedPrisonersDilemmaOptionsSchema, options, 'options')
  return createTwoPlayerEnvironment(dilemmaRules(parsed), parsed)
}

/** What an Iterated Prisoner's Dilemma observation shows the player to act (`parseIteratedPrisonersDilemmaObservation`). */
export interface IteratedPrisonersDilemmaObservation {
  player: PlayerIndex
  /** The round to play, from 1, and the game's number of rounds. */
  round: number
  rounds: number
  /** The choices of each finished round, player0's first: `'CD'` is player0 cooperated, player1 defected. */
  results: ('CC' | 'CD' | 'DC' | 'DD')[]
}

/**
 * Reads the player, the round and the finished rounds' choices back from an Iterated Prisoner's Dilemma observation:
 * the game's own parser of its own text (for prompts that show it tersely). Throws a `LudicError` on other text.
 */
export function parseIteratedPrisonersDilemmaObservation(observation: string): IteratedPrisonersDilemmaObservation {
  const player = /You are Player ([01])/.exec(observation)?.[1]
  const round = /Round (\d+) of (\d+): make your decision/.exec(observation)
  if (player === undefined || round === null) {
    throw new LudicError("Iterated Prisoner's Dilemma: cannot read the player and the round from the observation")
  }
  const results = [...observation.matchAll(/Round \d+ Results:\n([^\n]*)/g)].map(([, result]) =>
    result === 'Both players cooperated' ? 'CC' : result === 'Both players defected' ? 'DD' : result!.startsWith('Player 0 cooperated') ? 'CD' : 'DC',
  ) as IteratedPrisonersDilemmaObservation['results']
  return { player: Number(player) as PlayerIndex, round: Number(round[1]), rounds: Number(round[2]), results }
}
