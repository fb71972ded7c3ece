/**
 * What each rollout worker of the `collection` suite's asynchronous mode plays (`dist/selfplay-rollout-setup.js`):
 * the same Kuhn Poker, tokenizer, prompt and chat template as the trainer. The trainer names this module in
 * `asyncRollout.setupModule`; every worker thread imports it and calls `createRolloutSetup` with the data.
 */
import { createGame } from '@ludic/games'
import type { RlRolloutSetup } from '@ludic/trainer'
import { gameChatTemplate, gameOptionsFor, kuhnTokenizer, tersePrompt } from './selfplay/game-selfplay.js'

export interface KuhnRolloutData {
  vocabSize: number
  invalidPenalty: number
}

export function createRolloutSetup(data: KuhnRolloutData): RlRolloutSetup {
  return {
    environments: [() => createGame('kuhn-poker-v1', gameOptionsFor('kuhn-poker-v1', { invalidPenalty: data.invalidPenalty }))],
    tokenizer: kuhnTokenizer(data.vocabSize),
    prompt: tersePrompt,
    chatTemplate: gameChatTemplate,
  }
}
