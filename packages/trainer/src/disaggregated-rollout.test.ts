import { mkdir, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { InvalidArgumentError, type PolicyV1 } from '@ludic/core'
import { applyLora, CausalLanguageModel, createLocalPolicy, sequenceLogprobs } from '@ludic/model'
import { serveOpenAICompatible, type LoraAdapterLoader, type OpenAICompatibleServer } from '@ludic/rollout'
import * as tf from '@tensorflow/tfjs-core'
import { afterEach, describe, expect, it } from 'vitest'
import { createDisaggregatedRolloutSource, type DisaggregatedRolloutOptions, type DisaggregatedRolloutSource } from './disaggregated-rollout.js'
import { createLocalLoraAdapters } from './local-lora-adapters.js'
import { createLoraAdapterPublisher, LoraPublishError } from './lora-adapter-publisher.js'
import { createRlTrainer } from './rl-trainer.js'
import type { RolloutBatch } from './rollout-source.js'
import { createSftTrainer } from './sft-trainer.js'
import { createPickEnvironment, createTestModel, tokenizer, useBackendAndDirectory } from './test/support.js'

const temporaryDirectory = useBackendAndDirectory('ludic-disaggregated-')
// The collection thread runs the built worker entry (dist/) and loads this TypeScript setup through tsx.
const setupModule = fileURLToPath(new URL('./test/async-setup.ts', import.meta.url))
const servers: OpenAICompatibleServer[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()))
})

const prompt = (seed: number) =>
  tokenizer.encode(tokenizer.applyChatTemplate!([{ role: 'user', content: `game ${seed}: player0 picks a or b` }], { addGenerationPrompt: true }), {
    addSpecialTokens: false,
  })

/** P(a) against P(b) at the prompts the game shows, averaged. */
function probabilityOfA(model: CausalLanguageModel): number {
  return tf.tidy(() => {
    const promptIds = [0, 1, 2, 3, 4, 5, 6].flatMap((seed) => [prompt(seed), prompt(seed)])
    const responseIds = promptIds.map((_, index) => tokenizer.encode(index % 2 === 0 ? 'a' : 'b', { addSpecialTokens: false }))
    const logprobs = sequenceLogprobs(model, { promptIds, responseIds }).logprobs.dataSync()
    let total = 0
    for (let index = 0; index < logprobs.length; index += 2) total += Math.exp(logprobs[index]!) / (Math.exp(logprobs[index]!) + Math.exp(logprobs[index + 1]!))
    return total / (logprobs.length / 2)
  })
}

/** A fake loader that remembers what it was asked; paths under `refuse/` are refused. */
function recordingLoader() {
  const loads: string[] = []
  const unloads: string[] = []
  const echo: PolicyV1 = { specificationVersion: 'v1', id: 'echo', generate: async () => [] }
  const loader: LoraAdapterLoader = {
    async load({ name, path }) {
      if (path.includes('refuse')) throw new InvalidArgumentError({ argument: 'lora_path', value: path, message: 'is refused' })
      loads.push(`${name} ${path}`)
      return echo
    },
    unload: (name) => void unloads.push(name),
  }
  return { loader, loads, unloads }
}

/** A one-layer model with LoRA adapters, and a server for it whose adapter loader only records (`recordingLoader`). */
async function adapterServer() {
  const model = createTestModel(1)
  const adapters = applyLora(model, { rank: 2 })
  const fake = recordingLoader()
  const server = await serveOpenAICompatible(createLocalPolicy({ model, tokenizer }), { modelId: 'base', lora: { loader: fake.loader } })
  servers.push(server)
  return { model, adapters, fake, server }
}

