import { join } from 'node:path'
import type { Completion, GenerationRequest, PolicyV1 } from '@ludic/core'
import { applyLora, createLocalPolicy, saveLoraAdapter } from '@ludic/model'
import * as tf from '@tensorflow/tfjs-core'
import { describe, expect, it } from 'vitest'
import { createLocalLoraAdapters, type LocalLoraAdapters } from './local-lora-adapters.js'
import { createTestModel, tokenizer, useBackendAndDirectory } from './test/support.js'

const temporaryDirectory = useBackendAndDirectory('ludic-local-lora-')

/** Saves a rank-2 adapter of `createTestModel(1)` to `directory`, B drawn at random (it changes the answers), seeded. */
async function saveAdapter(directory: string, seed: number): Promise<string> {
  const model = createTestModel(1)
  try {
    const adapters = applyLora(model, { rank: 2, alpha: 4, seed })
    for (const [name, variable] of adapters.parameters()) {
      if (name.endsWith('lora_B.weight')) tf.tidy(() => variable.assign(tf.randomNormal(variable.shape, 0, 0.5, 'float32', seed)))
    }
    await saveLoraAdapter(adapters, directory)
    return directory
  } finally {
    model.dispose()
  }
}

/** Lets every pending callback run (promise continuations and the turns started by them). */
const settle = async () => {
  for (let round = 0; round < 3; round++) await new Promise((resolve) => setImmediate(resolve))
}

/**
 * A generating policy that holds each `generate` until the test releases it, recording the adapter attached when it
 * started, and the most calls running at once. `engine`: it has `engineStats()` (as a policy on an engine).
 */
function gatedPolicy(adapters: () => LocalLoraAdapters, options: { engine?: boolean; metrics?: () => Record<string, number> } = {}) {
  const started: { prompt: string; attached: string | undefined; release: () => void }[] = []
  let running = 0
  let most = 0
  const policy: PolicyV1 & { engineStats?: () => unknown; metrics?: () => Record<string, number> } = {
    specificationVersion: 'v1',
    id: 'gated',
    ...(options.engine === true ? { engineStats: () => ({ rows: 8 }) } : {}),
    ...(options.metrics === undefined ? {} : { metrics: options.metrics }),
    async generate(requests: readonly GenerationRequest[]): Promise<Completion[]> {
      running++
      most = Math.max(most, running)
      await new Promise<void>((release) => started.push({ prompt: requests[0]!.prompt as string, attached: adapters().attached?.split('#')[0], release }))
      running--
      return requests.map(() => ({
        text: '',
        promptTokenIds: new Int32Array(0),
        tokenIds: new Int32Array(0),
        logprobs: new Float32Array(0),
        finishReason: 'stop',
      }))
    },
  }
  const release = (prompt: string) => {
    const call = started.find((each) => each.prompt === prompt)
    if (call === undefined) throw new Error(`${prompt} did not start`)
    call.release()
  }
  return { policy, started: () => started.map((call) => `${call.prompt}@${call.attached ?? 'base'}`), release, most: () => most }
}

/** `createLocalLoraAdapters` over a test model and `gatedPolicy`, with adapters `a` and `b` loaded. */
async function gatedSetup(name: string, options: { engine?: boolean; concurrent?: boolean; metrics?: () => Record<string, number> } = {}) {
  const root = join(temporaryDirectory(), name)
  await saveAdapter(join(root, 'a'), 1)
  await saveAdapter(join(root, 'b'), 2)
  const model = createTestModel(1)
  let lora: LocalLoraAdapters | undefined
  const gated = gatedPolicy(() => lora!, options)
  lora = createLocalLoraAdapters(model, gated.policy, { roots: [root], ...(options.concurrent === undefined ? {} : { concurrent: options.concurrent }) })
  const signal = new AbortController().signal
  const a = await lora.loader.load({ name: 'a', path: join(root, 'a'), signal })
  const b = await lora.loader.load({ name: 'b', path: join(root, 'b'), signal })
  const ask = (policy: PolicyV1, prompt: string, abort?: AbortSignal) =>
    policy.generate([{ prompt, maxTokens: 1 }], abort === undefined ? {} : { signal: abort })
  return { model, lora, a, b, ask, ...gated }
}

