/** The rollout setup of the asynchronous-mode tests: loaded in each worker thread (through tsx). */
import { createByteTokenizer } from '@ludic/core/test'
import type { RlRolloutSetup } from '../rollout-worker.js'
import { createPickEnvironment } from './support.js'

export function createRolloutSetup(data: { roles: string[]; fail?: boolean }): RlRolloutSetup {
  if (data.fail === true) throw new Error('setup refused for this test')
  return { environments: [() => createPickEnvironment(data.roles)], tokenizer: createByteTokenizer() }
}
