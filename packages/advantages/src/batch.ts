import { advantageBatchSchema, formatPath, InvalidArgumentError, type AdvantageBatch, type AdvantageResult } from '@ludic/core'

/**
 * Parses a batch at an estimator's boundary with core's `advantageBatchSchema`, plus the rules every
 * estimator shares (at least one sample). Errors name the field, the sample and the token, e.g.
 * `batch.tokenRewards[3][7]`.
 */
export function parseAdvantageBatch(batch: unknown): AdvantageBatch {
  const result = advantageBatchSchema.safeParse(batch)
  if (!result.success) {
    const issue = result.error.issues[0]
    const path = (issue?.path ?? []).filter((key): key is string | number => typeof key !== 'symbol')
    throw new InvalidArgumentError({
      argument: formatPath(['batch', ...path]),
      value: valueAt(batch, path),
      message: issue?.message ?? 'invalid batch',
      cause: result.error,
    })
  }
  if (result.data.tokenRewards.length === 0) {
    throw new InvalidArgumentError({ argument: 'batch.tokenRewards', value: result.data.tokenRewards, message: 'must hold at least one sample' })
  }
  return result.data
}

function valueAt(value: unknown, path: readonly (string | number)[]): unknown {
  let current = value
  for (const key of path) {
    if (current === null || typeof current !== 'object') return undefined
    current = (current as Record<string | number, unknown>)[key]
  }
  return current
}

/** Returns a field an estimator cannot do without, or throws naming it. */
export function requireField<Field extends keyof AdvantageBatch>(
  batch: AdvantageBatch,
  field: Field,
  estimator: string,
  why: string,
): NonNullable<AdvantageBatch[Field]> {
  const value = batch[field]
  if (value === undefined || value === null) {
    throw new InvalidArgumentError({ argument: `batch.${field}`, value, message: `is required by the '${estimator}' estimator: ${why}` })
  }
  return value as NonNullable<AdvantageBatch[Field]>
}

/**
 * Per sample, the sum of its token rewards over ALL tokens, masked ones included: verl's
 * `token_level_rewards.sum(-1)`, the outcome score of outcome estimators.
 */
export function sampleScores(batch: AdvantageBatch): Float64Array {
  return Float64Array.from(batch.tokenRewards, (rewards) => {
    let sum = 0
    for (let token = 0; token < rewards.length; token++) sum += rewards[token]!
    return sum
  })
}

/** Per sample, its number of valid tokens (verl's `response_mask.sum(-1)`). */
export function validTokenCounts(batch: AdvantageBatch): Float64Array {
  return Float64Array.from(batch.tokenRewards, (rewards, sample) => {
    const mask = batch.tokenMasks?.[sample]
    if (mask === undefined) return rewards.length
    let count = 0
    for (let token = 0; token < mask.length; token++) count += mask[token]!
    return count
  })
}

/** The sample indices of each key, in batch order (a `Map` keeps the keys in order of first appearance). */
export function groupMembers(keys: readonly string[]): Map<string, number[]> {
  const members = new Map<string, number[]>()
  keys.forEach((key, sample) => {
    const group = members.get(key)
    if (group === undefined) members.set(key, [sample])
    else group.push(sample)
  })
  return members
}

/**
 * Puts one advantage per sample on each of its valid tokens (0 on masked tokens: verl's
 * `a_i * response_mask`); `returns` equals `advantages`, as in verl's critic-free estimators.
 */
export function broadcastToTokens(batch: AdvantageBatch, perSample: Float64Array): AdvantageResult {
  const advantages = batch.tokenRewards.map((rewards, sample) => {
    const row = new Float32Array(rewards.length)
    const mask = batch.tokenMasks?.[sample]
    if (mask === undefined) row.fill(perSample[sample]!)
    else for (let token = 0; token < row.length; token++) row[token] = mask[token] === 1 ? perSample[sample]! : 0
    return row
  })
  return { advantages, returns: advantages.map((row) => row.slice()) }
}

/** Rounds float64 rows to the float32 rows estimators return. */
export function toFloat32(rows: readonly Float64Array[]): Float32Array[] {
  return rows.map((row) => new Float32Array(row))
}
