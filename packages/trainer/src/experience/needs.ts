import { InvalidArgumentError, LudicError, type AdvantageEstimatorV1, type AdvantageNeed, type Sample } from '@ludic/core'

/** What a trainer can give its estimator beyond rewards and groups. */
export interface ProvidedNeeds {
  /** A critic is configured (its values). */
  values: boolean
  /** The rollout source plays greedy baseline episodes. */
  baselineRewards: boolean
  /** Every environment gives a state key with each turn (undefined: cannot be known before a rollout). */
  stateKeys: boolean | undefined
  /** Every sample's role and environment (always: the experience carries them). */
  roles: true
  environmentIds: true
  /**
   * Every sample's opponents (always: from its trajectory's `policyIds`, else its turns' policy ids; '' for a
   * trajectory that records neither, e.g. from a rollout source of one's own).
   */
  opponentIds: true
}

const explanations: Record<AdvantageNeed, string> = {
  values: "the critic's values V(s_t): set config.critic (a value head on the policy's trunk, or a separate value model)",
  baselineRewards:
    'the reward of a greedy episode of each group (its baseline): the rollout source must play them (the synchronous source does; asynchronous workers and generation servers do not yet)',
  stateKeys: 'a key of the state each turn acted on: every environment must give one with each turn (TurnView.stateKey)',
  roles: 'the role of each sample',
  environmentIds: 'the environment of each sample',
  opponentIds: 'the opponents of each sample',
}

/**
 * Refuses an estimator whose needs (`requires`) the trainer cannot meet, when the trainer is built: an
 * `InvalidArgumentError` on `config.advantage` naming the estimator and what is missing, instead of a failure after the
 * first rollout. A need that cannot be known before a rollout (state keys from environments played elsewhere) is
 * checked on the first batch (`checkBatchNeeds`).
 */
export function checkEstimatorNeeds(estimator: AdvantageEstimatorV1, provided: ProvidedNeeds): void {
  const missing = (estimator.requires ?? []).filter((need) => provided[need] === false)
  if (missing.length === 0) return
  throw new InvalidArgumentError({
    argument: 'config.advantage',
    value: estimator.name,
    message: `needs ${missing.map((need) => explanations[need]).join('; and ')}`,
  })
}

/** The needs a batch must meet that could not be checked before it was played (state keys from elsewhere). */
export function checkBatchNeeds(estimator: AdvantageEstimatorV1, samples: readonly Sample[]): void {
  if (!(estimator.requires ?? []).includes('stateKeys')) return
  const without = samples.findIndex((sample) => sample.stateKey === undefined)
  if (without >= 0) throw new LudicError(`the '${estimator.name}' estimator needs ${explanations.stateKeys}; sample ${without} of this batch has none`)
}

/**
 * What a trainer provides, as `ProvidedNeeds`: its critic, its rollout source's greedy baselines
 * (`RolloutSource.greedyReturns`); `stateKeys` is asked only when the estimator needs them (it may make environments
 * to find out).
 */
export function providedNeeds(
  estimator: AdvantageEstimatorV1,
  options: { critic: boolean; greedyBaselines: boolean; stateKeys: () => boolean | undefined },
): ProvidedNeeds {
  const stateKeys = (estimator.requires ?? []).includes('stateKeys') ? options.stateKeys() : undefined
  return { values: options.critic, baselineRewards: options.greedyBaselines, stateKeys, roles: true, environmentIds: true, opponentIds: true }
}
