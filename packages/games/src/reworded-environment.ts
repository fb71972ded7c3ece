import type { EnvironmentV1, StepOutcome, TurnView } from '@ludic/core'

/**
 * A rewording of an observation that keeps no phrase of it as it was: upper-cased, lines in reverse order, "actions"
 * and "moves" renamed, a prefix added. Players that read the wording (a regular expression on "Available actions")
 * cannot play it; players that see the game (`GenerationRequest.turn`) play it as before.
 */
export function scrambleWording(observation: string): string {
  const lines = observation
    .toUpperCase()
    .replace(/ACTIONS|MOVES/g, 'OPTIONS')
    .split('\n')
    .reverse()
  return `~~ REWORDED FOR THIS TABLE ~~\n${lines.join('\n')}`
}

/**
 * The environment with every observation rewritten by `reword` (default `scrambleWording`) and nothing else changed:
 * the same roles, rewards, legal actions, state keys and `state`, the same moves accepted. Use it to check that
 * players and evaluations depend on the game, not on its wording (the games' rewording test).
 */
export function rewordObservations(environment: EnvironmentV1, reword: (observation: string) => string = scrambleWording): EnvironmentV1 {
  const rewordView = (view: TurnView): TurnView => ({ ...view, observation: reword(view.observation) })
  return {
    specificationVersion: 'v1',
    get id() {
      return environment.id
    },
    get roles() {
      return environment.roles
    },
    reset: (seed) => rewordView(environment.reset(seed)),
    step(action): StepOutcome {
      const outcome = environment.step(action)
      return outcome.next === undefined ? outcome : { ...outcome, next: rewordView(outcome.next) }
    },
  }
}
