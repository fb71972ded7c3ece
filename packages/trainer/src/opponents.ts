import { createRandom, deriveSeed, type PolicyV1, type Random } from '@ludic/core'
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
}

/**
 * Self-play with fixed opponents in a share of the episodes (league training's population): per episode a
 * draw from (seed, step, episode) picks an opponent or none, and which role it plays; every other role is
 * `self`'s. The choice depends only on those, so a step's episodes are the same at any concurrency.
 */
export function withOpponents(self: PolicyV1, opponents: readonly Opponent[], seed: number, stepIndex: number): (context: PolicyContext) => PolicyV1 {
  return ({ role, roles, episodeIndex }) => {
    if (opponents.length === 0) return self
    const draw = createRandom(deriveSeed('ludic.opponents', seed, stepIndex, episodeIndex))
    let u = draw.nextFloat()
    const seat = roles[draw.nextInt(roles.length)]
    for (const opponent of opponents) {
      if (u < opponent.share) {
        if (role !== seat) return self
        return typeof opponent.policy === 'function' ? opponent.policy(draw) : opponent.policy
      }
      u -= opponent.share
    }
    return self
  }
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
