import { InvalidArgumentError, type Random } from '@ludic/core'
import { platform } from '../platform.js'

/** How one sequence picks its next token. */
export interface SamplingParameters {
  /** 0 is greedy (argmax, lowest id on ties); otherwise logits are divided by it. */
  temperature: number
  /** Keep only the k most likely tokens; 0 disables. */
  topK: number
  /** Keep the smallest set of most likely tokens whose probability reaches topP; 1 disables. */
  topP: number
  /** Drop tokens whose probability is below minP times the most likely one's; 0 disables. */
  minP: number
}

/** A chosen token and its log-probability under the sampling distribution (`sampleToken`: log softmax(logits / T), no filtering). */
export interface SampledToken {
  token: number
  logprob: number
}

/**
 * Picks the next token from one row of logits (`logits[offset … offset + vocab)`), in transformers'
 * order: temperature, then top-k, top-p and min-p on the tempered distribution, then a draw from what is
 * left with `random.nextFloat()`. The returned `logprob` is the log-probability of the chosen token under the
 * sampling distribution, `log softmax(logits / T)[token]` (T = `temperature`; top-k/top-p/min-p filtering not
 * applied, as verl and TRL compute it in their training forward): what `sequenceLogprobs` recomputes with the
 * same `temperature`, and what policy-gradient ratios need. Greedy decoding (T = 0) records T = 1's,
 * `log softmax(logits)[token]`.
 *
 * `excluded` (token ids) are never chosen: they are left out before the filters (vLLM's `min_tokens` sets their
 * logits to -inf before top-k/top-p/min-p), so greedy takes the best token outside them and top-k counts the others.
 * Like the filters, the exclusion does not change the recorded `logprob` (still the unfiltered softmax's). This is the
 * one place a generation loop masks tokens: `generateRows` passes a row's stop tokens while it has fewer than
 * `minNewTokens` tokens. An exclusion that leaves no token of the row is an `InvalidArgumentError`. Without
 * exclusions the choice is the same, bit for bit, as with an empty set.
 */
export function sampleToken(
  logits: Float32Array,
  offset: number,
  vocab: number,
  parameters: SamplingParameters,
  random: Random,
  excluded?: ReadonlySet<number>,
): SampledToken {
  const exclusion = checkedExclusion(vocab, excluded)
  return sampleWith(logits.subarray(offset, offset + vocab), parameters, parameters.temperature === 0 ? 0 : random.nextFloat(), exclusion)
}

/** One row of `sampleTokens`: `sampleToken`'s arguments. */
export interface SamplingRow {
  offset: number
  parameters: SamplingParameters
  random: Random
  excluded?: ReadonlySet<number> | undefined
}

/**
 * `sampleToken` for each row of `rows` (`logits[row.offset … + vocab)`), the same tokens and log-probabilities bit for
 * bit, and each row's `random` drawn from in the same order. Where the runtime lends a helper thread (Node,
 * `sampling-workers.ts`) and the rows are many, the plain ones (temperature > 0, no top-k, top-p, min-p or
 * exclusion: every weight of the vocabulary computed, one `Math.exp` each) are shared with it — the same function
 * (`drawPlain`) on the same values, so the results do not depend on which thread drew a row.
 */
export function sampleTokens(logits: Float32Array, vocab: number, rows: readonly SamplingRow[]): SampledToken[] {
  // Each row's exclusion checked and uniform drawn, in row order, as `sampleToken` one row after another would (a row
  // whose exclusion leaves nothing throws after the rows before it drew theirs).
  const exclusions: (ReadonlySet<number> | undefined)[] = []
  const uniforms: number[] = []
  for (const row of rows) {
    exclusions.push(checkedExclusion(vocab, row.excluded))
    uniforms.push(row.parameters.temperature === 0 ? 0 : row.random.nextFloat())
  }
  const plain = rows.flatMap((row, index) => (isPlain(row.parameters, vocab, exclusions[index]) ? [index] : []))
  const results: (SampledToken | undefined)[] = new Array(rows.length)
  // The helper takes the second half of the plain rows (at most `samplingHelperFloats` logits: its buffer's bound);
  // this thread draws the others meanwhile.
  const taken = Math.min(Math.floor(plain.length / 2), Math.floor(samplingHelperFloats / vocab))
  const helper = plain.length >= samplingHelperRows && plain.length * vocab >= samplingHelperWork && taken > 0 ? platform().samplingHelper?.() : undefined
  if (helper !== undefined) {
    const shared = plain.slice(plain.length - taken)
    const mine = plain.slice(0, plain.length - taken)
    const drawn = helper.draw(
      logits,
      vocab,
      shared.map((index) => ({ offset: rows[index]!.offset, temperature: rows[index]!.parameters.temperature, uniform: uniforms[index]! })),
      () => {
        for (const index of mine)
          results[index] = sampleWith(logits.subarray(rows[index]!.offset, rows[index]!.offset + vocab), rows[index]!.parameters, uniforms[index]!, undefined)
      },
    )
    if (drawn !== undefined) {
      shared.forEach((index, position) => {
        const row = logits.subarray(rows[index]!.offset, rows[index]!.offset + vocab)
        results[index] = tokenOf(row, rows[index]!.parameters.temperature, drawn[3 * position]!, drawn[3 * position + 1]!, drawn[3 * position + 2]!)
      })
    }
  }
  return rows.map(
    (row, index) => results[index] ?? sampleWith(logits.subarray(row.offset, row.offset + vocab), row.parameters, uniforms[index]!, exclusions[index]),
  )
}

