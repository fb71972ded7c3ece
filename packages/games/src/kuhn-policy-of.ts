import { InvalidArgumentError, type ChatMessage } from '@ludic/core'
import { kuhnInformationStates } from './kuhn-information-states.js'
import type { KuhnPokerOptions } from './kuhn-poker.js'
import { parseKuhnPolicy, type KuhnPolicy } from './kuhn-policy.js'
import { renderGamePrompt, type GamePromptName } from './game-prompts.js'

/**
 * Scores each action string as the continuation of a prompt: one log-score per action (the sum of its
 * tokens' log-probabilities under the model), in order. The prompt is chat messages, or the bare
 * observation when `prompt: 'observation'`.
 */
export type KuhnActionScorer = (prompt: string | readonly ChatMessage[], actions: readonly string[]) => Promise<readonly number[]> | readonly number[]

export interface KuhnPolicyOfOptions {
  /** How the observation becomes the prompt: a game prompt (`gamePrompts`), or `'observation'` for the bare text. Default: `'spiral'`. */
  prompt?: GamePromptName | 'observation'
  /** Options of the environment whose observations are scored (its rounds show in the text). Default: `createKuhnPoker`'s. */
  environment?: KuhnPokerOptions
}

/**
 * The tabular policy of a model, exactly: at each of the 12 information states, the observation the
 * environment shows is scored with each legal action string (`'[check]'`, `'[bet]'` or `'[fold]'`,
 * `'[call]'`), and the log-scores are normalised over the legal actions by a softmax. No sampling, so
 * `kuhnExploitability(await kuhnPolicyOf(scorer))` measures the model without noise.
 */
export async function kuhnPolicyOf(scorer: KuhnActionScorer, options: KuhnPolicyOfOptions = {}): Promise<KuhnPolicy> {
  const promptName = options.prompt ?? 'spiral'
  const policy: Record<string, number> = {}
  for (const state of kuhnInformationStates(options.environment)) {
    const prompt = promptName === 'observation' ? state.observation : renderGamePrompt(state.observation, promptName)
    const scores = await scorer(prompt, state.legalActions)
    if (scores.length !== state.legalActions.length || scores.some((score) => Number.isNaN(score) || score === Infinity)) {
      throw new InvalidArgumentError({
        argument: `scores at information state ${state.name}`,
        value: scores,
        message: `must be ${state.legalActions.length} log-scores (finite or −Infinity), one per action of ${state.legalActions.join(', ')}`,
      })
    }
    const [passive, aggressive] = scores as [number, number]
    if (passive === -Infinity && aggressive === -Infinity) {
      throw new InvalidArgumentError({ argument: `scores at information state ${state.name}`, value: scores, message: 'give both actions probability 0' })
    }
    // softmax over two actions: P(aggressive) = 1 / (1 + exp(passive − aggressive)), stable both ways.
    policy[state.name] = 1 / (1 + Math.exp(passive - aggressive))
  }
  return parseKuhnPolicy(policy, 'policy of the scorer')
}
