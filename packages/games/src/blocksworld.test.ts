import { InvalidArgumentError, createRandom, stepOutcomeSchema } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import {
  blocksworldShortestPlans,
  blocksworldStateKey,
  describeBlocksworldGoal,
  describeBlocksworldState,
  formatBlocksworldAction,
  generateBlocksworldProblem,
  parseBlocksworldAction,
} from './blocksworld-problem.js'
import { blocksworldInTestSplit, createBlocksworld } from './blocksworld.js'

describe('Blocksworld', () => {
  it("deals the problem of generateBlocksworldProblem for the seed, in the benchmark's words, with the allowed actions", () => {
    const environment = createBlocksworld()
    expect(environment.id).toBe('blocksworld-v1')
    expect(environment.roles).toEqual(['player'])
    const problem = generateBlocksworldProblem({ seed: 5 })
    const view = environment.reset(5)
    expect(view.role).toBe('player')
    expect(view.observation).toMatch(/^\[GAME\] You are solving a Blocksworld planning problem with 4 blocks\./)
    expect(view.observation).toContain(`As initial conditions I have that ${describeBlocksworldState(problem.initial)}.`)
    expect(view.observation).toContain(`My goal is to have that ${describeBlocksworldGoal(problem.goal)}.\nYou have 4 steps.`)
    expect(view.observation).toContain(`Your available actions are: ${view.legalActions!.map((action) => `[${action}]`).join(', ')}`)
    expect(view.legalActions!.length).toBeGreaterThan(0)
  })

  it('rewards a shortest plan, played action by action; every shortest plan succeeds', () => {
    const problem = generateBlocksworldProblem({ seed: 3, blocks: 5, planLength: 6 })
    const plans = blocksworldShortestPlans(problem)
    expect(plans.length).toBeGreaterThan(0)
    const environment = createBlocksworld({ blocks: 5, planLength: 6 })
    for (const plan of plans) {
      let view = environment.reset(3)
      for (const [index, action] of plan.entries()) {
        expect(view.legalActions).toContain(action)
        const outcome = stepOutcomeSchema.parse(environment.step(index % 2 === 0 ? `I will [${action}]` : `\\boxed{${action.toLowerCase()}}`))
        if (index < plan.length - 1) {
          expect(outcome).toMatchObject({ done: false, rewards: { player: 0 } })
          expect(outcome.next!.observation).toContain(`[Player 0] ${action}\n[GAME] Current state: `)
          expect(outcome.next!.observation).toContain(`Steps left: ${plan.length - index - 1}.`)
          view = outcome.next!
        } else {
          expect(outcome).toEqual({ done: true, truncated: false, rewards: { player: 1 }, info: { reason: 'Goal reached in 6 steps' } })
        }
      }
    }
  })

  it('ends unsolved when the steps run out; more steps allow a detour', () => {
    // A seed whose start has a block on the table: picking it up and putting it down wastes two steps.
    const seed = Array.from({ length: 20 }, (_, index) => index).find((index) =>
      createBlocksworld()
        .reset(index)
        .legalActions!.some((action) => action.startsWith('Pick up')),
    )!
    const [plan] = blocksworldShortestPlans(generateBlocksworldProblem({ seed }))
    const play = (maxSteps: number) => {
      const environment = createBlocksworld({ maxSteps, failureReward: 0.001 })
      const pickUp = environment.reset(seed).legalActions!.find((action) => action.startsWith('Pick up'))!
      const held = environment.step(`[${pickUp}]`).next!
      expect(held.observation).toContain(`Steps left: ${maxSteps - 1}.`)
      environment.step(`[Put down the ${/Pick up the (\w+) block/.exec(pickUp)![1]} block]`)
      for (const action of plan!) {
        const outcome = environment.step(`[${action}]`)
        if (outcome.done) return outcome
      }
      return undefined
    }
    expect(play(4)).toEqual({ done: true, truncated: false, rewards: { player: 0.001 }, info: { reason: 'Out of steps: the goal is not reached after 4' } })
    expect(play(6)).toEqual({ done: true, truncated: false, rewards: { player: 1 }, info: { reason: 'Goal reached in 6 steps' } })
  })

  it('makes malformed and disallowed actions invalid-action outcomes with a reason, never a throw', () => {
    const cases: [string, RegExp][] = [
      ['', /empty/],
      ['[]', /empty/],
      ['[dance]', /Invalid action: dance is not an action/],
      ['[Pick up the purple block]', /there is no purple block/],
      ['x'.repeat(200_000), /is not an action/],
      ['[Put down the red block]', /the hand is empty|there is no red block/],
      [`[Stack the ${'a'.repeat(100)} block on top of the b block]`, /there is no a+ block/],
    ]
    for (const [action, reason] of cases) {
      const environment = createBlocksworld({ invalidPenalty: -1 })
      environment.reset(0)
      const outcome = stepOutcomeSchema.parse(environment.step(action))
      expect(outcome, action.slice(0, 40)).toMatchObject({ done: true, truncated: false, rewards: { player: -1 }, info: { invalidAction: true } })
      expect(outcome.info.reason!, action.slice(0, 40)).toMatch(reason)
      expect(outcome.info.reason!.length).toBeLessThan(400)
    }
    const environment = createBlocksworld()
    const view = environment.reset(0)
    const unstack = view.legalActions!.find((action) => action.startsWith('Unstack'))
    const pickUp = view.legalActions!.find((action) => action.startsWith('Pick up'))
    if (unstack !== undefined) {
      environment.reset(0)
      const block = /Unstack the (\w+) block/.exec(unstack)![1]
      expect(environment.step(`[Pick up the ${block} block]`).info.reason).toMatch(/is not on the table/)
    }
    if (pickUp !== undefined) {
      environment.reset(0)
      environment.step(`[${pickUp}]`)
      expect(environment.step(`[${pickUp}]`).info.reason).toMatch(/the hand is not empty/)
    }
  })

  it("under onInvalid: 'continue', refuses the action and keeps the state, until maxTurns", () => {
    const environment = createBlocksworld({ onInvalid: 'continue', invalidPenalty: -0.1, maxTurns: 3 })
    const view = environment.reset(0)
    const refused = stepOutcomeSchema.parse(environment.step('[fly away]'))
    expect(refused).toMatchObject({ done: false, rewards: { player: -0.1 }, info: { invalidAction: true } })
    expect(refused.next!.legalActions).toEqual(view.legalActions)
    environment.step(`[${view.legalActions![0]}]`)
    expect(environment.step('[fly away]')).toMatchObject({ done: true, truncated: true, info: { invalidAction: true } })
  })

  it('splits problems by a hash, so train and test never share one; same seed, same problem', () => {
    const key = (observation: string) => /As initial conditions[^\n]*\nMy goal[^\n]*/.exec(observation)![0]
    const train = createBlocksworld({ split: 'train', testShare: 0.3, planLength: 2 })
    const test = createBlocksworld({ split: 'test', testShare: 0.3, planLength: 2 })
    const trainKeys = new Set(Array.from({ length: 40 }, (_, seed) => key(train.reset(seed).observation)))
    const testKeys = new Set(Array.from({ length: 40 }, (_, seed) => key(test.reset(seed).observation)))
    expect([...testKeys].some((problem) => trainKeys.has(problem))).toBe(false)
    expect(testKeys.size).toBeGreaterThan(20)
    expect(key(createBlocksworld({ split: 'test', testShare: 0.3, planLength: 2 }).reset(7).observation)).toBe(key(test.reset(7).observation))
    let inTest = 0
    for (let seed = 0; seed < 400; seed++) if (blocksworldInTestSplit(generateBlocksworldProblem({ seed }), 0, 0.25)) inTest++
    expect(inTest).toBeGreaterThan(60)
    expect(inTest).toBeLessThan(140)
  })

  it('checks its options and its use', () => {
    expect(() => createBlocksworld({ planLength: 5 })).toThrow(/even/)
    expect(() => createBlocksworld({ blocks: 3, planLength: 12 })).toThrow(/at most 4 × \(blocks − 1\)/)
    expect(() => createBlocksworld({ testShare: 1 })).toThrow(/testShare/)
    expect(() => createBlocksworld({ colour: 'red' } as never)).toThrow(InvalidArgumentError)
    expect(() => createBlocksworld().step('[Pick up the red block]')).toThrow(/before reset/)
    const environment = createBlocksworld()
    environment.reset(0)
    expect(() => environment.step(null as never)).toThrow(InvalidArgumentError)
  })

  it('never throws on seeded random garbage; episodes end naturally too (fuzz)', () => {
    const random = createRandom(11)
    const words = [
      'pick',
      'up',
      'unstack',
      'stack',
      'put',
      'down',
      'the',
      'block',
      'on',
      'top',
      'of',
      'from',
      'red',
      'blue',
      'green',
      'cyan',
      '[',
      ']',
      '\\boxed{',
      '}',
      '.',
      ' ',
      'é',
      '🂡',
      '\u0000',
    ]
    let invalid = 0
    let natural = 0
    for (let episode = 0; episode < 120; episode++) {
      const environment = createBlocksworld({ onInvalid: episode % 3 === 0 ? 'continue' : 'end', planLength: episode % 2 === 0 ? 2 : 4, maxSteps: 8 })
      let view = environment.reset(episode)
      for (;;) {
        const action =
          random.nextFloat() < 0.75
            ? `[${random.choice(view.legalActions!)}]`
            : Array.from({ length: random.nextInt(12) }, () => random.choice(words)).join(' ')
        const outcome = stepOutcomeSchema.parse(environment.step(action))
        if (outcome.info.invalidAction) invalid++
        else if (outcome.done) natural++
        if (outcome.done) {
          expect(() => environment.step('[anything]')).toThrow(/after the episode ended/)
          break
        }
        view = outcome.next!
      }
    }
    expect(invalid).toBeGreaterThan(0)
    expect(natural).toBeGreaterThan(0)
  })
})

