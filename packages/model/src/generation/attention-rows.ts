/**
 * The host decoder's per-row attention work, written so that a worker thread can run the same code: each function
 * here is self-contained (it reads only its arguments and calls only the others here), and the matmul arena's helper
 * threads (`matmul-workers.ts`) evaluate their sources beside the kernel. A row's keys, values and attended output are
 * then the same bits whichever thread computed them. Pointers are float (or int) indices into one memory (`f`, `m`:
 * `Float32Array` and `Int32Array` views of the whole arena); the kernel takes bytes.
 *
 * A decode step's rows are independent between the q/k/v product and the output projection: for each row its new
 * token's q and k get RoPE (the rotate-half layout, as `applyRotary`; Qwen3's per-head RMSNorm first), its key and
 * value go to its slot of the cache, and each query head attends over the row's positions,
 *
 *     attended_h = Σ_t softmax_t(q_h · k_t / √d) · v_t,   t from the window's start to the new position,
 *
 * as two kernel products per key/value head (keys are stored a position a row, values transposed) and a softmax in
 * between (`attentionSoftmax`). `attendRows` runs rows `from … to - 1`, so the arena can split a step's rows between
 * threads (`MatmulArena.attend`); `attendParts` does the same for a prefill's parts (several tokens of one row each,
 * causal among themselves).
 */

/** Int32 slots of an attention job's parameter block (pointers: float indices into the arena; -1: none). */
export const attendSlots = {
  heads: 0,
  keyValueHeads: 1,
  headDim: 2,
  /** Positions per page of the cache (a multiple of 4): a row's positions live in its pages, `pageLength` each. */
  pageLength: 3,
  /** Floats per row of `projected`. */
  projectedWidth: 4,
  /** Mistral's sliding window, or -1. */
  window: 5,
  /** 1: RoPE (0 for GPT-2's learned positions). */
  rope: 6,
  /** `[rows, projectedWidth]`: each row's q, k and v (heads then key/value heads, `headDim` each), rotated in place. */
  projected: 7,
  /** `[pages, kvHeads, pageLength, headDim]`. */
  keys: 8,
  /** `[pages, kvHeads, headDim, pageLength]` (transposed). */
  values: 9,
  /** `[rows, heads, scoreStride]` scratch. */
  scores: 10,
  /** `[rows, heads · headDim]`. */
  attended: 11,
  /** `[rows, headDim / 2]` each: the rows' RoPE angles' cos and sin (float32 values). */
  cos: 12,
  sin: 13,
  /** Qwen3's query and key head norms (`[headDim]`), or -1. */
  queryNorm: 14,
  keyNorm: 15,
  /** Int indices: each row's cache row (`slots`) and the position its new token takes (`positions`). */
  slots: 16,
  positions: 17,
  /** The norms' epsilon, as float64 at this slot (8-byte aligned: the block is 16-byte aligned). */
  epsilon: 18,
  /** Int index: a prefill's parts (`attendParts`), four ints each — cache row, first position, tokens, first row of `projected`. */
  parts: 20,
  /** Int index: each cache row's page table, `tableWidth` page indices (its positions `i · pageLength …` are in page `table[i]`). */
  tables: 21,
  tableWidth: 22,
  /** Floats per row of `scores` (a row's most positions, a multiple of 4). */
  scoreStride: 23,
  /** `[rows, heads · headDim]` scratch: a page's share of a weighted sum, added to `attended`. */
  partial: 24,
} as const
/** Int32 slots of the block (a multiple of 4: 16-byte aligned blocks). */
export const attendBlockLength = 28

/**
 * RMSNorm of `width` values of `source` from `at`: `weight · x / sqrt(mean(x²) + epsilon)` into `out` from `outAt`
 * (may be `source` at `at`), `weight` from `weightAt`. The sums in order (the same bits on every thread).
 */
