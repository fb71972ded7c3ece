/**
 * What each rollout worker of the asynchronous mode plays (`--async-workers`): the same game, tokenizer, prompt
 * and chat template as the trainer. The trainer names this module in `asyncRollout.setupModule`; every worker
 * thread imports it and calls `createRolloutSetup` with the data below.
 */
import { createKuhnPoker } from '@ludic/games'
import type { RlRolloutSetup } from '@ludic/trainer'
import { chatTemplate, kuhnOptions, promptOf, trainKuhnTokenizer } from './kuhn-setup.js'

export interface KuhnRolloutData {
  vocabSize: number
  invalidPenalty: number
}

export function createRolloutSetup(data: KuhnRolloutData): RlRolloutSetup {
  return {
    environments: [() => createKuhnPoker({ ...kuhnOptions, invalidPenalty: data.invalidPenalty })],
    tokenizer: trainKuhnTokenizer(data.vocabSize),
    prompt: (view) => promptOf(view),
    chatTemplate,
  }
}
