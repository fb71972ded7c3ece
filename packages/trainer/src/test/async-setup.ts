/** The rollout setup of the asynchronous-mode and collection-thread tests: loaded in each thread (through tsx). */
import { createByteTokenizer } from '@ludic/core/test'
import type { RlRolloutSetup } from '../rollout-worker.js'
import { createPickEnvironment } from './support.js'

/** `environmentId` renames the game, so that a test can tell the episodes this setup played from the trainer's own. */
export function createRolloutSetup(data: { roles: string[]; fail?: boolean; environmentId?: string; stateKeys?: boolean }): RlRolloutSetup {
  if (data.fail === true) throw new Error('setup refused for this test')
  const { environmentId } = data
  return {
    environments: [
      () => {
        const environment = createPickEnvironment(data.roles, { stateKeys: data.stateKeys === true })
        return environmentId === undefined ? environment : { ...environment, id: environmentId }
      },
    ],
    tokenizer: createByteTokenizer(),
  }
}
