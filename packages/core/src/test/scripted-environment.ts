import type { StepOutcome, TurnView } from '../data.js'
import { InvalidArgumentError, LudicError } from '../errors.js'
import type { EnvironmentV1 } from '../interfaces.js'

export interface ScriptedEnvironmentOptions {
  id?: string
  roles?: readonly string[]
  /** The turns, in order. An observation may contain `{seed}`, replaced by the reset seed. */
  turns: readonly TurnView[]
  /** Rewards per role when the last turn is played. Default: 0 for every role. */
  finalRewards?: Readonly<Record<string, number>>
  /** Reward of a role that plays an illegal action (the episode ends). Default: -1. */
  invalidPenalty?: number
}

export interface ScriptedEnvironment extends EnvironmentV1 {
  /** Actions received since the last reset. */
  readonly actions: readonly string[]
  /** The seed of the last reset. */
  readonly seed: number | undefined
}

/**
 * An environment for tests that plays a fixed sequence of turns. An action outside a turn's
 * `legalActions` ends the episode with `invalidPenalty` for the acting role (an outcome, not an error).
 */
export function createScriptedEnvironment(options: ScriptedEnvironmentOptions): ScriptedEnvironment {
  const roles = options.roles ?? [...new Set(options.turns.map((turn) => turn.role))]
  if (options.turns.length === 0) {
    throw new InvalidArgumentError({ argument: 'options.turns', value: options.turns, message: 'needs at least one turn' })
  }
  for (const [index, turn] of options.turns.entries()) {
    if (!roles.includes(turn.role)) {
      throw new InvalidArgumentError({ argument: `options.turns[${index}].role`, value: turn.role, message: `is not one of the roles ${roles.join(', ')}` })
    }
  }
  const zeroRewards = Object.fromEntries(roles.map((role) => [role, 0]))
  const actions: string[] = []
  let seed: number | undefined
  let position = -1
  const view = (index: number): TurnView => {
    const turn = options.turns[index]!
    return { ...turn, observation: turn.observation.replaceAll('{seed}', String(seed)) }
  }
  return {
    specificationVersion: 'v1',
    id: options.id ?? 'scripted-v1',
    roles,
    get actions() {
      return actions
    },
    get seed() {
      return seed
    },
    reset(newSeed: number): TurnView {
      seed = newSeed
      actions.length = 0
      position = 0
      return view(0)
    },
    step(action: string): StepOutcome {
      const turn = options.turns[position]
      if (position < 0 || turn === undefined)
        throw new LudicError(`Environment '${options.id ?? 'scripted-v1'}': step() before reset() or after the episode ended`)
      actions.push(action)
      if (turn.legalActions !== undefined && !turn.legalActions.includes(action)) {
        position = -1
        return {
          done: true,
          truncated: false,
          rewards: { ...zeroRewards, [turn.role]: options.invalidPenalty ?? -1 },
          info: { invalidAction: true, reason: `${JSON.stringify(action)} is not one of ${turn.legalActions.join(', ')}` },
        }
      }
      position++
      if (position >= options.turns.length) {
        position = -1
        return { done: true, truncated: false, rewards: { ...zeroRewards, ...options.finalRewards }, info: {} }
      }
      return { done: false, truncated: false, next: view(position), rewards: { ...zeroRewards }, info: {} }
    },
  }
}
