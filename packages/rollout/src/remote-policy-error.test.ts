import { LudicError } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { RemotePolicyError } from './remote-policy-error.js'

describe('RemotePolicyError', () => {
  it('says what failed, where, and after how many attempts; keeps the cause', () => {
    const cause = new Error('sdk error')
    const http = new RemotePolicyError({
      policyId: 'p',
      url: 'http://127.0.0.1:1/v1/chat/completions',
      kind: 'http',
      status: 400,
      param: 'temperature',
      code: 'invalid_value',
      attempts: 1,
      retryable: false,
      detail: 'too hot',
      cause,
    })
    expect(http.message).toBe("Policy 'p': POST http://127.0.0.1:1/v1/chat/completions HTTP 400 after 1 attempt (param 'temperature'): too hot")
    expect(http.cause).toBe(cause)
    expect(new RemotePolicyError({ policyId: 'p', url: 'u', kind: 'timeout', attempts: 3, retryable: true, detail: 'late' }).message).toBe(
      "Policy 'p': POST u timed out after 3 attempts: late",
    )
    expect(new RemotePolicyError({ policyId: 'p', url: 'u', kind: 'connection', attempts: 2, retryable: true, detail: 'refused' }).message).toMatch(
      /connection failed after 2 attempts/,
    )
    expect(RemotePolicyError.isInstance(http)).toBe(true)
    expect(LudicError.isInstance(http)).toBe(true)
    expect(RemotePolicyError.isInstance(new LudicError('x'))).toBe(false)
  })
})