export function rmsNormaliseRow(
  source: Float32Array,
  at: number,
  weight: Float32Array,
  weightAt: number,
  out: Float32Array,
  outAt: number,
  width: number,
  epsilon: number,
): void {
  let sum = 0
  for (let index = 0; index < width; index++) sum += source[at + index]! * source[at + index]!
  const scale = 1 / Math.sqrt(Math.fround(Math.fround(sum / width) + epsilon))
  for (let index = 0; index < width; index++) out[outAt + index] = Math.fround(source[at + index]! * scale) * weight[weightAt + index]!
}

/**
 * Attention weights in place over one row of raw scores `scores[offset + slot]`: `softmax(score · scale + bias)`
 * over the slots `from … to - 1` (`bias[biasOffset + slot]` added when given), 0 on the other slots below `end`
 * (the product that follows reads up to the next multiple of 4).
 */
export function attentionSoftmax(
  scores: Float32Array,
  offset: number,
  from: number,
  to: number,
  end: number,
  scale: number,
  bias: Float32Array | undefined,
  biasOffset: number,
): void {
  let max = -Infinity
  for (let slot = from; slot < to; slot++) {
    let score = Math.fround(scores[offset + slot]! * scale)
    if (bias !== undefined) score += bias[biasOffset + slot]!
    scores[offset + slot] = score
    if (score > max) max = score
  }
  let total = 0
  for (let slot = from; slot < to; slot++) {
    const weight = Math.exp(scores[offset + slot]! - max)
    scores[offset + slot] = weight
    total += weight
  }
  for (let slot = 0; slot < end; slot++) scores[offset + slot] = slot >= from && slot < to ? scores[offset + slot]! / total : 0
}

/**
 * Row `index` of `projected` (block `block`'s parameters): Qwen3's head norms, RoPE on every q and k head (its angles
 * at `index` of `cos`/`sin`), then its key and value written into cache row `row` at `position`.
 */
export function rotateAndStoreRow(f: Float32Array, m: Int32Array, block: number, epsilon: number, index: number, row: number, position: number): void {
  const heads = m[block]!
  const keyValueHeads = m[block + 1]!
  const headDim = m[block + 2]!
  const pageLength = m[block + 3]!
  const base = m[block + 7]! + index * m[block + 4]!
  const half = headDim / 2
  const queryNorm = m[block + 14]!
  if (queryNorm >= 0) {
    const keyNorm = m[block + 15]!
    for (let head = 0; head < heads + keyValueHeads; head++) {
      const start = base + head * headDim
      rmsNormaliseRow(f, start, f, head < heads ? queryNorm : keyNorm, f, start, headDim, epsilon)
    }
  }
  if (m[block + 6] === 1) {
    const angles = index * half
    const cos = m[block + 12]! + angles
    const sin = m[block + 13]! + angles
    for (let head = 0; head < heads + keyValueHeads; head++) {
      const start = base + head * headDim
      for (let dimension = 0; dimension < half; dimension++) {
        const first = f[start + dimension]!
        const second = f[start + dimension + half]!
        const c = f[cos + dimension]!
        const s = f[sin + dimension]!
        f[start + dimension] = first * c - second * s
        f[start + dimension + half] = second * c + first * s
      }
    }
  }
  const keys = m[block + 8]!
  const values = m[block + 9]!
  const page = m[m[block + 21]! + row * m[block + 22]! + Math.floor(position / pageLength)]!
  const offset = position % pageLength
  for (let group = 0; group < keyValueHeads; group++) {
    const cacheBlock = page * keyValueHeads + group
    const key = base + (heads + group) * headDim
    const value = key + keyValueHeads * headDim
    const keyAt = keys + (cacheBlock * pageLength + offset) * headDim
    const valueAt = values + cacheBlock * headDim * pageLength + offset
    for (let dimension = 0; dimension < headDim; dimension++) {
      f[keyAt + dimension] = f[key + dimension]!
      f[valueAt + dimension * pageLength] = f[value + dimension]!
    }
  }
}

/** The arena's kernel as `attendRows` and `attendParts` call it: `y = W x` over byte offsets and strides of the memory. */
export type AttentionKernel = (
  w: number,
  x: number,
  y: number,
  rows: number,
  columns: number,
  batch: number,
  wStride: number,
  xStride: number,
  yStride: number,
) => void