describe('createLocalLoraAdapters: turns by adapter', () => {
  it('on an engine, runs the held adapter’s generations at once; another adapter’s wait for them, and newer ones queue behind it', async () => {
    const { model, lora, a, b, ask, started, release, most } = await gatedSetup('engine-turns', { engine: true })
    try {
      const answers = [ask(a, 'a1'), ask(a, 'a2')]
      await settle()
      expect(started()).toEqual(['a1@a', 'a2@a']) // together, adapter a attached
      answers.push(ask(b, 'b1'))
      answers.push(ask(a, 'a3')) // a is held, but b waits first: a3 queues behind b1
      answers.push(ask(lora.base, 'base1'))
      answers.push(ask(b, 'b2'))
      await settle()
      expect(started()).toEqual(['a1@a', 'a2@a'])
      expect(lora.turns()).toEqual({ running: 2, waiting: 4, swaps: 1 })
      release('a1')
      await settle()
      expect(started()).toHaveLength(2) // a2 still runs: no swap under it
      release('a2')
      await settle()
      // The next group: every waiting generation for the oldest waiting one's adapter, b.
      expect(started()).toEqual(['a1@a', 'a2@a', 'b1@b', 'b2@b'])
      release('b1')
      release('b2')
      await settle()
      expect(started().slice(4)).toEqual(['a3@a'])
      release('a3')
      await settle()
      expect(started().slice(5)).toEqual(['base1@base'])
      release('base1')
      expect(await Promise.all(answers)).toHaveLength(6)
      expect(most()).toBe(2)
      expect(lora.turns()).toEqual({ running: 0, waiting: 0, swaps: 4 })
    } finally {
      lora.dispose()
      model.dispose()
    }
  })

  it('without an engine (or with concurrent: false), one generation at a time in arrival order, as under one lock', async () => {
    for (const options of [{}, { engine: true, concurrent: false }]) {
      const { model, lora, a, b, ask, started, release, most } = await gatedSetup(`one-at-a-time-${Object.keys(options).length}`, options)
      try {
        const answers = [ask(a, 'a1'), ask(a, 'a2'), ask(b, 'b1'), ask(a, 'a3')]
        await settle()
        expect(started()).toEqual(['a1@a'])
        for (const [prompt, next] of [
          ['a1', 'a2@a'],
          ['a2', 'b1@b'],
          ['b1', 'a3@a'],
        ] as const) {
          release(prompt)
          await settle()
          expect(started().at(-1)).toBe(next)
        }
        release('a3')
        await Promise.all(answers)
        expect(most()).toBe(1)
      } finally {
        lora.dispose()
        model.dispose()
      }
    }
  })

  it('an aborted waiting generation leaves the queue at once (rejected with its reason); those behind it may then join', async () => {
    const { model, lora, a, b, ask, started, release } = await gatedSetup('abort', { engine: true })
    try {
      const first = ask(a, 'a1')
      await settle()
      const controller = new AbortController()
      const waiting = ask(b, 'b1', controller.signal)
      const behind = ask(a, 'a2') // queued behind b1
      await settle()
      expect(started()).toEqual(['a1@a'])
      controller.abort(new Error('client gone'))
      await expect(waiting).rejects.toThrow('client gone')
      await settle()
      expect(started()).toEqual(['a1@a', 'a2@a']) // no one waits for another adapter now: a2 joins the running group
      expect(lora.turns().waiting).toBe(0)
      const gone = new AbortController()
      gone.abort(new Error('already gone'))
      await expect(ask(b, 'b2', gone.signal)).rejects.toThrow('already gone')
      release('a1')
      release('a2')
      await Promise.all([first, behind])
      expect(started()).toEqual(['a1@a', 'a2@a']) // b1 and b2 never reached the policy
    } finally {
      lora.dispose()
      model.dispose()
    }
  })

  it('an unload waits for the running generations, then detaches its adapter', async () => {
    const { model, lora, a, ask, release } = await gatedSetup('unload', { engine: true })
    try {
      const answer = ask(a, 'a1')
      await settle()
      let unloaded = false
      const unload = Promise.resolve(lora.loader.unload?.('a', a)).then(() => {
        unloaded = true
      })
      await settle()
      expect(unloaded).toBe(false)
      expect(lora.attached).toMatch(/^a#/)
      release('a1')
      await Promise.all([answer, unload])
      expect(lora.attached).toBeUndefined()
      expect(model.linearAdapters().size).toBe(0)
      expect(lora.count).toBe(1)
    } finally {
      lora.dispose()
      model.dispose()
    }
  })

  it("the base policy reports the generating policy's metrics, generations waiting for a turn among the waiting requests", async () => {
    const { model, lora, a, b, ask, release } = await gatedSetup('metrics', { engine: true, metrics: () => ({ waitingRequests: 3, kvCacheUsage: 0.5 }) })
    try {
      const running = ask(a, 'a1')
      const waiting = b.generate([
        { prompt: 'b1', maxTokens: 1 },
        { prompt: 'b1', maxTokens: 1 },
      ])
      await settle()
      const metrics = (lora.base as { metrics?: () => Record<string, number> }).metrics
      expect(metrics?.()).toEqual({ waitingRequests: 5, kvCacheUsage: 0.5, loraSwaps: 1 })
      release('a1')
      await settle()
      release('b1')
      await Promise.all([running, waiting])
    } finally {
      lora.dispose()
      model.dispose()
    }
    const plain = await gatedSetup('no-metrics')
    expect('metrics' in plain.lora.base).toBe(false) // a policy without figures: none made up
    plain.lora.dispose()
    plain.model.dispose()
  })
})

describe('createLocalLoraAdapters on a GenerationEngine', () => {
  it('answers concurrent requests to two adapters and the base as one at a time does (greedy), each adapter’s requests decoding together', async () => {
    const root = join(temporaryDirectory(), 'engine')
    await saveAdapter(join(root, 'a'), 3)
    await saveAdapter(join(root, 'b'), 4)
    const signal = new AbortController().signal
    const request = (prompt: string): GenerationRequest => ({ prompt, maxTokens: 5, temperature: 0, ignoreEos: true })
    const prompts = ['player0 picks', 'a or b?', 'game 3']
    /** Each policy's answers (token ids) to every prompt, all asked at once. */
    const answers = async (engine: boolean) => {
      const model = createTestModel(1)
      const policy = createLocalPolicy({ model, tokenizer, ...(engine ? { engine: { maxRows: 8 } } : {}) })
      const lora = createLocalLoraAdapters(model, policy, { roots: [root] })
      try {
        const a = await lora.loader.load({ name: 'a', path: join(root, 'a'), signal })
        const b = await lora.loader.load({ name: 'b', path: join(root, 'b'), signal })
        const asked = [lora.base, a, b].flatMap((each) => prompts.map((prompt) => each.generate([request(prompt)])))
        const tokens = (await Promise.all(asked)).map(([completion]) => Array.from(completion!.tokenIds))
        return { tokens, stats: policy.engineStats(), swaps: lora.turns().swaps }
      } finally {
        lora.dispose()
        model.dispose()
      }
    }
    const alone = await answers(false)
    expect(alone.tokens[3]).not.toEqual(alone.tokens[0]) // the adapters change the answers
    expect(alone.tokens[6]).not.toEqual(alone.tokens[3])
    const engine = await answers(true)
    expect(engine.tokens).toEqual(alone.tokens)
    // 9 requests × 5 tokens; one at a time every decode step would hold one row (45 steps): a group's decode together.
    expect(engine.stats!.generatedTokens).toBe(45)
    expect(engine.stats!.decodeSteps).toBeLessThan(45)
    expect(engine.swaps).toBe(2) // base, then a, then b: each group once
  })
})