describe('Blocksworld state keys', () => {
  /** The action that undoes `text`: put back what was picked up, stack back what was unstacked. */
  const undo = (text: string): string => {
    const action = parseBlocksworldAction(text.toLowerCase())!
    if (action.verb === 'pick up') return formatBlocksworldAction({ verb: 'put down', block: action.block })
    if (action.verb === 'unstack') return formatBlocksworldAction({ verb: 'stack', block: action.block, onto: action.from })
    throw new Error(`not a first move: ${text}`)
  }

  it('key the arrangement, the goal and the steps left: the same arrangement by another plan is the same key', () => {
    const problem = generateBlocksworldProblem({ seed: 5 })
    const environment = createBlocksworld({ maxSteps: 8 })
    const start = environment.reset(5)
    const goal = problem.goal
      .map(([top, bottom]) => `${top}/${bottom}`)
      .sort()
      .join(',')
    expect(start.stateKey).toBe(`state ${blocksworldStateKey(problem.initial)}; goal ${goal}; steps left 8`)
    const [first, second] = start.legalActions!
    expect(first).toBeDefined()
    expect(second).toBeDefined()
    const back = (move: string) => {
      environment.reset(5)
      const holding = environment.step(`[${move}]`).next!
      return { holding: holding.stateKey, back: environment.step(`[${undo(move)}]`).next!.stateKey }
    }
    const viaFirst = back(first!)
    const viaSecond = back(second!)
    expect(viaFirst.holding).not.toBe(viaSecond.holding) // a different block in hand
    expect(viaFirst.back).toBe(viaSecond.back) // both plans put the blocks back where they were
    expect(viaFirst.back).toBe(start.stateKey!.replace('steps left 8', 'steps left 6')) // with two steps spent
    // A refused action (onInvalid: continue) changes nothing the key holds.
    const patient = createBlocksworld({ maxSteps: 8, onInvalid: 'continue' })
    expect(patient.reset(5).stateKey).toBe(start.stateKey)
    expect(patient.step('[Fly the red block]').next!.stateKey).toBe(start.stateKey)
  })

  it('differ between problems with different goals', () => {
    const environment = createBlocksworld()
    const keys = new Set(Array.from({ length: 20 }, (_, seed) => environment.reset(seed).stateKey))
    const problems = new Set(Array.from({ length: 20 }, (_, seed) => JSON.stringify(generateBlocksworldProblem({ seed }))))
    expect(keys.size).toBe(problems.size)
  })
})
