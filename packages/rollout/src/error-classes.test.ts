import { checkErrorClasses } from '@ludic/core/test'
import { describe, it } from 'vitest'
import { AsyncCollectorError } from './async-collector-error.js'
import { GenerationBatchError } from './generation-batch-error.js'
import * as rollout from './index.js'
import { RemotePolicyError } from './remote-policy-error.js'
import * as worker from './worker.js'

describe('error classes', () => {
  it("each exported error class's isInstance accepts its own instances and its subclasses' only (core's included)", () => {
    checkErrorClasses([rollout, worker], {
      AsyncCollectorError: () => new AsyncCollectorError({ message: 'example', workerIndex: 0 }),
      GenerationBatchError: () => new GenerationBatchError({ policyId: 'p', completions: [undefined], errors: [new Error('x')] }),
      RemotePolicyError: () =>
        new RemotePolicyError({ policyId: 'p', url: 'http://127.0.0.1/v1', kind: 'timeout', attempts: 1, retryable: true, detail: 'example' }),
    })
  })
})
