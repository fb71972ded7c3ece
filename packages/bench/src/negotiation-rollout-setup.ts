/**
 * What the `disaggregated` suite's collection thread plays (`dist/negotiation-rollout-setup.js`): the same Simple
 * Negotiation games, tokenizer and prompt as the trainer's config. Configuration B names this module in
 * `createDisaggregatedRolloutSource`'s `setupModule`; the thread imports it and calls `createRolloutSetup` with the
 * workload.
 */
import { createGame } from '@ludic/games'
import type { RlRolloutSetup } from '@ludic/trainer'
import { negotiationGame, negotiationOptions, negotiationPrompt, negotiationTokenizer, type NegotiationWorkload } from './disaggregated/negotiation-workload.js'

export function createRolloutSetup(workload: NegotiationWorkload): RlRolloutSetup {
  return {
    environments: [() => createGame(negotiationGame, negotiationOptions(workload))],
    tokenizer: negotiationTokenizer(workload),
    prompt: negotiationPrompt,
  }
}
