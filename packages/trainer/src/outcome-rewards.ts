import type { AdvantageBatch, Sample, Trajectory } from '@ludic/core'
import { advantageBatchOf, buildExperience } from './experience/experience.js'

/**
 * The advantage batch of a rollout with outcome rewards: each role's episode return (the environment's
 * rewards summed over the episode) sits on the last response token of that role's last turn; every other
 * token gets 0. Roles, environments, trajectories and turn indices ride along for multi-agent and
 * multi-turn estimators (RAE keeps one baseline per environment and role). The estimators' view of the
 * trainer's experience (`buildExperience`), for code of one's own.
 */
export function outcomeAdvantageBatch(trajectories: readonly Trajectory[], samples: readonly Sample[]): AdvantageBatch {
  return advantageBatchOf(buildExperience(trajectories, samples, { origin: { offPolicy: false } }))
}
