import { InvalidArgumentError, LudicError, createRandom, describeValue, type EnvironmentV1, type Random, type StepOutcome, type TurnView } from '@ludic/core'
import { z } from 'zod'
import { extractMove, normalizeMove } from './action.js'

/** 0 for `player0`, 1 for `player1`. */
export type PlayerIndex = 0 | 1

export const playerRoles = ['player0', 'player1'] as const

const finite = (name: string) => z.number().refine(Number.isFinite, `${name} must be a finite number`)

/**
 * Options every game takes. Invalid actions end the episode; the defaults are SPIRAL's training shaping
 * (offender −1.5, opponent +0.5). For evaluation, where an invalid action counts as a loss, use
 * `evaluationInvalidRewards` (−1 / +1).
 */
export const commonOptionsShape = {
  /** Reward of the player whose action is invalid. Default: −1.5 (SPIRAL's training shaping). */
  invalidPenalty: finite('invalidPenalty').default(-1.5),
  /** Reward of the other player when an action is invalid. Default: +0.5 (SPIRAL's training shaping). */
  invalidOpponentReward: finite('invalidOpponentReward').default(0.5),
}

/** `maxTurns`: the episode is truncated (rewards 0/0) after this many actions without ending. */
export function maxTurnsOption(defaultTurns: number) {
  return z.number().int().positive().default(defaultTurns)
}

/** Invalid-action rewards for evaluation: an invalid action is a loss (−1), the opponent wins (+1). */
export const evaluationInvalidRewards = { invalidPenalty: -1, invalidOpponentReward: 1 } as const

export interface CommonOptions {
  invalidPenalty: number
  invalidOpponentReward: number
  maxTurns: number
}

/** What playing a move did. */
export type PlayResult =
  | { readonly kind: 'continue' }
  | { readonly kind: 'end'; readonly rewards: readonly [number, number]; readonly reason: string }
  | { readonly kind: 'invalid'; readonly reason: string }

/**
 * The rules of a two-player, turn-based text game; `createTwoPlayerEnvironment` turns them into an
 * `EnvironmentV1` (extraction, invalid actions, truncation, the step-after-end guard). State is mutable
 * and private to one episode.
 */
export interface TwoPlayerRules<State> {
  readonly id: string
  /** A new episode; every random choice (deals, dice) comes from `random`. */
  start(random: Random): State
  currentPlayer(state: State): PlayerIndex
  observation(state: State, player: PlayerIndex): string
  /**
   * The key of the decision situation of `player`, to act now (`TurnView.stateKey`; `stateKeySchema` of
   * `@ludic/core` states the contract): it names the player, holds only what the player knows that bears on the
   * rest of the game (never the opponent's hidden card or dice), and is equal for the same situation reached by
   * different paths. Leave it out when the game has no small discrete state.
   */
  stateKey?(state: State, player: PlayerIndex): string
  /** The legal actions, bracketed (`'[bet]'`), when they can be listed; actions are matched against them. */
  legalActions?(state: State): readonly string[]
  /**
   * What `player`'s scripted players need beyond the legal actions, as plain JSON data (`TurnView.state`): only what
   * the player may see. Leave it out when the legal actions are enough.
   */
  turnState?(state: State, player: PlayerIndex): Record<string, unknown>
  /** Rewrites an extracted move into the spelling of the legal actions (`'bid 3 4'` → `'Bid: 3, 4'`). */
  canonicalMove?(move: string): string
  /** Why a move that matches no legal action is invalid (for `info.reason`). */
  explainIllegal?(state: State, move: string): string
  /** Plays a move: the matched legal action when `legalActions` exists, else the extracted move text. */
  play(state: State, move: string): PlayResult
}

/** Builds an `EnvironmentV1` from game rules and the common options. */
export function createTwoPlayerEnvironment<State>(rules: TwoPlayerRules<State>, options: CommonOptions): EnvironmentV1 {
  let state: State | undefined
  let over = true
  let turns = 0
  let legal: readonly string[] | undefined
  const zero = () => ({ player0: 0, player1: 0 })
  const rewardsOf = (values: readonly [number, number]) => ({ player0: values[0], player1: values[1] })

  const view = (current: State): TurnView => {
    const player = rules.currentPlayer(current)
    legal = rules.legalActions?.(current)
    const stateKey = rules.stateKey?.(current, player)
    const turnState = rules.turnState?.(current, player)
    const turn: TurnView = {
      role: playerRoles[player],
      observation: rules.observation(current, player),
      ...(stateKey === undefined ? {} : { stateKey }),
      ...(turnState === undefined ? {} : { state: turnState }),
    }
    return legal === undefined ? turn : { ...turn, legalActions: legal }
  }
  const finish = (rewards: StepOutcome['rewards'], info: StepOutcome['info'], truncated = false): StepOutcome => {
    over = true
    return { done: true, truncated, rewards, info }
  }

  return {
    specificationVersion: 'v1',
    id: rules.id,
    roles: playerRoles,
    reset(seed: number): TurnView {
      state = rules.start(createRandom(seed))
      over = false
      turns = 0
      return view(state)
    },
    step(action: string): StepOutcome {
      if (state === undefined) throw new LudicError(`Environment '${rules.id}': step() before reset(seed)`)
      if (over) throw new LudicError(`Environment '${rules.id}': step() after the episode ended; call reset(seed) to start another`)
      if (typeof action !== 'string') throw new InvalidArgumentError({ argument: 'action', value: action, message: 'must be a string' })
      const player = rules.currentPlayer(state)
      const invalid = (reason: string) => {
        const rewards: [number, number] = [0, 0]
        rewards[player] = options.invalidPenalty
        rewards[1 - player] = options.invalidOpponentReward
        return finish(rewardsOf(rewards), { invalidAction: true, reason: `Player ${player} made an invalid action: ${reason}` })
      }

      const extracted = extractMove(action)
      if (extracted === undefined) return invalid('no move found (expected a bracketed move such as [move], or \\boxed{[move]})')
      let move = extracted
      if (legal !== undefined) {
        const wanted = normalizeMove(rules.canonicalMove?.(extracted) ?? extracted)
        const matched = legal.find((candidate) => normalizeMove(candidate) === wanted)
        if (matched === undefined) {
          return invalid(rules.explainIllegal?.(state, extracted) ?? `${describeValue(`[${extracted}]`)} is not one of ${legal.join(', ')}`)
        }
        move = matched
      }

      const result = rules.play(state, move)
      if (result.kind === 'invalid') return invalid(result.reason)
      if (result.kind === 'end') return finish(rewardsOf(result.rewards), { reason: result.reason })
      turns++
      if (turns >= options.maxTurns) return finish(zero(), { reason: `Truncated after ${turns} turns (maxTurns)` }, true)
      return { done: false, truncated: false, next: view(state), rewards: zero(), info: {} }
    },
  }
}

/** ±1 to the player with more, 0/0 on a tie. */
export function winLossRewards(score0: number, score1: number): [number, number] {
  if (score0 > score1) return [1, -1]
  if (score1 > score0) return [-1, 1]
  return [0, 0]
}
