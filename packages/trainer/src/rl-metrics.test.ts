import type { Sample } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { offPolicyMetrics } from './rl-metrics.js'

const sample = (tokens: number, versions: { policyVersion?: number; tokenPolicyVersions?: number[] } = {}): Sample => ({
  trajectoryId: 't',
  turnIndex: 0,
  role: 'a',
  environmentId: 'e',
  groupId: 'g',
  promptTokenIds: Int32Array.of(1),
  responseTokenIds: new Int32Array(tokens),
  rolloutLogprobs: new Float32Array(tokens),
  invalid: false,
  ...(versions.policyVersion === undefined ? {} : { policyVersion: versions.policyVersion }),
  ...(versions.tokenPolicyVersions === undefined ? {} : { tokenPolicyVersions: Int32Array.from(versions.tokenPolicyVersions) }),
})

describe('offPolicyMetrics', () => {
  const importance = { mean: 1, truncated: 0 }

  it("gives each token's staleness by the version that sampled it (partial rollouts), its mean and max, beside the batch's", () => {
    // Step 5: a partial rollout's sample (versions 2, 2, 4, 4), one of version 3 without per-token versions.
    const samples = [sample(4, { policyVersion: 2, tokenPolicyVersions: [2, 2, 4, 4] }), sample(2, { policyVersion: 3 })]
    const metrics = offPolicyMetrics(5, 2, 1, importance, samples)
    expect(metrics.staleness).toBe(3)
    expect(metrics.tokenStalenessMean).toBeCloseTo((3 + 3 + 1 + 1 + 2 + 2) / 6, 12)
    expect(metrics.tokenStalenessMax).toBe(3)
    expect(metrics.batchesDropped).toBe(1)
  })

  it("falls back to the batch's version for samples without one, and to the batch's staleness without tokens", () => {
    expect(offPolicyMetrics(4, 3, 0, importance, [sample(3)])).toMatchObject({ staleness: 1, tokenStalenessMean: 1, tokenStalenessMax: 1 })
    expect(offPolicyMetrics(4, 1, 0, importance, [])).toMatchObject({ staleness: 3, tokenStalenessMean: 3, tokenStalenessMax: 3 })
  })
})
