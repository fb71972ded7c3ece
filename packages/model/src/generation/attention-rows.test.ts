import { setTimeout as sleep } from 'node:timers/promises'
import * as tf from '@tensorflow/tfjs-core'
import { beforeAll, describe, expect, it } from 'vitest'
import type { CausalLanguageModel } from '../model/causal-language-model.js'
import { createModel } from '../model/create-model.js'
import { initTestBackend } from '../test/init-test-backend.js'
import { HostDecoder } from './host-decoder.js'
import { attendBlockLength, attendSlots } from './attention-rows.js'
import { createMatmulArena, type MatmulArena, sharedMemoryAvailable, sharedRowMinimum } from './simd-matmul.js'

beforeAll(initTestBackend)

const vocabSize = 61
const base = { numHiddenLayers: 2, numAttentionHeads: 4, intermediateSize: 40, initializerRange: 0.3, maxPositionEmbeddings: 64 }
const architectures = [
  { name: 'Llama, grouped-query attention', overrides: { ...base, hiddenSize: 32, numKeyValueHeads: 2 } },
  { name: 'Qwen3, query/key norms', overrides: { ...base, hiddenSize: 32, architecture: 'qwen3', numKeyValueHeads: 2, headDim: 16, queryKeyNorm: true } },
  { name: 'Mistral, a sliding window of 5', overrides: { ...base, hiddenSize: 32, architecture: 'mistral', numKeyValueHeads: 2, slidingWindow: 5 } },
  { name: 'GPT-2', overrides: { ...base, hiddenSize: 32, architecture: 'gpt2', numKeyValueHeads: 4, rmsNormEps: 1e-5 } },
  { name: 'a head size that is not a multiple of 4 (the rows stay on the caller)', overrides: { ...base, hiddenSize: 24, numKeyValueHeads: 2 } },
  // q, k, v are 64 wide, gate and up 2 × 41: rows of `projected` 82 wide, so a prefill's queries are not 4-aligned and its parts stay on the caller.
  {
    name: 'projected rows not a multiple of 4 wide (the parts stay on the caller)',
    overrides: { ...base, hiddenSize: 32, numKeyValueHeads: 2, intermediateSize: 41 },
  },
]

const rows = 12
const lengths = Array.from({ length: rows }, (_, row) => 3 + ((row * 5) % 17)) // 3 … 19 prompt tokens
const token = (row: number, position: number) => (row * 13 + position * 7 + 3) % vocabSize
const prefill = (decoder: HostDecoder) =>
  decoder.extend(lengths.map((length, slot) => ({ slot, tokens: Int32Array.from({ length }, (_, position) => token(slot, position)), start: 0 })))

/** Prefills every row (its own length; the parts of one call), then decodes `steps` steps of all rows in a shuffled order: each step's logits, and the keys and values after the prefill. */
async function decode(decoder: HostDecoder, steps: number, untilHelped: boolean): Promise<{ prefilled: unknown[]; logits: Float32Array[] }> {
  prefill(decoder)
  const prefilled = lengths.map((length, slot) => decoder.readPositions(slot, length))
  const held = [...lengths]
  const logits: Float32Array[] = []
  for (let step = 0; step < steps; step++) {
    const order = Array.from({ length: rows }, (_, index) => (index * 5 + step) % rows)
    const result = decoder.stepRows(
      Int32Array.from(order),
      Int32Array.from(order, (slot) => token(slot, held[slot]!)),
      Int32Array.from(order, (slot) => held[slot]!),
    )
    // Back in slot order, so that steps compare whatever the order.
    const ordered = new Float32Array(rows * vocabSize)
    order.forEach((slot, index) => ordered.set(result.subarray(index * vocabSize, (index + 1) * vocabSize), slot * vocabSize))
    logits.push(ordered)
    for (const slot of order) held[slot]! += 1
    // The helper thread starts in the background: give it a moment before the steps that must see it.
    if (untilHelped && decoder.helperAttentionChunks === 0) await sleep(20)
  }
  return { prefilled, logits }
}

