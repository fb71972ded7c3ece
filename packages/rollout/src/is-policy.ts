import type { PolicyV1 } from '@ludic/core'

/** Whether a value looks like a `PolicyV1` (specificationVersion 'v1', a string id, a generate function). */
export function isPolicy(value: unknown): value is PolicyV1 {
  if (typeof value !== 'object' || value === null) return false
  const candidate = value as Partial<PolicyV1>
  return candidate.specificationVersion === 'v1' && typeof candidate.id === 'string' && typeof candidate.generate === 'function'
}
