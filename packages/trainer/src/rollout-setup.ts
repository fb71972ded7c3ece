/**
 * The user's rollout setup module, as the threads that play episodes load it (the asynchronous mode's rollout
 * workers, the disaggregated source's collection thread): no TensorFlow.js here, so a thread that only talks to
 * servers does not load it.
 */
import { isTokenizer, type ChatMessage, type EnvironmentV1, type TokenizerV1 } from '@ludic/core'
import type { PromptTemplate } from '@ludic/rollout'
import { exportedFunction, importModule } from '@ludic/rollout/worker'

/** What the setup module gives every rollout worker: the same environments, tokenizer and prompts as the trainer. */
export interface RlRolloutSetup {
  environments: readonly (() => EnvironmentV1)[]
  tokenizer: TokenizerV1
  /** The prompt of a turn (rollout's). Default `'{observation}'`. */
  prompt?: PromptTemplate
  /** How messages become prompt text. Default: the tokenizer's chat template. */
  chatTemplate?: string | ((messages: readonly ChatMessage[]) => string)
}

/** A module exporting `createRolloutSetup(data)` (or a default function) that returns an `RlRolloutSetup`. */
export type CreateRlRolloutSetup = (data: unknown) => RlRolloutSetup | Promise<RlRolloutSetup>

export async function loadRolloutSetup(module: string, data: unknown): Promise<RlRolloutSetup> {
  const factory = exportedFunction<CreateRlRolloutSetup>(await importModule(module), 'createRolloutSetup', module)
  const setup = (await factory(data)) as Partial<RlRolloutSetup> | undefined
  if (setup === undefined || setup === null || !Array.isArray(setup.environments) || !isTokenizer(setup.tokenizer)) {
    throw new TypeError(`createRolloutSetup of ${module} must return { environments, tokenizer, prompt?, chatTemplate? }`)
  }
  return setup as RlRolloutSetup
}
