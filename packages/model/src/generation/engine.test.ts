import { createRandom, InvalidArgumentError } from '@ludic/core'
import { createByteTokenizer } from '@ludic/core/test'
import * as tf from '@tensorflow/tfjs-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { CausalLanguageModel } from '../model/causal-language-model.js'
import { createModel } from '../model/create-model.js'
import { initTestBackend } from '../test/init-test-backend.js'
import { GenerationEngine, type EngineSequence } from './engine.js'
import { generate, type GenerationRow } from './generate.js'

beforeAll(initTestBackend)

const vocabSize = 259

function row(prompt: readonly number[], options: { maxNewTokens?: number; temperature?: number; seed?: number; stop?: number[] } = {}): GenerationRow {
  return {
    promptIds: Int32Array.from(prompt),
    sampling: { temperature: options.temperature ?? 1, topK: 0, topP: 1, minP: 0 },
    maxNewTokens: options.maxNewTokens ?? 8,
    stopTokenIds: new Set(options.stop ?? []),
    stopStrings: [],
    random: createRandom(options.seed ?? 0),
  }
}

const prompt = (length: number, salt: number) => Array.from({ length }, (_, index) => (index * 37 + salt * 11 + 5) % vocabSize)
const plain = (sequence: EngineSequence) => ({ tokens: [...sequence.tokenIds], logprobs: [...sequence.logprobs], finishReason: sequence.finishReason })

