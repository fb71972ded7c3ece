import { createRandom, deriveSeed, type PolicyV1 } from '@ludic/core'
import type { PolicyContext } from '@ludic/rollout'

/** A fixed policy that plays one seat in a share of the episodes. */
export interface Opponent {
  policy: PolicyV1
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
    const draw = createRandom(deriveSeed('ludic.opponents', seed, stepIndex, episodeIndex))
    let u = draw.nextFloat()
    const seat = roles[draw.nextInt(roles.length)]
    for (const opponent of opponents) {
      if (u < opponent.share) return role === seat ? opponent.policy : self
      u -= opponent.share
    }
    return self
  }
}