describe("the host decoder's attention on two threads", () => {
  it("runs a decode step's rows and a prefill's parts on the helper thread too: the keys, values and logits of one thread, bit for bit, every architecture", async () => {
    expect(sharedMemoryAvailable()).toBe(true)
    expect(rows).toBeGreaterThanOrEqual(sharedRowMinimum)
    for (const { name, overrides } of architectures) {
      const model: CausalLanguageModel = createModel('tiny', { vocabSize, seed: 23, overrides })
      let seed = 7
      for (const [parameter, variable] of model.parameters()) {
        if (/norm|ln_|bias/.test(parameter)) tf.tidy(() => variable.assign(tf.add(variable, tf.randomNormal(variable.shape, 0, 0.3, 'float32', seed++))))
      }
      const single = new HostDecoder(model, rows, 48, { prefillLength: 256 })
      const shared = new HostDecoder(model, rows, 48, { prefillLength: 256, threads: 2 })
      try {
        const expected = await decode(single, 20, false)
        const actual = await decode(shared, 20, true)
        expect(shared.threads, name).toBe(2)
        expect(actual.prefilled, name).toEqual(expected.prefilled)
        actual.logits.forEach((step, index) => expect(step, `${name}, step ${index}`).toEqual(expected.logits[index]))
        if (model.config.headDim % 4 !== 0) {
          expect(shared.helperAttentionChunks, name).toBe(0)
          continue
        }
        expect(shared.helperAttentionChunks, name).toBeGreaterThan(0)
        // A prefill's parts (the decode steps' rows are done: what the helper's attention count gains now is parts).
        const before = shared.helperAttentionChunks
        const partsShared = overrides.intermediateSize !== 41
        for (let attempt = 0; attempt < (partsShared ? 500 : 50) && shared.helperAttentionChunks === before; attempt++) prefill(shared)
        if (partsShared) expect(shared.helperAttentionChunks, `${name}: a prefill's parts on the helper`).toBeGreaterThan(before)
        else expect(shared.helperAttentionChunks, `${name}: a prefill's parts on the caller`).toBe(before)
        expect(
          lengths.map((length, slot) => shared.readPositions(slot, length)),
          name,
        ).toEqual(expected.prefilled)
      } finally {
        single.dispose()
        shared.dispose()
        model.dispose()
      }
    }
  })

  it('a chunk that fails on either thread fails the job instead of hanging it; the arena works on after', async () => {
    const heads = 2
    const headDim = 8
    const capacity = 16
    const count = 16
    const projectedWidth = 3 * heads * headDim // q, k and v of every head
    const arena = createMatmulArena({ threads: 2 })
    const single = createMatmulArena()
    const setUp = (target: MatmulArena) => {
      target.reserve(100_000)
      const block = target.allocateInts(attendBlockLength)
      const projected = target.allocate(count * projectedWidth)
      const keys = target.allocate(count * heads * capacity * headDim)
      const values = target.allocate(count * heads * capacity * headDim)
      const scores = target.allocate(count * heads * capacity)
      const attended = target.allocate(count * heads * headDim)
      const angles = [target.allocate(count * (headDim / 2)), target.allocate(count * (headDim / 2))] as const
      const slots = target.allocateInts(count)
      const positions = target.allocateInts(count)
      const tables = target.allocateInts(count)
      tables.forEach((_, row) => (tables[row] = row)) // a row is its own page
      const partial = target.allocate(count * heads * headDim)
      const at = (array: Float32Array | Int32Array) => array.byteOffset / 4
      block.set([
        heads,
        heads,
        headDim,
        capacity,
        projectedWidth,
        -1,
        1,
        at(projected),
        at(keys),
        at(values),
        at(scores),
        at(attended),
        at(angles[0]),
        at(angles[1]),
        -1,
        -1,
        at(slots),
        at(positions),
      ])
      block[attendSlots.tables] = at(tables)
      block[attendSlots.tableWidth] = 1
      block[attendSlots.scoreStride] = capacity
      block[attendSlots.partial] = at(partial)
      new Float64Array(block.buffer, block.byteOffset + attendSlots.epsilon * 4, 1)[0] = 1e-6
      const fill = (step: number) => {
        projected.forEach((_, index) => (projected[index] = Math.sin(index * 0.7 + step)))
        angles[0].forEach((_, index) => (angles[0][index] = Math.cos(index * 0.3)))
        angles[1].forEach((_, index) => (angles[1][index] = Math.sin(index * 0.3)))
        slots.forEach((_, index) => (slots[index] = index))
        positions.fill(step % capacity)
      }
      return { block, attended, fill, keys: at(keys) }
    }
    const shared = setUp(arena)
    const alone = setUp(single)
    try {
      for (let step = 0; step < 200 && arena.helperAttentionChunks === 0; step++) {
        shared.fill(step)
        arena.attend('rows', shared.block, count)
        await sleep(2)
      }
      expect(arena.helperAttentionChunks).toBeGreaterThan(0)
      // Keys far outside the memory: the kernel traps on whichever thread runs a row.
      shared.block[attendSlots.keys] = 1 << 28
      for (let attempt = 0; attempt < 5; attempt++) expect(() => arena.attend('rows', shared.block, count)).toThrow()
      shared.block[attendSlots.keys] = shared.keys
      for (let step = 0; step < 6; step++) {
        shared.fill(step)
        alone.fill(step)
        arena.attend('rows', shared.block, count)
        single.attend('rows', alone.block, count)
        expect(shared.attended).toEqual(alone.attended)
      }
    } finally {
      arena.dispose()
      single.dispose()
    }
  })
})