describe('GenerationEngine', () => {
  let model: CausalLanguageModel
  let numTensors: number
  beforeAll(() => {
    numTensors = tf.memory().numTensors
    model = createModel('tiny', {
      vocabSize,
      seed: 5,
      overrides: { hiddenSize: 32, numAttentionHeads: 4, numKeyValueHeads: 2, intermediateSize: 64, initializerRange: 0.3, maxPositionEmbeddings: 512 },
    })
  })
  afterAll(() => {
    model.dispose()
    expect(tf.memory().numTensors).toBe(numTensors)
  })

  it("gives generate()'s greedy tokens, and log-probabilities to float32 rounding", async () => {
    const prompts = [prompt(5, 1), prompt(1, 2), prompt(17, 3), prompt(9, 4)]
    const engine = new GenerationEngine(model, { maxSequenceLength: 64 })
    try {
      const results = await Promise.all(prompts.map((ids) => engine.submit(row(ids, { temperature: 0, maxNewTokens: 12 }))))
      for (const [index, ids] of prompts.entries()) {
        const [reference] = await generate(model, { inputIds: [ids], maxNewTokens: 12, temperature: 0, stopTokenIds: [], decodePath: 'layers' })
        expect([...results[index]!.tokenIds]).toEqual([...reference!.tokenIds])
        results[index]!.logprobs.forEach((logprob, position) => expect(Math.abs(logprob - reference!.logprobs[position]!)).toBeLessThan(1e-4))
      }
    } finally {
      engine.dispose()
    }
  })

  it("gives a request the same samples, bit for bit, alone, among others, chunked, from another row's prefix, or on two threads", async () => {
    const request = () => row(prompt(23, 7), { seed: 42, maxNewTokens: 20 })
    const alone = new GenerationEngine(model, { maxSequenceLength: 64, prefixCaching: false })
    const crowded = new GenerationEngine(model, { maxSequenceLength: 64, maxRows: 6 })
    const chunked = new GenerationEngine(model, { maxSequenceLength: 64, prefillChunkTokens: 3, prefixCaching: false })
    try {
      const reference = plain(await alone.submit(request()))
      const others = [0, 1, 2, 3].map((index) => crowded.submit(row(prompt(4 + 5 * index, index), { seed: index, maxNewTokens: 3 + 7 * index })))
      const amid = crowded.submit(request())
      expect(plain(await amid)).toEqual(reference)
      await Promise.all(others)
      const shared = await crowded.submit(request()) // from the finished row's prefix
      expect(shared.reusedPromptTokens).toBe(22)
      expect(plain(shared)).toEqual(reference)
      expect(plain(await chunked.submit(request()))).toEqual(reference)
      const threaded = new GenerationEngine(model, { maxSequenceLength: 64, threads: 2 })
      try {
        expect(plain(await threaded.submit(request()))).toEqual(reference)
      } finally {
        threaded.dispose()
      }
    } finally {
      alone.dispose()
      crowded.dispose()
      chunked.dispose()
    }
  })

  it("runs the weight products on the backend (products: 'backend'): a request's samples the same, bit for bit, alone, among others, chunked or from another row's prefix; the tensors freed", async () => {
    const before = tf.memory().numTensors
    const options = { maxSequenceLength: 64, products: 'backend' } as const
    const request = () => row(prompt(23, 7), { seed: 42, maxNewTokens: 20 })
    const alone = new GenerationEngine(model, { ...options, prefixCaching: false })
    const crowded = new GenerationEngine(model, { ...options, maxRows: 6 })
    const chunked = new GenerationEngine(model, { ...options, prefillChunkTokens: 3, prefixCaching: false })
    try {
      const reference = plain(await alone.submit(request()))
      const host = new GenerationEngine(model, { maxSequenceLength: 64, prefixCaching: false })
      try {
        // The same model up to float32 rounding: the host's greedy tokens (sampled ones may part where two are near).
        const greedy = row(prompt(23, 7), { temperature: 0, maxNewTokens: 20 })
        const [onHost, onBackend] = [await host.submit(greedy), await alone.submit(greedy)]
        expect(onBackend.tokenIds).toEqual(onHost.tokenIds)
        onBackend.logprobs.forEach((logprob, index) => expect(logprob).toBeCloseTo(onHost.logprobs[index]!, 4))
      } finally {
        host.dispose()
      }
      const others = [0, 1, 2, 3].map((index) => crowded.submit(row(prompt(4 + 5 * index, index), { seed: index, maxNewTokens: 3 + 7 * index })))
      expect(plain(await crowded.submit(request()))).toEqual(reference)
      await Promise.all(others)
      const shared = await crowded.submit(request()) // from the finished row's prefix
      expect(shared.reusedPromptTokens).toBe(22)
      expect(plain(shared)).toEqual(reference)
      expect(plain(await chunked.submit(request()))).toEqual(reference)
      const during = tf.memory().numTensors // each engine's weights on the backend
      expect(plain(await alone.submit(request()))).toEqual(reference)
      expect(plain(await crowded.submit(request()))).toEqual(reference)
      expect(tf.memory().numTensors).toBe(during) // nothing held per request or step
    } finally {
      alone.dispose()
      crowded.dispose()
      chunked.dispose()
    }
    expect(tf.memory().numTensors).toBe(before) // freed by dispose, at once
  })

  it("products: 'backend' at a real model's MLP shape (1,536 → 128, where oneDNN sums one row apart from two): a request's samples the same alone or among others, bit for bit", async () => {
    const wide = createModel('tiny', {
      vocabSize,
      seed: 5,
      overrides: { hiddenSize: 128, intermediateSize: 1536, numHiddenLayers: 1, maxPositionEmbeddings: 64 },
    })
    const alone = new GenerationEngine(wide, { maxSequenceLength: 64, products: 'backend', prefixCaching: false })
    const crowded = new GenerationEngine(wide, { maxSequenceLength: 64, products: 'backend', maxRows: 6 })
    try {
      const request = () => row(prompt(9, 3), { seed: 7, maxNewTokens: 12 })
      const reference = plain(await alone.submit(request()))
      const others = [0, 1, 2].map((index) => crowded.submit(row(prompt(5 + index, index), { seed: index, maxNewTokens: 4 + 6 * index })))
      expect(plain(await crowded.submit(request()))).toEqual(reference)
      await Promise.all(others)
    } finally {
      alone.dispose()
      crowded.dispose()
      wide.dispose()
    }
  })

  it("computes a group's shared prompt once (a GRPO group of 8) and reuses a multi-turn episode's conversation", async () => {
    const engine = new GenerationEngine(model, { maxSequenceLength: 128, maxRows: 9 })
    try {
      const busy = engine.submit(row(prompt(3, 99), { maxNewTokens: 30 })) // the loop runs: the group is admitted in one iteration
      await new Promise((resolve) => setImmediate(resolve))
      const groupPrompt = prompt(40, 9)
      const group = await Promise.all(Array.from({ length: 8 }, (_, index) => engine.submit(row(groupPrompt, { seed: index, maxNewTokens: 6 }))))
      await busy
      const stats = engine.stats()
      expect(stats.promptTokens).toBe(3 + 8 * 40)
      expect(stats.reusedPromptTokens).toBe(7 * 39)
      expect(stats.computedTokens).toBe(2 + 39 + 30 + 8 * 6) // prompts (less their last token) once, then every fed token
      expect(group.map((sequence) => sequence.reusedPromptTokens)).toEqual([0, 39, 39, 39, 39, 39, 39, 39])
      // The next turn: the conversation so far plus new tokens.
      const first = group[3]!
      const next = [...groupPrompt, ...first.tokenIds, 17, 18, 19]
      const turn = await engine.submit(row(next, { seed: 3, maxNewTokens: 4 }))
      expect(turn.reusedPromptTokens).toBe(40 + first.tokenIds.length - 1) // the last sampled token was never fed
      const fresh = new GenerationEngine(model, { maxSequenceLength: 128, prefixCaching: false })
      try {
        expect(plain(turn)).toEqual(plain(await fresh.submit(row(next, { seed: 3, maxNewTokens: 4 }))))
      } finally {
        fresh.dispose()
      }
    } finally {
      engine.dispose()
    }
  })

  /** Samples engine stats every turn of the event loop (the engine yields between iterations) until stopped. */
  function watch(engine: GenerationEngine) {
    const seen = { pagesInUse: 0, running: 0, looks: 0, unaccounted: 0 }
    let on = true
    const look = () => {
      const stats = engine.stats()
      const inUse = Math.round(stats.kvUsage * stats.pages)
      seen.pagesInUse = Math.max(seen.pagesInUse, inUse)
      seen.running = Math.max(seen.running, stats.running)
      seen.looks++
      // Every page is held by a running request, by the tree alone (evictable), or free.
      if (inUse + stats.cachedPages + stats.freePages !== stats.pages) seen.unaccounted++
      if (on) setImmediate(look)
    }
    look()
    return {
      seen,
      stop: () => {
        on = false
      },
    }
  }

  /** A page's bytes, computed here apart from the engine's `kvPageBytes`: keys and values, float32, every layer. */
  const pageBytesOf = (pageTokens: number) => {
    const { numHiddenLayers, numKeyValueHeads, headDim } = model.config
    return 2 * 4 * numHiddenLayers * numKeyValueHeads * headDim * pageTokens
  }

  /**
   * An engine of `pages` pages of `pageTokens` positions (`options` besides), an engine of the same settings without
   * prefix caching as the reference, and a watcher of the first; `close` ends all three.
   */
  function budgeted(pages: number, pageTokens: number, options: { maxSequenceLength: number; maxRows: number; prefillChunkTokens?: number }) {
    const kvCacheBytes = pages * pageBytesOf(pageTokens)
    const engine = new GenerationEngine(model, { ...options, pageTokens, kvCacheBytes })
    const reference = new GenerationEngine(model, { maxSequenceLength: options.maxSequenceLength, pageTokens, prefixCaching: false })
    const watcher = watch(engine)
    return {
      engine,
      reference,
      watcher,
      close: () => {
        watcher.stop()
        engine.dispose()
        reference.dispose()
      },
    }
  }

  it("holds a group's shared prompt in pages once: G samples take its whole pages once, each its own partial page and new tokens", async () => {
    const engine = new GenerationEngine(model, { maxSequenceLength: 128, maxRows: 8, pageTokens: 8 })
    const groupPrompt = prompt(45, 4) // 44 positions before the last token: 5 whole pages and 4 positions of a sixth
    const watcher = watch(engine)
    try {
      const group = await Promise.all(Array.from({ length: 8 }, (_, index) => engine.submit(row(groupPrompt, { seed: index, maxNewTokens: 6 }))))
      watcher.stop()
      expect(watcher.seen.unaccounted).toBe(0)
      expect(group.map((sequence) => sequence.reusedPromptTokens)).toEqual([0, 44, 44, 44, 44, 44, 44, 44])
      // 45 + 6 - 1 = 50 positions each: 5 shared pages, then pages 6 and 7 of its own (copied 4 positions, then its tokens).
      expect(watcher.seen.pagesInUse).toBeGreaterThanOrEqual(5 + 2 * 2)
      expect(watcher.seen.pagesInUse).toBeLessThanOrEqual(5 + 8 * 2) // unshared: 8 × 7 = 56
      const stats = engine.stats()
      expect(stats.kvUsage).toBe(0)
      expect(stats.cachedTokens).toBeGreaterThanOrEqual(44 + 8 * 5) // the prompt's pages once, each sample's own last page
      // Each sample as it runs alone, bit for bit (attention sums a row's pages in order, shared or not).
      const alone = new GenerationEngine(model, { maxSequenceLength: 128, pageTokens: 8, prefixCaching: false })
      try {
        for (const index of [0, 5]) expect(plain(group[index]!)).toEqual(plain(await alone.submit(row(groupPrompt, { seed: index, maxNewTokens: 6 }))))
      } finally {
        alone.dispose()
      }
    } finally {
      watcher.stop()
      engine.dispose()
    }
  })

  it('admits requests as their pages fit the KV budget, evicts the least recently used cached pages, and loses no request', async () => {
    const pageBytes = pageBytesOf(8)
    // 12 pages of 8 positions; a request of 20 + 20 tokens takes ceil(39 / 8) = 5: two run at once.
    const engine = new GenerationEngine(model, { maxSequenceLength: 64, maxRows: 6, pageTokens: 8, kvCacheBytes: 12 * pageBytes })
    expect(engine.pages).toBe(12)
    const reference = new GenerationEngine(model, { maxSequenceLength: 64, pageTokens: 8, prefixCaching: false })
    const watcher = watch(engine)
    try {
      const requests = [0, 1, 2, 3, 4].map((index) => row(prompt(20, 30 + index), { seed: index, maxNewTokens: 20 }))
      const results = await Promise.all(requests.map((request) => engine.submit(request)))
      watcher.stop()
      expect(watcher.seen.unaccounted).toBe(0)
      expect(watcher.seen.running).toBe(2)
      expect(watcher.seen.pagesInUse).toBeLessThanOrEqual(12)
      for (const [index, result] of results.entries()) {
        expect(result.tokenIds).toHaveLength(20)
        expect(plain(result)).toEqual(plain(await reference.submit(row(prompt(20, 30 + index), { seed: index, maxNewTokens: 20 }))))
      }
      // The last request's conversation is still cached (most recently used); the first's pages went to the later ones.
      const last = results[4]!
      const next = await engine.submit(row([...prompt(20, 34), ...last.tokenIds, 7], { seed: 9, maxNewTokens: 3 }))
      expect(next.reusedPromptTokens).toBe(20 + 20 - 1)
      const first = await engine.submit(row([...prompt(20, 30), 7], { seed: 9, maxNewTokens: 3 }))
      expect(first.reusedPromptTokens).toBe(0)
      expect(engine.stats().cachedPages).toBeLessThanOrEqual(12)
    } finally {
      watcher.stop()
      engine.dispose()
      reference.dispose()
    }
  })

  it('keeps its pages accounted under pressure: 48 requests sharing prefixes, some aborted, under a budget of 30 pages of 4', async () => {
    const { engine, reference, watcher, close } = budgeted(30, 4, { maxSequenceLength: 48, maxRows: 5, prefillChunkTokens: 7 })
    const random = createRandom(11)
    const pick = (count: number) => random.nextInt(count)
    const bases = [prompt(13, 1), prompt(6, 2), prompt(21, 3)]
    try {
      const requests = Array.from({ length: 48 }, (_, index) => {
        const base = bases[pick(bases.length)]!
        const ids = [...base.slice(0, 1 + pick(base.length)), ...prompt(pick(6), 50 + index)]
        return { ids, maxNewTokens: 1 + pick(12), seed: index, abortAfter: pick(4) === 0 ? 1 + pick(30) : undefined }
      })
      const outcomes = await Promise.all(
        requests.map(async ({ ids, maxNewTokens, seed, abortAfter }, index) => {
          await new Promise((resolve) => setTimeout(resolve, pick(3) * index)) // in waves
          const controller = new AbortController()
          if (abortAfter !== undefined) {
            let turns = abortAfter
            const tick = () => (--turns === 0 ? controller.abort(new Error('stop')) : setImmediate(tick))
            setImmediate(tick)
          }
          return engine.submit(row(ids, { seed, maxNewTokens }), { signal: controller.signal }).catch((error: Error) => error)
        }),
      )
      watcher.stop()
      expect(watcher.seen.unaccounted).toBe(0)
      const finished = outcomes.filter((outcome) => !(outcome instanceof Error))
      expect(finished.length).toBeGreaterThan(24)
      expect(outcomes.filter((outcome) => outcome instanceof Error).every((error) => (error as Error).message === 'stop')).toBe(true)
      for (const [index, outcome] of outcomes.entries()) {
        if (outcome instanceof Error) continue
        const { ids, maxNewTokens, seed } = requests[index]!
        expect(plain(outcome)).toEqual(plain(await reference.submit(row(ids, { seed, maxNewTokens }))))
      }
      const stats = engine.stats()
      expect(stats.reusedPromptTokens).toBeGreaterThan(0)
      expect(stats.kvUsage).toBe(0)
      expect(stats.cachedPages + stats.freePages).toBe(30)
      expect(watcher.seen.looks).toBeGreaterThan(20)
    } finally {
      close()
    }
  })

  it("moves a follower onto the tree's page when it completes one another request holds: no page outside the tree, every page accounted under eviction", async () => {
    const { engine, reference, watcher, close } = budgeted(16, 4, { maxSequenceLength: 32, maxRows: 4 })
    try {
      // 8 prompt tokens: the followers copy 3 positions of page 1, then complete it as the first does. The first ends
      // early, the others run on while distinct requests evict what only the tree holds.
      const ids = prompt(8, 7)
      const group = [2, 14, 14].map((maxNewTokens, seed) => engine.submit(row(ids, { seed, maxNewTokens })))
      const others = [0, 1, 2, 3, 4, 5].map((index) => engine.submit(row(prompt(9, 60 + index), { seed: index, maxNewTokens: 9 })))
      const results = await Promise.all([...group, ...others])
      watcher.stop()
      expect(watcher.seen.unaccounted).toBe(0)
      const expected = [
        ...[2, 14, 14].map((maxNewTokens, seed) => row(ids, { seed, maxNewTokens })),
        ...[0, 1, 2, 3, 4, 5].map((index) => row(prompt(9, 60 + index), { seed: index, maxNewTokens: 9 })),
      ]
      for (const [index, result] of results.entries()) expect(plain(result)).toEqual(plain(await reference.submit(expected[index]!)))
      const stats = engine.stats()
      expect(stats.kvUsage).toBe(0)
      expect(stats.cachedPages + stats.freePages).toBe(16) // none lost outside the tree
    } finally {
      close()
    }
  })

  it("keeps a follower on the tree's page it completed: that page is not evicted under it while it runs", async () => {
    const { engine, reference, watcher, close } = budgeted(9, 4, { maxSequenceLength: 32, maxRows: 4 })
    try {
      // A and B share an 8-token prompt: B copies 3 positions of A's page 1, and both complete it at position 7, so B
      // finds A's page in the tree. A ends after 2 tokens; C then needs every page the tree alone holds while B runs.
      const ids = prompt(8, 12)
      const a = engine.submit(row(ids, { seed: 1, maxNewTokens: 2 }))
      const b = engine.submit(row(ids, { seed: 2, maxNewTokens: 14 }))
      const first = await a
      const c = engine.submit(row(prompt(5, 13), { seed: 3, maxNewTokens: 8 }))
      const [second, third] = await Promise.all([b, c])
      watcher.stop()
      expect(watcher.seen.unaccounted).toBe(0)
      expect(second.reusedPromptTokens).toBe(7)
      expect(plain(first)).toEqual(plain(await reference.submit(row(ids, { seed: 1, maxNewTokens: 2 }))))
      expect(plain(second)).toEqual(plain(await reference.submit(row(ids, { seed: 2, maxNewTokens: 14 }))))
      expect(plain(third)).toEqual(plain(await reference.submit(row(prompt(5, 13), { seed: 3, maxNewTokens: 8 }))))
      const stats = engine.stats()
      expect(stats.cachedPages + stats.freePages).toBe(9)
    } finally {
      close()
    }
  })

  it("survives an abort after new weights while pages are shared, and an abort from the request's own onText", async () => {
    const tokenizer = createByteTokenizer()
    const engine = new GenerationEngine(model, { maxSequenceLength: 64, maxRows: 4, pageTokens: 4, prefillChunkTokens: 6, tokenizer })
    const other = createModel('tiny', {
      vocabSize,
      seed: 8,
      overrides: { hiddenSize: 32, numAttentionHeads: 4, numKeyValueHeads: 2, intermediateSize: 64, initializerRange: 0.3, maxPositionEmbeddings: 512 },
    })
    const saved = new Map([...model.parameters()].map(([name, tensor]) => [name, tf.clone(tensor)]))
    try {
      const ids = prompt(12, 3)
      const controller = new AbortController()
      const first = engine.submit(row(ids, { maxNewTokens: 30 }), { signal: controller.signal }).catch((error: Error) => error)
      const second = engine.submit(row([...ids, 1, 2], { maxNewTokens: 30 })) // shares the first's whole pages
      // New weights once both run, then the first aborted after its first chunk on them (the second not recomputed yet).
      await new Promise<void>((resolve) => {
        let swapped = false
        const poll = () => {
          if (!swapped && engine.stats().generatedTokens >= 2) {
            for (const [name, tensor] of model.parameters()) (tensor as tf.Variable).assign(other.parameter(name))
            swapped = true
          } else if (swapped && engine.weightsVersion === 1) {
            // The first has recomputed one chunk (6 positions: page 0 and half of page 1, which the second shares).
            controller.abort(new Error('stop'))
            resolve()
            return
          }
          setImmediate(poll)
        }
        setImmediate(poll)
      })
      expect(await first).toBeInstanceOf(Error)
      const continued = await second
      expect(continued.tokenIds).toHaveLength(30)
      expect(continued.weightsVersions.includes(1)).toBe(true)
      // An onText that aborts its own request, on a middle piece and on the last (maxNewTokens 1): rejected once, its
      // pages released once.
      for (const maxNewTokens of [3, 1]) {
        const own = new AbortController()
        let pieces = 0
        const streamed = engine.submit(row(ids, { seed: 20 + maxNewTokens, maxNewTokens }), {
          signal: own.signal,
          onText: () => {
            pieces++
            own.abort(new Error('enough'))
          },
        })
        await expect(streamed).rejects.toThrow('enough')
        expect(pieces).toBe(1)
      }
      const after = await engine.submit(row([...ids, 5], { seed: 4, maxNewTokens: 5 }))
      expect(after.tokenIds).toHaveLength(5)
      const stats = engine.stats()
      expect(stats.kvUsage).toBe(0)
      expect(stats.cachedPages + stats.freePages).toBe(stats.pages)
      expect(stats.finished + stats.aborted).toBe(stats.requests)
    } finally {
      for (const [name, tensor] of model.parameters()) (tensor as tf.Variable).assign(saved.get(name)!)
      tf.dispose([...saved.values()])
      other.dispose()
      engine.dispose()
    }
  })

  it('shares a prefix that ends inside a page: its whole pages shared, the rest copied, the same samples as computed', async () => {
    const engine = new GenerationEngine(model, { maxSequenceLength: 96, pageTokens: 8 })
    const fresh = new GenerationEngine(model, { maxSequenceLength: 96, pageTokens: 8, prefixCaching: false })
    try {
      const base = prompt(30, 6)
      await engine.submit(row(base, { maxNewTokens: 2 }))
      // Diverges at position 19 (page 2, after 3 of its positions), and at 16 (a page boundary).
      for (const at of [19, 16, 3]) {
        const other = [...base.slice(0, at), 1, 2, 3, 4, 5]
        const result = await engine.submit(row(other, { seed: at, maxNewTokens: 5 }))
        expect(result.reusedPromptTokens).toBe(at)
        expect(plain(result)).toEqual(plain(await fresh.submit(row(other, { seed: at, maxNewTokens: 5 }))))
      }
    } finally {
      engine.dispose()
      fresh.dispose()
    }
  })

  it("computes prompts on the backend (prefill: 'backend') as on the host: same greedy tokens, log-probs to float32 rounding", async () => {
    const run = async (prefill: 'host' | 'backend') => {
      const engine = new GenerationEngine(model, { maxSequenceLength: 128, maxRows: 6, prefill, prefillChunkTokens: 16 })
      const before = tf.memory().numTensors
      try {
        const shared = prompt(20, 3)
        const first = await Promise.all([
          engine.submit(row(shared, { temperature: 0, maxNewTokens: 6 })),
          engine.submit(row([...shared, 1, 2, 3], { temperature: 0, maxNewTokens: 6 })), // follows the first's prefix
          engine.submit(row(prompt(37, 4), { temperature: 0, maxNewTokens: 6 })), // chunked: 16 a step
          engine.submit(row(prompt(2, 5), { temperature: 0, maxNewTokens: 6 })),
        ])
        // A next turn from the first's conversation: held positions with a gap to the longest row's.
        const next = await Promise.all([
          engine.submit(row([...shared, ...first[0]!.tokenIds, 9, 8], { temperature: 0, maxNewTokens: 5 })),
          engine.submit(row(prompt(30, 6), { temperature: 0, maxNewTokens: 5 })),
        ])
        expect(tf.memory().numTensors).toBe(before)
        return { sequences: [...first, ...next], stats: engine.stats() }
      } finally {
        engine.dispose()
      }
    }
    const host = await run('host')
    const backend = await run('backend')
    expect(backend.stats.reusedPromptTokens).toBe(host.stats.reusedPromptTokens)
    expect(backend.stats.reusedPromptTokens).toBeGreaterThan(19 + 20)
    backend.sequences.forEach((sequence, index) => {
      expect([...sequence.tokenIds]).toEqual([...host.sequences[index]!.tokenIds])
      sequence.logprobs.forEach((logprob, position) => expect(Math.abs(logprob - host.sequences[index]!.logprobs[position]!)).toBeLessThan(1e-4))
    })
  })

  it('lets short requests finish while a long one runs, and admits them as rows free up', async () => {
    const engine = new GenerationEngine(model, { maxSequenceLength: 256, maxRows: 3 })
    try {
      const order: string[] = []
      const long = engine.submit(row(prompt(6, 1), { maxNewTokens: 200 })).then(() => order.push('long'))
      const shorts = Array.from({ length: 8 }, (_, index) =>
        engine.submit(row(prompt(3 + index, index), { maxNewTokens: 4, seed: index })).then(() => order.push(`short${index}`)),
      )
      await Promise.all([long, ...shorts])
      expect(order[order.length - 1]).toBe('long')
      const stats = engine.stats()
      expect(stats.finished).toBe(9)
      expect(stats.decodeSteps).toBe(200) // the shorts ran beside the long one, two rows at a time
      expect(stats.running).toBe(0)
    } finally {
      engine.dispose()
    }
  })

  it('frees an aborted request at once and rejects it with the reason; the others finish', async () => {
    const engine = new GenerationEngine(model, { maxSequenceLength: 256, maxRows: 2 })
    try {
      const controller = new AbortController()
      let pieces = 0
      const aborted = engine.submit(row(prompt(4, 1), { maxNewTokens: 200 }), { signal: controller.signal })
      const other = engine.submit(row(prompt(4, 2), { maxNewTokens: 30 }))
      const waiting = engine.submit(row(prompt(4, 3), { maxNewTokens: 5 }))
      const timer = setInterval(() => {
        if (++pieces === 3) controller.abort(new Error('caller left'))
      }, 1)
      await expect(aborted).rejects.toThrow('caller left')
      clearInterval(timer)
      expect((await other).tokenIds.length).toBe(30)
      expect((await waiting).tokenIds.length).toBe(5)
      expect(engine.stats().aborted).toBe(1)
      const queued = new AbortController()
      queued.abort(new Error('never mind'))
      await expect(engine.submit(row(prompt(4, 4)), { signal: queued.signal })).rejects.toThrow('never mind')
    } finally {
      engine.dispose()
    }
  })

  it('continues running sequences on new weights (partial rollouts), tagging each token with its weights version', async () => {
    const engine = new GenerationEngine(model, { maxSequenceLength: 128, maxRows: 2 })
    const other = createModel('tiny', {
      vocabSize,
      seed: 6,
      overrides: { hiddenSize: 32, numAttentionHeads: 4, numKeyValueHeads: 2, intermediateSize: 64, initializerRange: 0.3, maxPositionEmbeddings: 512 },
    })
    const saved = new Map([...model.parameters()].map(([name, tensor]) => [name, tf.clone(tensor)]))
    try {
      const ids = prompt(7, 2)
      let produced = 0
      let swapped = false
      const running = engine.submit(row(ids, { temperature: 0, maxNewTokens: 40 }))
      // Polled once per event-loop turn (setImmediate, as the engine yields between iterations), not by a timer: a 1 ms
      // timer could first fire after all 40 tokens on a fast or a loaded machine, and then no token ran on new weights.
      await new Promise<void>((resolve) => {
        const poll = () => {
          produced = engine.stats().generatedTokens
          if (produced >= 5 && !swapped) {
            swapped = true
            for (const [name, tensor] of model.parameters()) (tensor as tf.Variable).assign(other.parameter(name))
            resolve()
          } else setImmediate(poll)
        }
        setImmediate(poll)
      })
      const sequence = await running
      const versions = [...sequence.weightsVersions]
      const switchAt = versions.indexOf(1)
      expect(switchAt).toBeGreaterThan(0)
      expect(versions.slice(0, switchAt).every((version) => version === 0)).toBe(true)
      expect(versions.slice(switchAt).every((version) => version === 1)).toBe(true)
      expect(engine.weightsVersion).toBe(1)
      // After the switch: what the new weights give greedily from the prompt and the tokens before it.
      const [continued] = await generate(model, {
        inputIds: [[...ids, ...sequence.tokenIds.slice(0, switchAt)]],
        maxNewTokens: 40 - switchAt,
        temperature: 0,
        stopTokenIds: [],
        decodePath: 'layers',
      })
      expect([...sequence.tokenIds.slice(switchAt)]).toEqual([...continued!.tokenIds])
    } finally {
      engine.dispose()
      for (const [name, tensor] of saved) (model.parameter(name) as tf.Variable).assign(tensor)
      tf.dispose([...saved.values()])
      other.dispose()
    }
  })

  it("runs GPT-2: generate()'s greedy tokens (every step's logits: every-architecture.test.ts)", async () => {
    const gpt2 = createModel('tiny', { vocabSize, seed: 1, overrides: { architecture: 'gpt2', hiddenSize: 32, intermediateSize: 64, initializerRange: 0.3 } })
    const engine = new GenerationEngine(gpt2, { maxSequenceLength: 32 })
    try {
      const [result, [reference]] = await Promise.all([
        engine.submit(row(prompt(6, 2), { temperature: 0, maxNewTokens: 8 })),
        generate(gpt2, { inputIds: [prompt(6, 2)], maxNewTokens: 8, temperature: 0, stopTokenIds: [], decodePath: 'layers' }),
      ])
      expect([...result.tokenIds]).toEqual([...reference!.tokenIds])
    } finally {
      engine.dispose()
      gpt2.dispose()
    }
  })

  it('sizes its default pool to its rows twice over, at most 256 MiB', () => {
    const pageBytes = pageBytesOf(8)
    const small = new GenerationEngine(model, { maxRows: 3, maxSequenceLength: 64, pageTokens: 8 })
    const large = new GenerationEngine(model, { maxRows: 1024, maxSequenceLength: 512, pageTokens: 8 })
    const given = new GenerationEngine(model, { maxRows: 3, maxSequenceLength: 64, pageTokens: 8, kvCacheBytes: 100 * pageBytes })
    try {
      expect(small.pages).toBe(2 * 3 * 8)
      expect(large.pages).toBe(Math.floor(2 ** 28 / pageBytes))
      expect(given.pages).toBe(100)
    } finally {
      for (const engine of [small, large, given]) engine.dispose()
    }
  })

  it('refuses what it cannot run when built or submitted, by name', async () => {
    expect(() => new GenerationEngine(model, { kvCacheBytes: 100 })).toThrow(InvalidArgumentError)
    expect(() => new GenerationEngine(model, { pageTokens: 6 })).toThrow(/options\.pageTokens.*multiple of 4/)
    expect(() => new GenerationEngine(model, { maxSequenceLength: 64, pageTokens: 8, kvCacheBytes: 2 ** 12 })).toThrow(
      /options\.kvCacheBytes.*holds no sequence of maxSequenceLength: 64 positions take 8 pages/,
    )
    expect(() => new GenerationEngine(model, { maxRows: 0 })).toThrow(/maxRows/)
    const engine = new GenerationEngine(model, { maxSequenceLength: 32 })
    try {
      await expect(engine.submit(row(prompt(30, 1), { maxNewTokens: 8 }))).rejects.toThrow(/row.maxNewTokens.*exceed the engine's 32 positions/)
      await expect(engine.submit(row([1, 2, vocabSize]))).rejects.toThrow(/row.promptIds\[2\]/)
      await expect(engine.submit(row([]))).rejects.toThrow(/at least one token/)
      await expect(engine.submit(row([1], { maxNewTokens: 0 }))).rejects.toThrow(/row\.maxNewTokens.*positive integer/)
      await expect(engine.submit({ ...row([1]), minNewTokens: 9 })).rejects.toThrow(/row\.minNewTokens/)
    } finally {
      engine.dispose()
    }
    await expect(engine.submit(row([1]))).rejects.toThrow(/disposed/)
  })
})
