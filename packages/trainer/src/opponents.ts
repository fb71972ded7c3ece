import { createRandom, deriveSeed, InvalidArgumentError, type PolicyV1, type Random } from '@ludic/core'
import type { PolicyContext } from '@ludic/rollout'

/** A policy that plays one seat in a share of the episodes. */
export interface Opponent {
  /**
   * A fixed policy, or a draw among several (the league's snapshot pool), made with the episode's generator after
   * the share and the seat were drawn from it.
   */
  policy: PolicyV1 | ((random: Random) => PolicyV1)
  /** Fraction of the episodes it plays in, in (0, 1]. */
  share: number
  /** The roles it plays, weighed (a role not named: never). Default: every role alike. */
  seats?: Readonly<Record<string, number>> | undefined
}

/**
 * Self-play with fixed opponents in a share of the episodes (league training's population): per episode a
 * draw from (seed, step, episode) picks an opponent or none, and which role it plays (weighed by its `seats`, if
 * given); every other role is `self`'s. The choice depends only on those, so a step's episodes are the same at any
 * concurrency.
 */
export function withOpponents(self: PolicyV1, opponents: readonly Opponent[], seed: number, stepIndex: number): (context: PolicyContext) => PolicyV1 {
  return ({ role, roles, episodeIndex }) => {
    if (opponents.length === 0) return self
    const draw = createRandom(deriveSeed('ludic.opponents', seed, stepIndex, episodeIndex))
    let u = draw.nextFloat()
    const seat = roles[draw.nextInt(roles.length)]
    for (const opponent of opponents) {
      if (u < opponent.share) {
        if (role !== (opponent.seats === undefined ? seat : weighedSeat(opponent.seats, roles, draw))) return self
        return typeof opponent.policy === 'function' ? opponent.policy(draw) : opponent.policy
      }
      u -= opponent.share
    }
    return self
  }
}

/** A role drawn by `seats`' weights (a role not named weighs 0), with the episode's generator after the seat's draw. */
function weighedSeat(seats: Readonly<Record<string, number>>, roles: readonly string[], draw: Random): string {
  const weights = roles.map((role) => (Object.hasOwn(seats, role) ? seats[role]! : 0))
  if (!weights.some((weight) => weight > 0))
    throw new InvalidArgumentError({ argument: 'opponent.seats', value: seats, message: `weighs none of the episode's roles (${roles.join(', ')}) above 0` })
  return roles[draw.sampleIndex(weights)]!
}

/**
 * The policy of each seat: a role in `rolePolicies` is always played by its policy (a user simulator); the
 * others by `self`, with `opponents` in a share of the episodes (drawn among those roles only).
 */
export function seatPolicies(
  self: PolicyV1,
  options: { opponents?: readonly Opponent[] | undefined; rolePolicies?: Readonly<Record<string, PolicyV1>> | undefined; seed: number; stepIndex: number },
): PolicyV1 | ((context: PolicyContext) => PolicyV1) {
  const { opponents, rolePolicies, seed, stepIndex } = options
  if (opponents === undefined && rolePolicies === undefined) return self
  const drawn = withOpponents(self, opponents ?? [], seed, stepIndex)
  return (context) => {
    const fixed = rolePolicies !== undefined && Object.hasOwn(rolePolicies, context.role) ? rolePolicies[context.role] : undefined
    if (fixed !== undefined) return fixed
    return drawn({ ...context, roles: rolePolicies === undefined ? context.roles : context.roles.filter((role) => !Object.hasOwn(rolePolicies, role)) })
  }
}