describe('createLoraAdapterPublisher', () => {
  it('saves versioned PEFT folders, loads them on every endpoint, unloads beyond keepLoaded and deletes beyond keepLast', async () => {
    const model = createTestModel(1)
    const adapters = applyLora(model, { rank: 2 })
    const fakes = [recordingLoader(), recordingLoader()]
    for (const fake of fakes)
      servers.push(await serveOpenAICompatible(createLocalPolicy({ model, tokenizer }), { modelId: 'base', lora: { loader: fake.loader } }))
    const directory = join(temporaryDirectory(), 'publisher')
    const publisher = createLoraAdapterPublisher({ endpoints: servers.map((server) => server.url), directory, keepLoaded: 2, keepLast: 3 })
    for (const version of [1, 2, 3, 4]) await publisher.publish(adapters, version)
    expect(publisher.current).toEqual({ name: 'step-4', version: 4, path: join(directory, 'step-4') })
    for (const fake of fakes) {
      expect(fake.loads).toEqual([1, 2, 3, 4].map((version) => `step-${version} ${join(directory, `step-${version}`)}`))
      await expect.poll(() => fake.unloads).toEqual(['step-1', 'step-2'])
    }
    const models = (await (await fetch(`${servers[0]!.url}/models`)).json()) as { data: { id: string }[] }
    expect(models.data.map((entry) => entry.id)).toEqual(['base', 'step-3', 'step-4'])
    expect((await readdir(directory)).sort()).toEqual(['step-2', 'step-3', 'step-4'])
    expect((await readdir(join(directory, 'step-4'))).sort()).toEqual(['adapter_config.json', 'adapter_model.safetensors'])
    expect(publisher.unloadFailures).toEqual([])
    model.dispose()
  })

  it('keeps the newest versions however their background saves and pushes finish (out of order)', async () => {
    const { model, adapters, fake, server } = await adapterServer()
    const directory = join(temporaryDirectory(), 'order')
    const publisher = createLoraAdapterPublisher({ endpoints: [server.url], directory, keepLoaded: 2, keepLast: 2 })
    // Saves complete 3, 1, 2; pushes arrive 1, 3, 2.
    const [three, one, two] = [await publisher.save(adapters, 3), await publisher.save(adapters, 1), await publisher.save(adapters, 2)]
    for (const saved of [one, three, two]) await publisher.push(saved)
    expect(publisher.current?.version).toBe(3)
    expect((await readdir(directory)).sort()).toEqual(['step-2', 'step-3'])
    await expect.poll(() => fake.unloads).toEqual(['step-1'])
    model.dispose()
  })

  it('fails with a LoraPublishError naming the endpoint and the status; current stays the last good version', async () => {
    const { model, adapters, server } = await adapterServer()
    const good = createLoraAdapterPublisher({ endpoints: [server.url], directory: join(temporaryDirectory(), 'ok') })
    await good.publish(adapters, 1)
    const refusing = createLoraAdapterPublisher({ endpoints: [server.url], directory: join(temporaryDirectory(), 'refuse'), prefix: 'other' })
    const error = await refusing.publish(adapters, 1).catch((caught: unknown) => caught)
    expect(LoraPublishError.isInstance(error)).toBe(true)
    expect(error).toMatchObject({ endpoint: server.url, status: 400, operation: 'load', adapter: 'other-1' })
    expect((error as Error).message).toContain('is refused')
    expect(refusing.current).toBeUndefined()
    // Nothing listening: no status, the endpoint named.
    const closed = await serveOpenAICompatible(createLocalPolicy({ model, tokenizer }))
    await closed.close()
    const unreachable = createLoraAdapterPublisher({ endpoints: [closed.url], directory: join(temporaryDirectory(), 'gone'), timeoutMs: 2000 })
    await expect(unreachable.publish(adapters, 1)).rejects.toMatchObject({ name: 'LoraPublishError', endpoint: closed.url, status: undefined })
    expect(() => createLoraAdapterPublisher({ endpoints: [], directory: 'x' })).toThrow(InvalidArgumentError)
    model.dispose()
  })
})