/** Rows below which the helper is not asked (its hand-over costs more than it saves), and rows × vocabulary. */
const samplingHelperRows = 8
const samplingHelperWork = 2 ** 15
/** The most logits handed to the helper in one step (16M floats, 64 MiB of shared buffer: 110 rows of a 151,936-token vocabulary). */
export const samplingHelperFloats = 2 ** 24

/** Ids the row may not draw, or undefined for none; an `InvalidArgumentError` when they leave no token. */
function checkedExclusion(vocab: number, excluded: ReadonlySet<number> | undefined): ReadonlySet<number> | undefined {
  const exclusion = excluded !== undefined && excluded.size > 0 ? excluded : undefined
  if (exclusion !== undefined && [...exclusion].filter((id) => id >= 0 && id < vocab).length >= vocab) {
    throw new InvalidArgumentError({ argument: 'excluded', value: [...exclusion].slice(0, 16), message: `leaves none of the ${vocab} tokens to draw` })
  }
  return exclusion
}

/** Whether a row draws from its whole tempered distribution (`drawPlain`): sampled, nothing filtered or excluded. */
function isPlain(parameters: SamplingParameters, vocab: number, exclusion: ReadonlySet<number> | undefined): boolean {
  const { temperature, topK, topP, minP } = parameters
  return temperature > 0 && exclusion === undefined && !(topK > 0 && topK < vocab) && !(topP < 1) && !(minP > 0)
}

const plainResult = new Float64Array(3)

/** `sampleToken` of one row with its uniform drawn already (none for greedy). */
function sampleWith(row: Float32Array, parameters: SamplingParameters, uniform: number, exclusion: ReadonlySet<number> | undefined): SampledToken {
  if (parameters.temperature === 0) {
    const token = argmax(row, exclusion)
    return { token, logprob: logSoftmaxAt(row, token) }
  }
  if (isPlain(parameters, row.length, exclusion)) {
    if (scratch.length < row.length) scratch = new Float64Array(row.length)
    drawPlain(row, parameters.temperature, uniform, scratch, plainResult)
    return tokenOf(row, parameters.temperature, plainResult[0]!, plainResult[1]!, plainResult[2]!)
  }
  const { token, max, total } = drawFiltered(row, parameters, uniform, exclusion)
  return tokenOf(row, parameters.temperature, token, max, total)
}

/**
 * The drawn token and its log-probability: the draw's unfiltered weights exp((logit - max) / T) are log
 * softmax(logits / T)'s terms, so its value at the token is (logit - max) / T - log Σ weights, in float64 (at T = 1,
 * bit for bit `logSoftmaxAt`'s).
 */
function tokenOf(row: Float32Array, temperature: number, token: number, max: number, total: number): SampledToken {
  return { token, logprob: (row[token]! - max) / temperature - Math.log(total) }
}

/**
 * A draw from the whole tempered distribution of `row` with `uniform` in [0, 1): `result` gets the token, the row's
 * largest logit and the weights' sum Σ exp((logit - max) / T), float64, in index order (`weights` holds each).
 * Self-contained but for `drawIndex` (no closure, no import): the helper thread runs the source of both (`sampling-workers.ts`).
 */
export function drawPlain(row: Float32Array, temperature: number, uniform: number, weights: Float64Array, result: Float64Array): void {
  const vocab = row.length
  let max = -Infinity
  for (let index = 0; index < vocab; index++) if (row[index]! > max) max = row[index]!
  let total = 0
  if (temperature === 1) {
    // x / 1 is x: the same weights without a division each.
    for (let index = 0; index < vocab; index++) {
      const weight = Math.exp(row[index]! - max)
      weights[index] = weight
      total += weight
    }
  } else {
    for (let index = 0; index < vocab; index++) {
      const weight = Math.exp((row[index]! - max) / temperature)
      weights[index] = weight
      total += weight
    }
  }
  result[0] = drawIndex(weights, vocab, uniform * total)
  result[1] = max
  result[2] = total
}

