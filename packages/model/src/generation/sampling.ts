import type { Random } from '@ludic/core'

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
 */
export function sampleToken(logits: Float32Array, offset: number, vocab: number, parameters: SamplingParameters, random: Random): SampledToken {
  const row = logits.subarray(offset, offset + vocab)
  if (parameters.temperature === 0) {
    const token = argmax(row)
    return { token, logprob: logSoftmaxAt(row, token) }
  }
  const { token, max, total } = drawFiltered(row, parameters, random)
  // The draw's unfiltered weights exp((logit - max) / T) are log softmax(logits / T)'s terms: its value at the
  // token is (logit - max) / T - log Σ weights, in float64 (at T = 1, bit for bit logSoftmaxAt's).
  return { token, logprob: (row[token]! - max) / parameters.temperature - Math.log(total) }
}

/** log softmax(row)[index], in float64. */
export function logSoftmaxAt(row: Float32Array, index: number): number {
  let max = -Infinity
  for (let position = 0; position < row.length; position++) if (row[position]! > max) max = row[position]!
  let sum = 0
  for (let position = 0; position < row.length; position++) sum += Math.exp(row[position]! - max)
  return row[index]! - max - Math.log(sum)
}

function argmax(row: Float32Array): number {
  let best = 0
  for (let index = 1; index < row.length; index++) if (row[index]! > row[best]!) best = index
  return best
}

let scratch = new Float64Array(0)

/** The drawn token, the row's largest logit and the sum of the unfiltered weights `exp((logit - max) / T)`. */
function drawFiltered(row: Float32Array, parameters: SamplingParameters, random: Random): { token: number; max: number; total: number } {
  const { temperature, topK, topP, minP } = parameters
  const vocab = row.length
  let max = -Infinity
  for (let index = 0; index < vocab; index++) if (row[index]! > max) max = row[index]!
  // Unnormalised tempered probabilities exp((logit - max) / T), in a buffer reused across calls.
  if (scratch.length < vocab) scratch = new Float64Array(vocab)
  const weights = scratch.subarray(0, vocab)
  let unfiltered = 0
  for (let index = 0; index < vocab; index++) {
    const weight = Math.exp((row[index]! - max) / temperature)
    weights[index] = weight
    unfiltered += weight
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
  let target = random.nextFloat() * total
  let last = 0
  for (let index = 0; index < vocab; index++) {
    const weight = weights[index]!
    if (weight === 0) continue
    last = index
    target -= weight
    if (target < 0) return { token: index, max, total: unfiltered }
  }
  return { token: last, max, total: unfiltered }
}