describe('createDisaggregatedRolloutSource', () => {
  /**
   * A warmed-up model's LoRA adapters trained through a `ludic serve`-like server (its own copy of the base
   * weights) for `steps`; checks that it learns and that staleness stays within `maxStaleness`.
   */
  async function learnThroughServer(options: { maxStaleness?: number; setupModule?: string; setupData?: unknown; partialRollouts?: boolean }, steps: number) {
    const model = createTestModel(2)
    const examples = [0, 1, 2, 3, 4, 5, 6].flatMap((seed) =>
      ['a', 'b'].map((letter) => ({ promptIds: prompt(seed), responseIds: tokenizer.encode(letter, { addSpecialTokens: false }) })),
    )
    const sft = createSftTrainer({ model, examples, batchSize: 14, optimizer: { learningRate: 1e-2 }, seed: 1 })
    await sft.run({ steps: 25 })
    sft.dispose()
    // The server's copy of the base weights; the trainer trains LoRA adapters on its own.
    const serverModel = new CausalLanguageModel(model.config, model.parameters())
    const directory = join(temporaryDirectory(), 'adapters')
    await mkdir(directory, { recursive: true })
    const local = createLocalLoraAdapters(serverModel, createLocalPolicy({ model: serverModel, tokenizer, maxBatch: 16 }), { roots: [directory] })
    const server = await serveOpenAICompatible(local.base, { modelId: 'base', tokenizer, lora: { loader: local.loader } })
    servers.push(server)
    const adapters = applyLora(model, { rank: 8, alpha: 64, targetModules: 'all-linear' })
    const before = probabilityOfA(model)
    let source: DisaggregatedRolloutSource | undefined
    const batches: RolloutBatch[] = []
    const trainer = createRlTrainer(
      {
        model,
        tokenizer,
        optimizer: { learningRate: 5e-3 },
        batch: { episodesPerStep: 16, miniBatchSize: 16, ppoEpochs: 2, maxTokens: 1 },
        seed: 4,
        environments: [() => createPickEnvironment()],
        recomputeOldLogprobs: true,
      },
      {
        rolloutSource: (context) => {
          source = createDisaggregatedRolloutSource(context, adapters, { endpoints: [server.url], adapterDirectory: directory, ...options })
          const next = source.next.bind(source)
          // The batches as the trainer got them, to compare the two ways of playing them.
          return { ...source, next: async (stepIndex: number) => batches[batches.push(await next(stepIndex)) - 1]! }
        },
      },
    )
    const history = await trainer.run({ steps })
    const after = probabilityOfA(model)
    const maxStaleness = options.maxStaleness ?? 1
    expect(history[0]!.staleness).toBe(0)
    expect(history.every((metrics) => metrics.staleness! >= 0 && metrics.staleness! <= maxStaleness)).toBe(true)
    expect(source!.publisher.current?.version).toBe(steps)
    expect(source!.stats.batches).toBeGreaterThanOrEqual(steps)
    const models = (await (await fetch(`${server.url}/models`)).json()) as { data: { id: string }[] }
    const loaded = models.data.map((entry) => entry.id)
    const files = (await readdir(directory)).sort()
    const count = local.count
    trainer.dispose()
    adapters.remove()
    model.dispose()
    await server.close()
    local.dispose()
    serverModel.dispose()
    return { before, after, history, loaded, files, count, batches }
  }

  /** Each step's episodes: reset seed and first observation, in plan order. */
  const episodes = (batches: readonly RolloutBatch[]) =>
    batches.map((batch) => batch.trajectories.map((trajectory) => `${trajectory.seed} ${trajectory.turns[0]?.observation}`))

  it('learns with generation on a server (its own model copy), LoRA adapters pushed after each update, staleness at most 1', async () => {
    const { before, after, history, loaded, files, count } = await learnThroughServer({}, 12)
    // Learns as the synchronous loop does with the same LoRA settings (P(a) ≈ 0.49 → 0.7 in 12 steps).
    expect(after).toBeGreaterThan(before + 0.1)
    expect(history.some((metrics) => metrics.staleness === 1)).toBe(true)
    // Every update's adapter was published (versions 0 … 12); only the newest are kept on the server and on disk.
    expect(loaded).toEqual(['base', 'step-11', 'step-12'])
    expect(files).toEqual(['step-10', 'step-11', 'step-12'])
    expect(count).toBe(2)
  })

  it("plays the episodes in a collection thread (setupModule): the same episodes as on the trainer's thread, and it learns", async () => {
    const threaded = await learnThroughServer({ setupModule, setupData: { roles: ['player0'], environmentId: 'pick-in-thread' } }, 12)
    expect(threaded.after).toBeGreaterThan(threaded.before + 0.1)
    expect(threaded.history.every((metrics) => metrics.staleness! >= 0 && metrics.staleness! <= 1)).toBe(true)
    // The thread loaded every version (0 … 12), unloaded and deleted the old ones.
    expect(threaded.loaded).toEqual(['base', 'step-11', 'step-12'])
    expect(threaded.files).toEqual(['step-10', 'step-11', 'step-12'])
    expect(threaded.count).toBe(2)
    const local = await learnThroughServer({}, 2)
    // The same reset seeds and games, step by step (the completions may differ: the server batches them as they come).
    expect(episodes(threaded.batches.slice(0, 2))).toEqual(episodes(local.batches))
    // The setup module's games were played (its environment id), not the config's.
    expect(threaded.batches.flatMap((batch) => batch.trajectories.map((trajectory) => trajectory.environmentId))).toEqual(Array(12 * 16).fill('pick-in-thread'))
    expect(local.batches[0]!.trajectories[0]!.environmentId).toBe('pick-v1')
    expect(threaded.batches.every((batch) => batch.samples.every((sample) => sample.responseTokenIds.length === 1))).toBe(true)
  })

  it("partialRollouts reaches the collection thread: every sample's tokens carry a version, between its batch's and its step's", async () => {
    const steps = 4
    const { history, batches } = await learnThroughServer(
      { partialRollouts: true, setupModule, setupData: { roles: ['player0'], environmentId: 'pick-in-thread' } },
      steps,
    )
    expect(batches).toHaveLength(steps)
    for (const [stepIndex, batch] of batches.entries()) {
      expect(batch.samples).toHaveLength(16)
      for (const sample of batch.samples) {
        const versions = Array.from(sample.tokenPolicyVersions!)
        expect(versions).toHaveLength(1)
        // Played with an adapter no older than the batch's first and no newer than the weights of its step (version = steps done).
        expect(versions[0]).toBeGreaterThanOrEqual(batch.offPolicy!.policyVersion)
        expect(versions[0]).toBeLessThanOrEqual(stepIndex)
        expect(sample.policyVersion).toBe(versions[0])
      }
    }
    // The update's staleness figures are the tokens' own.
    expect(history.every((metrics) => metrics.tokenStalenessMean! >= 0 && metrics.tokenStalenessMean! <= 1)).toBe(true)
  })

  /** Runs two steps with a collection thread against a server whose loader records (paths under `refuse/` refused); the run's error. */
  async function failingThreadRun(setupData: unknown, adapterFolder: string) {
    const { model, adapters, server } = await adapterServer()
    const trainer = createRlTrainer(
      {
        model,
        tokenizer,
        batch: { episodesPerStep: 4, miniBatchSize: 4, maxTokens: 1 },
        environments: [() => createPickEnvironment()],
        recomputeOldLogprobs: true,
      },
      {
        rolloutSource: (context) =>
          createDisaggregatedRolloutSource(context, adapters, {
            endpoints: [server.url],
            adapterDirectory: join(temporaryDirectory(), adapterFolder),
            setupModule,
            setupData,
          }),
      },
    )
    const error = await trainer.run({ steps: 2 }).then(
      () => undefined,
      (caught: unknown) => caught,
    )
    trainer.dispose()
    adapters.remove()
    model.dispose()
    return { error, server }
  }

  it("fails the run with the setup module's own error when the collection thread cannot load it", async () => {
    const { error } = await failingThreadRun({ roles: ['player0'], fail: true }, 'unused')
    expect((error as Error).message).toContain('setup refused for this test')
  })

  it('fails the run with a LoraPublishError naming the endpoint and the status when a server refuses the adapter the collection thread loads', async () => {
    const { error, server } = await failingThreadRun({ roles: ['player0'] }, 'refuse')
    expect(LoraPublishError.isInstance(error)).toBe(true) // rebuilt on this side of the thread, every field kept
    expect(error).toMatchObject({ endpoint: server.url, status: 400, operation: 'load', adapter: 'step-0' })
    expect((error as Error).message).toContain('is refused')
  })

  /** A trainer whose disaggregated source gets `options` (an endpoint nobody listens on), made by `create`: for what it refuses. */
  function refusing(options: Partial<DisaggregatedRolloutOptions>) {
    const model = createTestModel(2)
    const adapters = applyLora(model, { rank: 2 })
    const create = () =>
      createRlTrainer(
        { model, tokenizer, environments: [() => createPickEnvironment()], recomputeOldLogprobs: true },
        {
          rolloutSource: (context) =>
            createDisaggregatedRolloutSource(context, adapters, { endpoints: ['http://127.0.0.1:9/v1'], adapterDirectory: 'x', ...options }),
        },
      )
    return { model, create }
  }

  it('refuses a fetch with a setupModule (a function cannot cross to the thread), naming it', () => {
    const { model, create } = refusing({ setupModule, fetch })
    expect(create).toThrow(InvalidArgumentError)
    expect(create).toThrow(/options\.fetch.*setupModule/)
    model.dispose()
  })

  it('keeps maxStaleness + 1 adapters loaded, so a batch two updates old still finds its adapter (maxStaleness 2)', async () => {
    const { before, after, loaded } = await learnThroughServer({ maxStaleness: 2 }, 8)
    expect(after).toBeGreaterThan(before)
    expect(loaded).toEqual(['base', 'step-6', 'step-7', 'step-8'])
  })

  it('refuses partialRollouts with maxStaleness 0 (no newer adapter can come while a batch plays), naming it', () => {
    const { model, create } = refusing({ maxStaleness: 0, partialRollouts: true })
    expect(create).toThrow(InvalidArgumentError)
    expect(create).toThrow(/options\.partialRollouts.*needs maxStaleness ≥ 1/)
    model.dispose()
  })

  it('refuses keepLoaded below maxStaleness + 1, naming it', () => {
    const { model, create } = refusing({ maxStaleness: 2, keepLoaded: 2 })
    expect(create).toThrow(InvalidArgumentError)
    expect(create).toThrow(/options\.keepLoaded.*maxStaleness \+ 1 \(3\)/)
    model.dispose()
  })

  it('refuses a config without recomputeOldLogprobs', () => {
    const model = createTestModel(2)
    const adapters = applyLora(model, { rank: 2 })
    expect(() =>
      createRlTrainer(
        { model, tokenizer, environments: [() => createPickEnvironment()], recomputeOldLogprobs: false },
        { rolloutSource: (context) => createDisaggregatedRolloutSource(context, adapters, { endpoints: ['http://127.0.0.1:9/v1'], adapterDirectory: 'x' }) },
      ),
    ).toThrow(/recomputeOldLogprobs/)
    model.dispose()
  })
})
