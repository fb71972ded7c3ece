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
  /** Positions per cached row (a multiple of 4). */
  capacity: 3,
  /** Floats per row of `projected`. */
  projectedWidth: 4,
  /** Mistral's sliding window, or -1. */
  window: 5,
  /** 1: RoPE (0 for GPT-2's learned positions). */
  rope: 6,
  /** `[rows, projectedWidth]`: each row's q, k and v (heads then key/value heads, `headDim` each), rotated in place. */
  projected: 7,
  /** `[batch, kvHeads, capacity, headDim]`. */
  keys: 8,
  /** `[batch, kvHeads, headDim, capacity]` (transposed). */
  values: 9,
  /** `[rows, heads, capacity]` scratch. */
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
} as const
/** Int32 slots of the block. */
export const attendBlockLength = 24

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
  const capacity = m[block + 3]!
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
  for (let group = 0; group < keyValueHeads; group++) {
    const cacheBlock = row * keyValueHeads + group
    const key = base + (heads + group) * headDim
    const value = key + keyValueHeads * headDim
    const keyAt = keys + (cacheBlock * capacity + position) * headDim
    const valueAt = values + cacheBlock * headDim * capacity + position
    for (let dimension = 0; dimension < headDim; dimension++) {
      f[keyAt + dimension] = f[key + dimension]!
      f[valueAt + dimension * capacity] = f[value + dimension]!
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
    capacity: m[block + 3]!,
    projectedWidth: m[block + 4]!,
    window: m[block + 5]!,
    projected: m[block + 7]!,
    keys: m[block + 8]!,
    values: m[block + 9]!,
    scores: m[block + 10]!,
    attended: m[block + 11]!,
    epsilon: new Float64Array(m.buffer, m.byteOffset + (block + 18) * 4, 1)[0]!,
  }
}

/**
 * One decode step's attention for rows `from … to - 1` of block `block` (`attendSlots`): each row's token rotated and
 * stored (`rotateAndStoreRow`), then every query head's attention over its row's positions into `attended`. `matmul`
 * is the arena's kernel (`w, x, y, rows, columns, batch, wStride, xStride, yStride`, bytes); the products' rows and
 * columns are multiples of 4 when `headDim` is (scores are computed to the next multiple of 4 and weighted 0).
 */
export function attendRows(f: Float32Array, m: Int32Array, block: number, matmul: AttentionKernel, from: number, to: number): void {
  const { heads, keyValueHeads, headDim, capacity, projectedWidth, window, projected, keys, values, scores, attended, epsilon } = attentionBlock(m, block)
  const slots = m[block + 16]!
  const positions = m[block + 17]!
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
      const cacheBlock = row * keyValueHeads + group
      const query = projected + index * projectedWidth + group * groups * headDim
      const rowScores = scores + index * heads * capacity + group * groups * capacity
      // scores[j, t] = q_j · k_t for the `groups` query heads sharing this key/value head.
      matmul(4 * (keys + cacheBlock * capacity * headDim), 4 * query, 4 * rowScores, lengthPadded, headDim, groups, 4 * headDim, 4 * headDim, 4 * capacity)
      for (let member = 0; member < groups; member++) attentionSoftmax(f, rowScores + member * capacity, start, length, lengthPadded, scale, undefined, 0)
      // attended_j = Σ_t p[j, t] v_t: values are stored transposed, so this is a product too.
      const out = attended + index * heads * headDim + group * groups * headDim
      matmul(4 * (values + cacheBlock * headDim * capacity), 4 * rowScores, 4 * out, headDim, lengthPadded, groups, 4 * capacity, 4 * capacity, 4 * headDim)
    }
  }
}

/**
 * A prefill's attention for parts `from … to - 1` of block `block`'s parts table: each part's tokens (rows `first …` of
 * `projected`) rotated and stored at their positions `start …` of cache row `slot`, then every query head's causal
 * attention over the row's positions up to each token's own (the window's start on), its scores in rows `first …` of
 * `scores`: one product per head for all the part's tokens (they are its batch), scores to the next multiple of 4 of
 * the part's end (those past a token's own weighted 0).
 */
export function attendParts(f: Float32Array, m: Int32Array, block: number, matmul: AttentionKernel, from: number, to: number): void {
  const { heads, keyValueHeads, headDim, capacity, projectedWidth, window, projected, keys, values, scores, attended, epsilon } = attentionBlock(m, block)
  const parts = m[block + 20]!
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
    const partScores = scores + first * capacity
    for (let group = 0; group < keyValueHeads; group++) {
      const cacheBlock = slot * keyValueHeads + group
      for (let member = 0; member < groups; member++) {
        const head = group * groups + member
        // scores[t, j] = q_t · k_j over every slot j below the end's multiple of 4 (those past t's own masked below).
        const query = projected + first * projectedWidth + head * headDim
        matmul(
          4 * (keys + cacheBlock * capacity * headDim),
          4 * query,
          4 * partScores,
          endPadded,
          headDim,
          count,
          4 * headDim,
          4 * projectedWidth,
          4 * capacity,
        )
        for (let index = 0; index < count; index++) {
          const position = start + index
          attentionSoftmax(f, partScores + index * capacity, window < 0 ? 0 : Math.max(0, position - window + 1), position + 1, endPadded, scale, undefined, 0)
        }
        // attended_t = Σ_j p[t, j] v_j (values stored transposed: a product).
        const out = attended + first * queryWidth + head * headDim
        matmul(4 * (values + cacheBlock * headDim * capacity), 4 * partScores, 4 * out, headDim, endPadded, count, 4 * capacity, 4 * capacity, 4 * queryWidth)
      }
    }
  }
}