/** The sizes and buffers of block `block` (`attendSlots`) that `attendRows` and `attendParts` share. */
export function attentionBlock(m: Int32Array, block: number) {
  return {
    heads: m[block]!,
    keyValueHeads: m[block + 1]!,
    headDim: m[block + 2]!,
    projectedWidth: m[block + 4]!,
    window: m[block + 5]!,
    projected: m[block + 7]!,
    scores: m[block + 10]!,
    attended: m[block + 11]!,
    epsilon: new Float64Array(m.buffer, m.byteOffset + (block + 18) * 4, 1)[0]!,
    scoreStride: m[block + 23]!,
  }
}

/**
 * `scores[b, t] = x_b · k_t` for `batch` vectors `x` (float index, `xStride` floats apart) against the keys of cache row
 * `row`'s key/value head `group` at positions `0 … end - 1` (`end` a multiple of 4), page by page: one kernel product
 * per page, each page's scores at their positions of `scores` (rows `scoreStride` apart).
 */
export function pagedScores(
  m: Int32Array,
  block: number,
  matmul: AttentionKernel,
  row: number,
  group: number,
  x: number,
  xStride: number,
  batch: number,
  scores: number,
  end: number,
): void {
  const keyValueHeads = m[block + 1]!
  const headDim = m[block + 2]!
  const pageLength = m[block + 3]!
  const table = m[block + 21]! + row * m[block + 22]!
  for (let first = 0; first < end; first += pageLength) {
    const cacheBlock = m[table + first / pageLength]! * keyValueHeads + group
    const count = Math.min(pageLength, end - first)
    matmul(
      4 * (m[block + 8]! + cacheBlock * pageLength * headDim),
      4 * x,
      4 * (scores + first),
      count,
      headDim,
      batch,
      4 * headDim,
      4 * xStride,
      4 * m[block + 23]!,
    )
  }
}

/**
 * `out_b = Σ_t p[b, t] v_t` for `batch` rows of weights `p` (`weights`, rows `scoreStride` apart, 0 past a row's own
 * positions) over cache row `row`'s key/value head `group` at positions `0 … end - 1`, page by page: the first page's
 * product into `out` (rows `outStride` apart), each later page's into `partial` (the same layout) and added, in page
 * order (a row's sums do not depend on the thread or on how its pages were shared).
 */
export function pagedWeightedSum(
  f: Float32Array,
  m: Int32Array,
  block: number,
  matmul: AttentionKernel,
  row: number,
  group: number,
  weights: number,
  batch: number,
  out: number,
  outStride: number,
  partial: number,
  end: number,
): void {
  const keyValueHeads = m[block + 1]!
  const headDim = m[block + 2]!
  const pageLength = m[block + 3]!
  const scoreStride = m[block + 23]!
  const table = m[block + 21]! + row * m[block + 22]!
  for (let first = 0; first < end; first += pageLength) {
    const cacheBlock = m[table + first / pageLength]! * keyValueHeads + group
    const count = Math.min(pageLength, end - first)
    const target = first === 0 ? out : partial
    matmul(
      4 * (m[block + 9]! + cacheBlock * headDim * pageLength),
      4 * (weights + first),
      4 * target,
      headDim,
      count,
      batch,
      4 * pageLength,
      4 * scoreStride,
      4 * outStride,
    )
    if (first === 0) continue
    for (let member = 0; member < batch; member++) {
      const at = member * outStride
      for (let dimension = 0; dimension < headDim; dimension++) f[out + at + dimension] = f[out + at + dimension]! + f[partial + at + dimension]!
    }
  }
}

/**
 * One decode step's attention for rows `from … to - 1` of block `block` (`attendSlots`): each row's token rotated and
 * stored (`rotateAndStoreRow`), then every query head's attention over its row's positions into `attended`. `matmul`
 * is the arena's kernel (`w, x, y, rows, columns, batch, wStride, xStride, yStride`, bytes); the products' rows and
 * columns are multiples of 4 when `headDim` is (scores are computed to the next multiple of 4 and weighted 0).
 */
