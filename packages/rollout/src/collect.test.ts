import { deriveSeed, InvalidArgumentError, LudicError, sampleSchema, trajectorySchema, type Completion, type PolicyV1 } from '@ludic/core'
import { createScriptedEnvironment, createScriptedPolicy } from '@ludic/core/test'
import { describe, expect, it } from 'vitest'
import { collect, type CollectOptions } from './collect.js'
import { GenerationBatchError } from './generation-batch-error.js'
import { createRandomWalk, createSeededPolicy, requestEpisodeSeed, withJitter } from './test/episodes.js'

const threeTurns = () =>
  createScriptedEnvironment({
    id: 'three-turns-v1',
    turns: [
      { role: 'a', observation: 'seed {seed}: a first' },
      { role: 'b', observation: 'seed {seed}: b answers' },
      { role: 'a', observation: 'seed {seed}: a ends' },
    ],
    finalRewards: { a: 1, b: -1 },
  })

describe('collect', () => {
  it('plays self-play episodes with every waiting request of a policy in one generate call', async () => {
    const policy = createScriptedPolicy({ id: 'self', replies: (request) => `reply to ${request.messages![0]!.content}` })
    const { trajectories, samples, failures } = await collect({
      environments: [threeTurns],
      policies: policy,
      seeds: [1, 2, 3, 4],
      groupSize: 2,
      concurrency: 8,
    })

    expect(failures).toEqual([])
    expect(policy.calls).toBe(3) // one call per turn, each with all 8 episodes
    expect(policy.requests).toHaveLength(24)
    expect(trajectories.map((trajectory) => trajectory.id)).toEqual([
      'three-turns-v1/1/0',
      'three-turns-v1/1/1',
      'three-turns-v1/2/0',
      'three-turns-v1/2/1',
      'three-turns-v1/3/0',
      'three-turns-v1/3/1',
      'three-turns-v1/4/0',
      'three-turns-v1/4/1',
    ])
    const [first] = trajectories
    expect(trajectorySchema.safeParse(first).success).toBe(true)
    expect(first).toMatchObject({
      environmentId: 'three-turns-v1',
      seed: 1,
      groupId: 'three-turns-v1/1',
      roles: ['a', 'b'],
      returns: { a: 1, b: -1 },
      done: true,
      truncated: false,
    })
    expect(first?.error).toBeUndefined()
    expect(first?.turns.map((turn) => [turn.index, turn.role, turn.action, turn.policyId])).toEqual([
      [0, 'a', 'reply to seed 1: a first', 'self'],
      [1, 'b', 'reply to seed 1: b answers', 'self'],
      [2, 'a', 'reply to seed 1: a ends', 'self'],
    ])
    // The default prompt is one user message with the observation.
    expect(policy.requests[0]?.messages).toEqual([{ role: 'user', content: 'seed 1: a first' }])

    expect(samples).toHaveLength(24)
    const sample = samples[4]!
    expect(sampleSchema.safeParse(sample).success).toBe(true)
    const turn = trajectories[1]!.turns[1]!
    expect(sample).toMatchObject({
      trajectoryId: 'three-turns-v1/1/1',
      turnIndex: 1,
      role: 'b',
      environmentId: 'three-turns-v1',
      groupId: 'three-turns-v1/1',
      invalid: false,
    })
    expect(sample.promptTokenIds).toBe(turn.completion!.promptTokenIds)
    expect(sample.responseTokenIds).toBe(turn.completion!.tokenIds)
    expect(sample.rolloutLogprobs).toBe(turn.completion!.logprobs)
  })

  it('derives each request seed from the sampling seed, episode and turn; group members differ', async () => {
    const policy = createScriptedPolicy({ replies: () => 'ok' })
    await collect({
      environments: [threeTurns],
      policies: policy,
      seeds: [5],
      groupSize: 2,
      samplingSeed: 9,
      generation: { maxTokens: 7, temperature: 0.5, topP: 0.9, stop: ['\n'] },
    })
    const bySeed = policy.requests.map((request) => request.seed)
    expect(new Set(bySeed).size).toBe(6)
    expect(policy.requests[0]).toMatchObject({
      maxTokens: 7,
      temperature: 0.5,
      topP: 0.9,
      stop: ['\n'],
      seed: deriveSeed('ludic.rollout', 9, 'three-turns-v1', 5, 0, 0),
    })
    expect(policy.requests.map((request) => request.seed)).toContain(deriveSeed('ludic.rollout', 9, 'three-turns-v1', 5, 1, 2))
  })

  it('gives identical trajectories at any concurrency or batch size with a policy that is a function of its request', async () => {
    const run = (concurrency: number, maxBatchSize?: number) =>
      collect({
        environments: [() => createRandomWalk(), () => createRandomWalk({ id: 'long-walk-v1', target: 5 })],
        policies: { a: withJitter(createSeededPolicy('learner')), b: withJitter(createSeededPolicy('opponent')) },
        seeds: [0, 1, 2, 3, 4, 5],
        groupSize: 2,
        maxTurns: 12,
        concurrency,
        ...(maxBatchSize === undefined ? {} : { maxBatchSize }),
      })
    const sequential = await run(1)
    const parallel = await run(8)
    const small = await run(5, 2)
    expect(parallel).toEqual(sequential)
    expect(small).toEqual(sequential)
    // The walks differ in length and ending, so the scheduling really did vary.
    const lengths = new Set(sequential.trajectories.map((trajectory) => trajectory.turns.length))
    expect(lengths.size).toBeGreaterThan(2)
    expect(sequential.trajectories.some((trajectory) => trajectory.truncated)).toBe(true)
    expect(sequential.trajectories.some((trajectory) => trajectory.done)).toBe(true)
    // Members of a group start alike but play differently.
    const [member0, member1] = sequential.trajectories
    expect(member0?.groupId).toBe(member1?.groupId)
    expect(member0?.turns[0]?.observation).toBe(member1?.turns[0]?.observation)
    expect(sequential.trajectories.filter((_, i) => i % 2 === 0).map((t) => t.turns.map((turn) => turn.action).join())).not.toEqual(
      sequential.trajectories.filter((_, i) => i % 2 === 1).map((t) => t.turns.map((turn) => turn.action).join()),
    )
  })

  it('truncates at maxTurns, sums rewards into returns and still gives samples', async () => {
    const { trajectories, samples } = await collect({
      environments: [() => createRandomWalk({ target: 100 })],
      policies: createScriptedPolicy({ replies: () => '[right]' }),
      seeds: [7],
      maxTurns: 5,
    })
    const [trajectory] = trajectories
    expect(trajectory).toMatchObject({ done: false, truncated: true })
    expect(trajectory?.turns).toHaveLength(5)
    expect(trajectory?.returns).toEqual({ a: 0, b: 0.75 }) // b earns 0.25 after turns 1, 3 and 5
    expect(samples).toHaveLength(5)
  })

  it('makes samples of learner turns only, and marks invalid actions', async () => {
    const learner = createScriptedPolicy({ id: 'learner', replies: () => 'nonsense' })
    const opponent = createScriptedPolicy({ id: 'opponent', replies: () => '[left]' })
    const environment = () => createRandomWalk()
    const asB = await collect({ environments: [environment], policies: { a: opponent, b: learner }, seeds: [1, 2], learnerPolicyIds: ['learner'] })
    expect(asB.samples.map((sample) => [sample.role, sample.turnIndex, sample.invalid])).toEqual([
      ['b', 1, true],
      ['b', 1, true],
    ])
    expect(asB.trajectories[0]?.returns).toEqual({ a: 0, b: -1.25 }) // b earned 0.25 after a's move, then -1.5
    expect(asB.trajectories[0]?.turns[1]?.invalidAction).toBe(true)

    const byRole = await collect({ environments: [environment], policies: opponent, seeds: [1], maxTurns: 4, trainRoles: ['b'] })
    expect(byRole.samples.every((sample) => sample.role === 'b')).toBe(true)
    expect(byRole.samples.length).toBeGreaterThan(0)
  })

  it('chooses policies per episode with a function (the learner takes turns in each seat)', async () => {
    const learner = createScriptedPolicy({ id: 'learner', replies: () => '[left]' })
    const opponent = createScriptedPolicy({ id: 'opponent', replies: () => '[right]' })
    const { trajectories, samples } = await collect({
      environments: [() => createRandomWalk()],
      policies: ({ role, episodeIndex }) => ((role === 'a') === (episodeIndex % 2 === 0) ? learner : opponent),
      seeds: [1, 2],
      maxTurns: 2,
      learnerPolicyIds: ['learner'],
    })
    expect(trajectories.map((trajectory) => trajectory.turns.map((turn) => turn.policyId))).toEqual([
      ['learner', 'opponent'],
      ['opponent', 'learner'],
    ])
    // Who sat where, recorded whether or not each acted.
    expect(trajectories.map((trajectory) => trajectory.policyIds)).toEqual([
      { a: 'learner', b: 'opponent' },
      { a: 'opponent', b: 'learner' },
    ])
    expect(samples.map((sample) => sample.role)).toEqual(['a', 'b'])
  })

  it('renders string templates and prompt functions with the history', async () => {
    const policy = createScriptedPolicy({ replies: () => '[left]' })
    await collect({
      environments: [() => createRandomWalk()],
      policies: policy,
      seeds: [1],
      maxTurns: 2,
      prompt: 'You are {role}. {observation}\nMoves: {legalActions}',
    })
    expect(policy.requests[0]?.messages).toEqual([{ role: 'user', content: 'You are a. seed 1, turn 0, position 1\nMoves: [left], [right]' }])

    const seen: number[] = []
    const withHistory = createScriptedPolicy({ replies: () => '[left]' })
    await collect({
      environments: [() => createRandomWalk()],
      policies: withHistory,
      seeds: [1],
      maxTurns: 2,
      prompt: (view, history, context) => {
        seen.push(history.length)
        return [
          { role: 'system', content: `${context.environmentId} seed ${context.seed}, turn ${context.turnIndex}` },
          ...history.map((turn) => ({ role: 'assistant' as const, content: turn.action })),
          { role: 'user', content: view.observation },
        ]
      },
    })
    expect(seen).toEqual([0, 1])
    expect(withHistory.requests[1]!.messages!.map((message) => message.content)).toEqual([
      'random-walk-v1 seed 1, turn 1',
      '[left]',
      'seed 1, turn 1, position 0',
    ])
  })

  describe('failures are reported, never dropped, and the run goes on', () => {
    it('fails only the episodes whose requests failed when the policy throws a GenerationBatchError', async () => {
      const inner = createSeededPolicy('partial')
      const policy: PolicyV1 = {
        specificationVersion: 'v1',
        id: 'partial',
        async generate(requests) {
          const completions = await inner.generate(requests)
          const bad = requests.map((request) => requestEpisodeSeed(request) === 3)
          if (!bad.includes(true)) return completions
          return Promise.reject(
            new GenerationBatchError({
              policyId: 'partial',
              completions: completions.map((completion, index) => (bad[index] ? undefined : completion)),
              errors: bad.map((isBad) => (isBad ? new LudicError('seed 3 is cursed') : undefined)),
            }),
          )
        },
      }
      const { trajectories, samples, failures } = await collect({
        environments: [() => createRandomWalk()],
        policies: policy,
        seeds: [1, 2, 3, 4],
        groupSize: 2,
        maxTurns: 6,
        concurrency: 8,
      })
      expect(trajectories).toHaveLength(8)
      expect(failures.map((failure) => [failure.trajectoryId, failure.stage, failure.turnIndex, failure.role, failure.policyId])).toEqual([
        ['random-walk-v1/3/0', 'generate', 0, 'a', 'partial'],
        ['random-walk-v1/3/1', 'generate', 0, 'a', 'partial'],
      ])
      expect(failures[0]?.message).toBe('LudicError: seed 3 is cursed')
      expect(trajectories[4]).toMatchObject({ id: 'random-walk-v1/3/0', error: 'LudicError: seed 3 is cursed', done: false, truncated: false, turns: [] })
      expect(trajectories.filter((trajectory) => trajectory.error === undefined)).toHaveLength(6)
      expect(samples.some((sample) => sample.groupId === 'random-walk-v1/3')).toBe(false)
      expect(samples.length).toBe(trajectories.reduce((total, trajectory) => total + (trajectory.error === undefined ? trajectory.turns.length : 0), 0))
    })

    it('fails the episodes of a batch whose generate call throws, keeping the turns already played', async () => {
      let calls = 0
      const inner = createScriptedPolicy({ replies: () => '[left]' })
      const policy: PolicyV1 = {
        specificationVersion: 'v1',
        id: 'flaky',
        async generate(requests) {
          if (++calls === 2) throw new Error('GPU fell off the bus')
          return inner.generate(requests)
        },
      }
      const { trajectories, failures } = await collect({
        environments: [() => createRandomWalk({ target: 100 })],
        policies: policy,
        seeds: [1, 2, 3],
        concurrency: 1,
        maxTurns: 3,
      })
      expect(failures).toHaveLength(1)
      expect(failures[0]).toMatchObject({
        trajectoryId: 'random-walk-v1/1/0',
        stage: 'generate',
        turnIndex: 1,
        role: 'b',
        message: 'Error: GPU fell off the bus',
      })
      expect(trajectories[0]?.turns).toHaveLength(1)
      expect(trajectories[1]?.error).toBeUndefined()
      expect(trajectories[2]?.truncated).toBe(true)
    })

    it('times out a generate call that never answers', async () => {
      const inner = createScriptedPolicy({ replies: () => '[left]' })
      const policy: PolicyV1 = {
        specificationVersion: 'v1',
        id: 'stuck',
        generate: (requests) =>
          requests.some((request) => requestEpisodeSeed(request) === 2) ? new Promise<Completion[]>(() => {}) : inner.generate(requests),
      }
      const { trajectories, failures } = await collect({
        environments: [() => createRandomWalk()],
        policies: policy,
        seeds: [1, 2, 3],
        concurrency: 1,
        maxTurns: 2,
        generateTimeoutMs: 30,
      })
      expect(failures.map((failure) => [failure.trajectoryId, failure.stage])).toEqual([['random-walk-v1/2/0', 'generate']])
      expect(failures[0]?.message).toMatch(/did not answer a batch of 1 requests within 30 ms/)
      expect(trajectories.map((trajectory) => trajectory.error === undefined)).toEqual([true, false, true])
    })

    it('aborts a timed-out generate call through its signal, so the policy stops working on it', async () => {
      const signals: AbortSignal[] = []
      let steps = 0
      const slow: PolicyV1 = {
        specificationVersion: 'v1',
        id: 'slow',
        async generate(requests, options = {}) {
          signals.push(options.signal!)
          for (let step = 0; step < 200; step++) {
            options.signal?.throwIfAborted() // as a local model does between decode steps
            steps++
            await new Promise((resolve) => setTimeout(resolve, 5))
          }
          return createScriptedPolicy({ replies: () => '[left]' }).generate(requests)
        },
      }
      // The policy would take 200 steps of 5 ms: the failure, the aborted signal and the steps that stop show the deadline acted.
      const { failures } = await collect({ environments: [() => createRandomWalk()], policies: slow, seeds: [1], maxTurns: 2, generateTimeoutMs: 50 })
      expect(failures[0]?.message).toMatch(/within 50 ms/)
      expect(signals[0]?.aborted).toBe(true)
      expect(signals[0]?.reason).toBeInstanceOf(LudicError)
      const stepsAtEnd = steps
      await new Promise((resolve) => setTimeout(resolve, 100))
      expect(steps).toBe(stepsAtEnd) // the call stopped rather than running on in the background
    })

    it('reports environment, prompt and malformed-completion failures with their stage', async () => {
      const environments = [
        () => ({
          ...createRandomWalk({ id: 'broken-reset-v1' }),
          reset: () => {
            throw new Error('no board')
          },
        }),
        () => {
          const walk = createRandomWalk({ id: 'broken-step-v1' })
          return {
            ...walk,
            reset: walk.reset,
            step: () => {
              throw new Error('rules exploded')
            },
          }
        },
        () => {
          const walk = createRandomWalk({ id: 'bad-outcome-v1' })
          return { ...walk, step: () => ({ done: false, truncated: false, rewards: {}, info: {} }) }
        },
      ]
      const { failures, trajectories } = await collect({ environments, policies: createScriptedPolicy({ replies: () => '[left]' }), seeds: [1] })
      expect(failures.map((failure) => [failure.environmentId, failure.stage])).toEqual([
        ['broken-reset-v1', 'reset'],
        ['broken-step-v1', 'step'],
        ['bad-outcome-v1', 'step'],
      ])
      expect(failures[2]?.message).toMatch(/ParseError: Cannot parse the step outcome of environment 'bad-outcome-v1' at next/)
      expect(trajectories.every((trajectory) => trajectory.error !== undefined)).toBe(true)

      const prompt = await collect({
        environments: [() => createRandomWalk()],
        policies: createScriptedPolicy({ replies: () => '[left]' }),
        seeds: [1],
        prompt: () => [],
      })
      expect(prompt.failures[0]).toMatchObject({ stage: 'prompt', message: expect.stringMatching(/prompt function.*needs at least one message/) })

      const malformed: PolicyV1 = {
        specificationVersion: 'v1',
        id: 'malformed',
        generate: async (requests) =>
          requests.map(() => ({
            text: '[left]',
            promptTokenIds: new Int32Array(1),
            tokenIds: new Int32Array(2),
            logprobs: new Float32Array(1),
            finishReason: 'stop' as const,
          })),
      }
      const bad = await collect({ environments: [() => createRandomWalk()], policies: malformed, seeds: [1] })
      expect(bad.failures[0]?.message).toMatch(/completion of policy 'malformed' at logprobs: tokenIds and logprobs must have the same length/)
      const short: PolicyV1 = { specificationVersion: 'v1', id: 'short', generate: async () => [] }
      expect((await collect({ environments: [() => createRandomWalk()], policies: short, seeds: [1] })).failures[0]?.message).toMatch(
        /returned 0 completions for 1 requests/,
      )
    })
  })

  it('stops starting episodes when the signal aborts and returns what it has', async () => {
    const controller = new AbortController()
    let calls = 0
    const inner = createScriptedPolicy({ replies: () => '[left]' })
    const policy: PolicyV1 = {
      specificationVersion: 'v1',
      id: 'p',
      generate(requests) {
        if (++calls === 2) controller.abort()
        return inner.generate(requests)
      },
    }
    const { trajectories } = await collect({
      environments: [() => createRandomWalk({ target: 100 })],
      policies: policy,
      seeds: [1, 2, 3, 4],
      concurrency: 1,
      maxTurns: 2,
      signal: controller.signal,
    })
    expect(trajectories.map((trajectory) => trajectory.id)).toEqual(['random-walk-v1/1/0'])
    expect(trajectories[0]?.truncated).toBe(true)
  })

  it("records the environment's state key on each turn and its sample; a key past the bound fails its episode by name", async () => {
    const keyed = () =>
      createScriptedEnvironment({
        id: 'keyed-v1',
        turns: [
          { role: 'a', observation: 'seed {seed}: a first', stateKey: 'a|start' },
          { role: 'b', observation: 'seed {seed}: b answers' },
          { role: 'a', observation: 'seed {seed}: a ends', stateKey: 'a|end' },
        ],
      })
    const { trajectories, samples, failures } = await collect({ environments: [keyed], policies: createSeededPolicy(), seeds: [1, 2] })
    expect(failures).toEqual([])
    expect(trajectories[0]!.turns.map((turn) => turn.stateKey)).toEqual(['a|start', undefined, 'a|end'])
    expect(samples.map((sample) => [sample.trajectoryId, sample.turnIndex, sample.stateKey])).toEqual([
      ['keyed-v1/1/0', 0, 'a|start'],
      ['keyed-v1/1/0', 1, undefined],
      ['keyed-v1/1/0', 2, 'a|end'],
      ['keyed-v1/2/0', 0, 'a|start'],
      ['keyed-v1/2/0', 1, undefined],
      ['keyed-v1/2/0', 2, 'a|end'],
    ])
    expect(trajectories.every((trajectory) => trajectorySchema.safeParse(trajectory).success)).toBe(true)

    const tooLong = () => createScriptedEnvironment({ id: 'long-key-v1', turns: [{ role: 'a', observation: 'o', stateKey: 'k'.repeat(1025) }] })
    const failed = await collect({ environments: [tooLong], policies: createSeededPolicy(), seeds: [1] })
    expect(failed.samples).toEqual([])
    expect(failed.failures).toMatchObject([{ stage: 'reset', turnIndex: 0 }])
    expect(failed.failures[0]!.message).toMatch(/stateKey.*at most 1024 characters/)
  })

  it('prefixes ids with runId and stamps policyVersion', async () => {
    const { trajectories, samples } = await collect({
      environments: [threeTurns],
      policies: createScriptedPolicy({ replies: () => 'x' }),
      seeds: [1],
      runId: 'step-3',
      policyVersion: 3,
    })
    expect(trajectories[0]).toMatchObject({ id: 'step-3/three-turns-v1/1/0', groupId: 'step-3/three-turns-v1/1' })
    expect(samples[0]?.policyVersion).toBe(3)
  })

  describe('bad arguments throw InvalidArgumentError naming the argument', () => {
    const policy = createScriptedPolicy({ replies: () => 'x' })
    const valid: CollectOptions = { environments: [threeTurns], policies: policy, seeds: [1] }
    const cases: [string, Record<string, unknown>, string, RegExp?][] = [
      ['no environments', { environments: [] }, 'options.environments', /at least one/],
      ['an instance instead of a factory', { environments: [threeTurns()] }, 'options.environments.0', /function that creates/],
      ['a factory of something else', { environments: [() => ({ id: 'x' })] }, 'options.environments.0', /must return an EnvironmentV1/],
      ['duplicate environment ids', { environments: [threeTurns, threeTurns] }, 'options.environments.1', /same id/],
      ['no seeds', { seeds: [] }, 'options.seeds', /at least one seed/],
      ['a seed that is not an integer', { seeds: [1, 2.5] }, 'options.seeds.1'],
      ['duplicate seeds', { seeds: [1, 1] }, 'options.seeds', /distinct/],
      ['a role without a policy', { policies: { a: policy } }, 'options.policies.b', /no policy for role 'b'/],
      ['a role with a non-policy', { policies: { a: policy, b: { id: 'b' } } }, 'options.policies.b', /PolicyV1/],
      ['a policy function that returns nothing', { policies: () => undefined }, 'options.policies', /returned no PolicyV1/],
      ['policies of the wrong type', { policies: 'gpt' }, 'options.policies'],
      ['concurrency below 1', { concurrency: 0 }, 'options.concurrency'],
      ['a fractional group size', { groupSize: 1.5 }, 'options.groupSize'],
      ['maxTurns below 1', { maxTurns: 0 }, 'options.maxTurns'],
      ['a negative temperature', { generation: { temperature: -1 } }, 'options.generation.temperature'],
      ['an unknown option', { concurency: 4 }, 'options', /concurency/],
      ['an unknown learner id', { learnerPolicyIds: ['nobody'] }, 'options.learnerPolicyIds.0', /id of no policy/],
      ['an unknown train role', { trainRoles: ['c'] }, 'options.trainRoles.0', /role of no environment/],
    ]
    it.each(cases)('%s', async (_, override, argument, message) => {
      const error = await collect({ ...valid, ...override } as CollectOptions).catch((caught: unknown) => caught)
      expect(InvalidArgumentError.isInstance(error)).toBe(true)
      expect((error as InvalidArgumentError).argument).toBe(argument)
      if (message !== undefined) expect((error as Error).message).toMatch(message)
    })
  })
})
