import { InvalidArgumentError, turnContextOf, type EnvironmentV1, type PolicyV1 } from '@ludic/core'
import { renderGamePrompt, type GamePromptName } from './game-prompts.js'

export interface PlayEpisodeOptions {
  /** Seed of `environment.reset`. */
  seed: number
  /** The game prompt observations are shown in (`gamePrompts`). Default: `'terse'`. */
  prompt?: GamePromptName
  /** `maxTokens` of each request. Default: 256. */
  maxTokens?: number
}

export interface EpisodeResult {
  /** Total reward per role. */
  rewards: Record<string, number>
  /** Actions played. */
  turns: number
  truncated: boolean
  /** The episode ended on an invalid action. */
  invalidAction: boolean
  /** Why it ended, in words. */
  reason: string
  /** The completions' texts, in order, with the role that played each. */
  actions: { role: string; text: string }[]
}

/**
 * Plays one episode, one request at a time: each turn the acting role's policy gets the observation as a
 * prompt and its completion's text is the action. A plain loop for evaluating scripted opponents and
 * examples; `@ludic/rollout` batches across episodes and records trajectories.
 */
export async function playEpisode(
  environment: EnvironmentV1,
  policies: Readonly<Record<string, PolicyV1>>,
  options: PlayEpisodeOptions,
): Promise<EpisodeResult> {
  for (const role of environment.roles) {
    if (policies[role] === undefined)
      throw new InvalidArgumentError({ argument: 'policies', value: Object.keys(policies), message: `has no policy for role '${role}'` })
  }
  const rewards: Record<string, number> = Object.fromEntries(environment.roles.map((role) => [role, 0]))
  const actions: EpisodeResult['actions'] = []
  let view = environment.reset(options.seed)
  for (;;) {
    const [completion] = await policies[view.role]!.generate([
      { messages: renderGamePrompt(view, options.prompt ?? 'terse'), maxTokens: options.maxTokens ?? 256, turn: turnContextOf(environment.id, view) },
    ])
    const text = completion?.text ?? ''
    actions.push({ role: view.role, text })
    const outcome = environment.step(text)
    for (const [role, reward] of Object.entries(outcome.rewards)) rewards[role] = (rewards[role] ?? 0) + reward
    if (outcome.done || outcome.truncated || outcome.next === undefined) {
      return {
        rewards,
        turns: actions.length,
        truncated: outcome.truncated,
        invalidAction: outcome.info.invalidAction ?? false,
        reason: outcome.info.reason ?? '',
        actions,
      }
    }
    view = outcome.next
  }
}