export function attendRows(f: Float32Array, m: Int32Array, block: number, matmul: AttentionKernel, from: number, to: number): void {
  const { heads, keyValueHeads, headDim, projectedWidth, window, projected, scores, attended, epsilon, scoreStride } = attentionBlock(m, block)
  const slots = m[block + 16]!
  const positions = m[block + 17]!
  const partial = m[block + 24]!
  const groups = heads / keyValueHeads
  const scale = 1 / Math.sqrt(headDim)
  for (let index = from; index < to; index++) {
    const row = m[slots + index]!
    const position = m[positions + index]!
    rotateAndStoreRow(f, m, block, epsilon, index, row, position)
    const length = position + 1
    const lengthPadded = Math.ceil(length / 4) * 4
    const start = window < 0 ? 0 : Math.max(0, position - window + 1)
    for (let group = 0; group < keyValueHeads; group++) {
      const query = projected + index * projectedWidth + group * groups * headDim
      const rowScores = scores + index * heads * scoreStride + group * groups * scoreStride
      // scores[j, t] = q_j · k_t for the `groups` query heads sharing this key/value head.
      pagedScores(m, block, matmul, row, group, query, headDim, groups, rowScores, lengthPadded)
      for (let member = 0; member < groups; member++) attentionSoftmax(f, rowScores + member * scoreStride, start, length, lengthPadded, scale, undefined, 0)
      // attended_j = Σ_t p[j, t] v_t: values are stored transposed, so this is a product too (a page at a time).
      const at = index * heads * headDim + group * groups * headDim
      pagedWeightedSum(f, m, block, matmul, row, group, rowScores, groups, attended + at, headDim, partial + at, lengthPadded)
    }
  }
}

/**
 * A prefill's attention for parts `from … to - 1` of block `block`'s parts table: each part's tokens (rows `first …` of
 * `projected`) rotated and stored at their positions `start …` of cache row `slot`, then every query head's causal
 * attention over the row's positions up to each token's own (the window's start on), its scores in rows `first …` of
 * `scores`: one product per head and page for all the part's tokens (they are its batch), scores to the next multiple
 * of 4 of the part's end (those past a token's own weighted 0).
 */
export function attendParts(f: Float32Array, m: Int32Array, block: number, matmul: AttentionKernel, from: number, to: number): void {
  const { heads, keyValueHeads, headDim, projectedWidth, window, projected, scores, attended, epsilon, scoreStride } = attentionBlock(m, block)
  const parts = m[block + 20]!
  const partial = m[block + 24]!
  const groups = heads / keyValueHeads
  const queryWidth = heads * headDim
  const scale = 1 / Math.sqrt(headDim)
  for (let part = from; part < to; part++) {
    const slot = m[parts + 4 * part]!
    const start = m[parts + 4 * part + 1]!
    const count = m[parts + 4 * part + 2]!
    const first = m[parts + 4 * part + 3]!
    for (let index = 0; index < count; index++) rotateAndStoreRow(f, m, block, epsilon, first + index, slot, start + index)
    const endPadded = Math.ceil((start + count) / 4) * 4
    const partScores = scores + first * scoreStride
    for (let group = 0; group < keyValueHeads; group++) {
      for (let member = 0; member < groups; member++) {
        const head = group * groups + member
        // scores[t, j] = q_t · k_j over every position j below the end's multiple of 4 (those past t's own masked below).
        pagedScores(m, block, matmul, slot, group, projected + first * projectedWidth + head * headDim, projectedWidth, count, partScores, endPadded)
        for (let index = 0; index < count; index++) {
          const position = start + index
          attentionSoftmax(
            f,
            partScores + index * scoreStride,
            window < 0 ? 0 : Math.max(0, position - window + 1),
            position + 1,
            endPadded,
            scale,
            undefined,
            0,
          )
        }
        // attended_t = Σ_j p[t, j] v_j (values stored transposed: a product a page).
        const at = first * queryWidth + head * headDim
        pagedWeightedSum(f, m, block, matmul, slot, group, partScores, count, attended + at, queryWidth, partial + at, endPadded)
      }
    }
  }
}