/**
 * The index where `target` falls in the running sum of `weights[0 … vocab)` (zero weights skipped; the last non-zero
 * one when rounding leaves some of it). Self-contained, as `drawPlain`, whose helper thread runs its source too.
 */
export function drawIndex(weights: Float64Array, vocab: number, target: number): number {
  let rest = target
  let last = 0
  for (let index = 0; index < vocab; index++) {
    const weight = weights[index]!
    if (weight === 0) continue
    last = index
    rest -= weight
    if (rest < 0) return index
  }
  return last
}

/** log softmax(row)[index], in float64. */
export function logSoftmaxAt(row: Float32Array, index: number): number {
  let max = -Infinity
  for (let position = 0; position < row.length; position++) if (row[position]! > max) max = row[position]!
  let sum = 0
  for (let position = 0; position < row.length; position++) sum += Math.exp(row[position]! - max)
  return row[index]! - max - Math.log(sum)
}

/** The index of the largest value outside `excluded` (the lowest index on ties). */
function argmax(row: Float32Array, excluded?: ReadonlySet<number>): number {
  if (excluded === undefined) {
    let best = 0
    for (let index = 1; index < row.length; index++) if (row[index]! > row[best]!) best = index
    return best
  }
  let best = -1
  for (let index = 0; index < row.length; index++) {
    if (excluded.has(index)) continue
    if (best < 0 || row[index]! > row[best]!) best = index
  }
  return best
}

let scratch = new Float64Array(0)

/**
 * A draw with filters or exclusions: the drawn token, the row's largest logit and the sum of the unfiltered weights
 * `exp((logit - max) / T)` (over the whole row, `excluded` included: the recorded log-probability is the unfiltered one).
 */
function drawFiltered(
  row: Float32Array,
  parameters: SamplingParameters,
  uniform: number,
  excluded: ReadonlySet<number> | undefined,
): { token: number; max: number; total: number } {
  const { temperature, topK, topP, minP } = parameters
  const vocab = row.length
  let max = -Infinity
  for (let index = 0; index < vocab; index++) if (row[index]! > max) max = row[index]!
  // The draw's weights are taken from the largest logit it may draw, so that an excluded token far above the others
  // (at a low temperature) cannot underflow all of theirs to 0.
  let drawMax = max
  if (excluded !== undefined) {
    drawMax = -Infinity
    for (let index = 0; index < vocab; index++) if (!excluded.has(index) && row[index]! > drawMax) drawMax = row[index]!
  }
  // Unnormalised tempered probabilities exp((logit - drawMax) / T), in a buffer reused across calls.
  if (scratch.length < vocab) scratch = new Float64Array(vocab)
  const weights = scratch.subarray(0, vocab)
  let unfiltered = 0
  for (let index = 0; index < vocab; index++) {
    const weight = Math.exp((row[index]! - drawMax) / temperature)
    weights[index] = weight
    unfiltered += weight
  }
  if (excluded !== undefined) {
    unfiltered = 0
    for (let index = 0; index < vocab; index++) unfiltered += Math.exp((row[index]! - max) / temperature)
    for (const id of excluded) if (id >= 0 && id < vocab) weights[id] = 0
  }

  if ((topK > 0 && topK < vocab) || topP < 1) {
    const order = Array.from({ length: vocab }, (_, index) => index).sort((a, b) => weights[b]! - weights[a]! || a - b)
    let keep = topK > 0 ? Math.min(topK, vocab) : vocab
    if (topP < 1) {
      let total = 0
      for (let rank = 0; rank < keep; rank++) total += weights[order[rank]!]!
      let cumulative = 0
      for (let rank = 0; rank < keep; rank++) {
        cumulative += weights[order[rank]!]! / total
        if (cumulative >= topP) {
          keep = rank + 1
          break
        }
      }
    }
    for (let rank = keep; rank < vocab; rank++) weights[order[rank]!] = 0
  }
  if (minP > 0) {
    let largest = 0
    for (let index = 0; index < vocab; index++) if (weights[index]! > largest) largest = weights[index]!
    const threshold = minP * largest
    for (let index = 0; index < vocab; index++) if (weights[index]! < threshold) weights[index] = 0
  }
  let total = 0
  for (let index = 0; index < vocab; index++) total += weights[index]!
  return { token: drawIndex(weights, vocab, uniform * total), max, total: unfiltered }
}
