import { InvalidArgumentError, type AdvantageBatch } from '@ludic/core'
import { groupMembers } from './batch.js'

/** Per sample, the statistics of the group it belongs to. */
export interface GroupStatistics {
  /** Mean of the group's values (`torch.mean`); 0 for a group of one. */
  mean: Float64Array
  /** Unbiased standard deviation (`torch.std`, divides by n − 1); 1 for a group of one. */
  std: Float64Array
  /** Number of samples in the group. */
  size: Uint32Array
}

/**
 * Group means and standard deviations, broadcast back to the samples. A group of one gets mean 0 and
 * std 1, verl's convention (`id2mean = 0`, `id2std = 1`), so its value passes through unchanged.
 */
export function groupStatistics(values: Float64Array, groupKeys: readonly string[]): GroupStatistics {
  const statistics: GroupStatistics = {
    mean: new Float64Array(values.length),
    std: new Float64Array(values.length),
    size: new Uint32Array(values.length),
  }
  for (const members of groupMembers(groupKeys).values()) {
    let mean = 0
    let std = 1
    if (members.length > 1) {
      let sum = 0
      for (const sample of members) sum += values[sample]!
      mean = sum / members.length
      let squares = 0
      for (const sample of members) squares += (values[sample]! - mean) ** 2
      std = Math.sqrt(squares / (members.length - 1))
    }
    for (const sample of members) {
      statistics.mean[sample] = mean
      statistics.std[sample] = std
      statistics.size[sample] = members.length
    }
  }
  return statistics
}

/**
 * verl's `masked_whiten` over every valid token of the batch (longer samples weigh more):
 *   mean = Σ m·x / (Σ m + 1e-8)
 *   var  = Σ m·(x − mean)² / (Σ m + 1e-8) · n / (n − 1)      (unbiased, n = Σ m)
 *   out  = (x − mean) · rsqrt(var + 1e-8)
 * applied to every token, masked ones included (callers re-mask when verl does). Like verl, throws
 * when the batch has fewer than 2 valid tokens.
 */
export function maskedWhiten(rows: readonly Float64Array[], batch: AdvantageBatch): Float64Array[] {
  let count = 0
  let sum = 0
  rows.forEach((row, sample) => {
    const mask = batch.tokenMasks?.[sample]
    for (let token = 0; token < row.length; token++) {
      if (mask === undefined || mask[token] === 1) {
        count += 1
        sum += row[token]!
      }
    }
  })
  if (count < 2) {
    throw new InvalidArgumentError({
      argument: 'batch.tokenRewards',
      value: count,
      message: `whitening needs at least 2 valid tokens in the batch, got ${count} (verl's masked_whiten raises too)`,
    })
  }
  const mean = sum / (count + 1e-8)
  let squares = 0
  rows.forEach((row, sample) => {
    const mask = batch.tokenMasks?.[sample]
    for (let token = 0; token < row.length; token++) if (mask === undefined || mask[token] === 1) squares += (row[token]! - mean) ** 2
  })
  const variance = (squares / (count + 1e-8)) * (count / (count - 1))
  const scale = 1 / Math.sqrt(variance + 1e-8)
  return rows.map((row) => {
    const whitened = new Float64Array(row.length)
    for (let token = 0; token < row.length; token++) whitened[token] = (row[token]! - mean) * scale
    return whitened
  })
}

/** Sets masked tokens to 0 (verl's `* response_mask` after whitening). */
export function zeroMaskedTokens(rows: Float64Array[], batch: AdvantageBatch): Float64Array[] {
  rows.forEach((row, sample) => {
    const mask = batch.tokenMasks?.[sample]
    if (mask !== undefined) for (let token = 0; token < row.length; token++) if (mask[token] !== 1) row[token] = 0
  })
  return rows
}
