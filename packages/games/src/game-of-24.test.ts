import { InvalidArgumentError, createRandom, stepOutcomeSchema, type StepOutcome } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { checkGame24Answer, createGame24 } from './game-of-24.js'
import { createGame, gameIds, games, reasoningGameIds } from './registry.js'
import { game24Problems, game24Split, solveGame24 } from './game-of-24-solver.js'
import { game24NextSteps } from './game-of-24-step.js'

const fixed = (options: Parameters<typeof createGame24>[0] = {}) => createGame24({ problems: [[4, 7, 8, 8]], ...options })

function play(environment: ReturnType<typeof createGame24>, actions: readonly string[]): StepOutcome[] {
  return actions.map((action) => stepOutcomeSchema.parse(environment.step(action)))
}

describe('Game of 24 (steps)', () => {
  it('shows the numbers and the format, then each step and the numbers left; 24 earns the success reward', () => {
    const environment = fixed()
    expect(environment.id).toBe('game-of-24-v1')
    expect(environment.roles).toEqual(['player'])
    const view = environment.reset(0)
    expect(view.role).toBe('player')
    expect(view.legalActions).toBeUndefined()
    expect(view.observation).toMatch(/^\[GAME\] You are playing the Game of 24\. Use the numbers 4 7 8 8 /)
    expect(view.observation).toContain('After 3 steps the last number must be 24.')
    expect(view.observation.endsWith('[GAME] Remaining numbers: 4 7 8 8')).toBe(true)

    const [first, second, third] = play(environment, ['I divide: [8 / 8 = 1]', '\\boxed{7 - 1 = 6}', '6 * 4 = 24 (left: 24)'])
    expect(first).toMatchObject({ done: false, rewards: { player: 0 }, info: {} })
    expect(first!.next!.observation.endsWith('[Player 0] 8 / 8 = 1\n[GAME] Remaining numbers: 4 7 1')).toBe(true)
    expect(second!.next!.observation.endsWith('[Player 0] 7 - 1 = 6\n[GAME] Remaining numbers: 4 6')).toBe(true)
    expect(third).toEqual({ done: true, truncated: false, rewards: { player: 1 }, info: { reason: 'Reached 24: 4 * (7 - 8 / 8)' } })
    expect(() => environment.step('[1 + 1]')).toThrow(/after the episode ended/)
  })

  it('gives the failure reward when the last number is not 24', () => {
    const environment = fixed({ failureReward: 0.001 })
    environment.reset(0)
    const outcomes = play(environment, ['8 + 8', '16 + 7', '23 + 4'])
    expect(outcomes[2]).toEqual({ done: true, truncated: false, rewards: { player: 0.001 }, info: { reason: 'Ended with 27, not 24: 4 + 7 + 8 + 8' } })
  })

  it('makes every kind of bad step an invalid-action outcome with a reason, never a throw', () => {
    const cases: [string, RegExp][] = [
      ['[5 + 4 = 9]', /5 is not among the remaining numbers \(4 7 8 8\)/],
      ['[4 + 4 = 8]', /uses 4 twice/],
      ['[4 + 8 = 13]', /4 \+ 8 is 12, not 13/],
      ['[8 / (8 - 8)]', /exactly two numbers/],
      ['[4 + 7 + 8]', /exactly two numbers/],
      ['hello there', /cannot read the step/],
      ['', /empty/],
      ['   ', /empty/],
      ['[]', /empty/],
      [`[4 + ${'9'.repeat(40)}]`, /too large/],
      [`[4 + 1${'0'.repeat(14)}]`, /not among the remaining numbers/],
      ['x'.repeat(200_000), /longer than/],
      ['[(4 + 8) * (7 - 8)]', /exactly two numbers/],
    ]
    for (const [action, reason] of cases) {
      const environment = fixed({ invalidPenalty: -1 })
      environment.reset(0)
      const outcome = stepOutcomeSchema.parse(environment.step(action))
      expect(outcome, action.slice(0, 40)).toMatchObject({ done: true, truncated: false, rewards: { player: -1 }, info: { invalidAction: true } })
      expect(outcome.info.reason!, action.slice(0, 40)).toMatch(reason)
      expect(outcome.info.reason!.length).toBeLessThan(400)
    }
    const zero = createGame24({ problems: [[4, 0, 6, 1]] })
    zero.reset(0)
    expect(zero.step('[4 / 0]').info).toEqual({ invalidAction: true, reason: 'Invalid step: 4 / 0: division by zero' })
  })

  it("under onInvalid: 'continue', refuses the step, keeps the numbers and lets the player go on, until maxTurns", () => {
    const environment = fixed({ onInvalid: 'continue', invalidPenalty: -0.1, maxTurns: 5 })
    environment.reset(0)
    const [bad, good] = play(environment, ['[4 + 4]', '[8 / 8 = 1]'])
    expect(bad).toMatchObject({ done: false, rewards: { player: -0.1 }, info: { invalidAction: true } })
    expect(bad!.next!.observation).toMatch(/Invalid step: 4 \+ 4: uses 4 twice.*Try again\.\n\[GAME\] Remaining numbers: 4 7 8 8$/s)
    expect(good!.next!.observation.endsWith('Remaining numbers: 4 7 1')).toBe(true)
    const rest = play(environment, ['[nonsense]', '[more nonsense]', '[still nonsense]'])
    expect(rest[2]).toMatchObject({ done: true, truncated: true, rewards: { player: -0.1 }, info: { invalidAction: true } })
  })

  it('with integerSteps, refuses fractional results (FoR)', () => {
    const environment = createGame24({ problems: [[3, 3, 8, 8]], integerSteps: true })
    environment.reset(0)
    expect(environment.step('[8 / 3]').info.reason).toMatch(/not an integer/)
  })

  it('lists every valid next step when asked, and accepts each of them', () => {
    const environment = fixed({ listSteps: true })
    const view = environment.reset(0)
    expect(view.legalActions).toEqual(game24NextSteps([4, 7, 8, 8]))
    expect(view.observation).toContain('Your available actions are: [7 + 4 = 11], [7 - 4 = 3]')
    for (const step of view.legalActions!) {
      environment.reset(0)
      expect(environment.step(`[${step}]`).info.invalidAction, step).toBeUndefined()
    }
  })

  it('deals the same problem for the same seed, from the chosen split', () => {
    const problemOf = (observation: string) => /Use the numbers ([\d ]+) and/.exec(observation)![1]!
    const environment = createGame24()
    const first = [0, 1, 2, 3, 4, 5].map((seed) => problemOf(environment.reset(seed).observation))
    expect([0, 1, 2, 3, 4, 5].map((seed) => problemOf(createGame24().reset(seed).observation))).toEqual(first)
    expect(new Set(first).size).toBeGreaterThan(3)
    const all = new Set(game24Problems().map((problem) => problem.join(' ')))
    for (const problem of first) expect(all.has(problem)).toBe(true)

    const test = new Set(game24Split({ seed: 3, testSize: 20 }).test.map((problem) => problem.join(' ')))
    const testEnvironment = createGame24({ split: 'test', splitSeed: 3, testSize: 20 })
    const trainEnvironment = createGame24({ split: 'train', splitSeed: 3, testSize: 20 })
    for (let seed = 0; seed < 50; seed++) {
      expect(test.has(problemOf(testEnvironment.reset(seed).observation))).toBe(true)
      expect(test.has(problemOf(trainEnvironment.reset(seed).observation))).toBe(false)
    }
    const indexed = createGame24({
      problems: [
        [1, 2, 3, 4],
        [4, 7, 8, 8],
      ],
      pick: 'index',
    })
    expect([0, 1, 2, -1].map((seed) => problemOf(indexed.reset(seed).observation))).toEqual(['1 2 3 4', '4 7 8 8', '1 2 3 4', '4 7 8 8'])
  })

  it('checks its options and its use', () => {
    expect(() => createGame24({ mode: 'proof' } as never)).toThrow(InvalidArgumentError)
    expect(() => createGame24({ problems: [[1, 2, 3]] })).toThrow(/problems/)
    expect(() => createGame24({ successReward: Number.NaN })).toThrow(/successReward/)
    expect(() => createGame24({ split: 'test', testSize: 0 })).toThrow(/empty/)
    expect(() => createGame24({ unknown: 1 } as never)).toThrow(InvalidArgumentError)
    expect(() => fixed().step('[1 + 1]')).toThrow(/before reset/)
    const environment = fixed()
    environment.reset(0)
    expect(() => environment.step(7 as never)).toThrow(InvalidArgumentError)
  })
})

describe('Game of 24 (expression)', () => {
  it('takes one whole expression, using each number once', () => {
    const environment = fixed({ mode: 'expression' })
    const view = environment.reset(0)
    expect(view.observation).toContain('Answer with one expression in brackets')
    expect(view.observation).not.toContain('Remaining numbers')
    expect(environment.step('So: \\boxed{(7 - 8 / 8) * 4 = 24}')).toEqual({
      done: true,
      truncated: false,
      rewards: { player: 1 },
      info: { reason: 'Reached 24: 4 * (7 - 8 / 8)' },
    })
    environment.reset(0)
    expect(environment.step('[4 + 7 + 8 + 8]')).toMatchObject({ done: true, rewards: { player: 0 }, info: { reason: 'Ended with 27, not 24: 4 + 7 + 8 + 8' } })
  })

  it('refuses expressions that misuse the numbers, divide by zero, misstate the value or do not parse', () => {
    const check = (numbers: number[], text: string) => {
      const checked = checkGame24Answer(numbers, text)
      return checked.ok ? `${checked.value.expression} ${checked.value.solved}` : checked.reason
    }
    expect(check([4, 7, 8, 8], 'Answer: 8 * (4 + 7 - 8)')).toBe('8 * (4 + 7 - 8) true')
    expect(check([4, 7, 8, 8], '(7 - 8 / 8) * 4 * 1')).toMatch(/must use each of 4 7 8 8 exactly once \(it uses 1 4 7 8 8\)/)
    expect(check([4, 7, 8, 8], '4 * 7 - 8')).toMatch(/uses 4 7 8\)/)
    expect(check([4, 7, 8, 8], '8 * 8 - 4 * 7')).toBe('8 * 8 - 4 * 7 false')
    expect(check([4, 4, 7, 8], '8 / (4 - 4) + 7')).toBe('division by zero in 8 / (4 - 4)')
    expect(check([4, 7, 8, 8], '4 * (7 - 8 / 8) = 25')).toBe('the expression is 24, not 25')
    expect(check([4, 7, 8, 8], '4 * (7 - 8 / 8) = = 24')).toMatch(/more than one/)
    expect(check([4, 7, 8, 8], '-4 * (7 - 8 / 8)')).toMatch(/no unary minus/)
    expect(check([4, 7, 8, 8], '4 * (7 - 8 / 8')).toMatch(/not closed/)
    expect(check([4, 7, 8, 8], '')).toMatch(/empty/)
    const environment = fixed({ mode: 'expression', invalidPenalty: -1 })
    environment.reset(0)
    expect(environment.step('[4 * 7 - 8]')).toMatchObject({ done: true, rewards: { player: -1 }, info: { invalidAction: true } })
  })

  it('every solution of solveGame24 is accepted, for a sample of problems', () => {
    const problems = game24Problems()
    for (let index = 0; index < problems.length; index += 131) {
      const numbers = problems[index]!
      for (const solution of solveGame24(numbers)) expect(checkGame24Answer(numbers, solution), solution).toMatchObject({ ok: true, value: { solved: true } })
    }
  })
})

describe('Game of 24 fuzz', () => {
  it('never throws on seeded random garbage, in either mode, and every outcome is well formed', () => {
    const random = createRandom(24)
    const alphabet = [
      '1',
      '2',
      '3',
      '4',
      '7',
      '8',
      '12',
      '24',
      '0',
      '-',
      '+',
      '*',
      '/',
      '÷',
      '×',
      '(',
      ')',
      '=',
      ' ',
      '[',
      ']',
      '\\boxed{',
      '}',
      'left:',
      '.',
      'é',
      '🃏',
      '9'.repeat(20),
      '\u0000',
    ]
    let invalid = 0
    let natural = 0
    for (let episode = 0; episode < 200; episode++) {
      const mode = episode % 4 === 0 ? 'expression' : 'steps'
      const environment = createGame24({ mode, onInvalid: episode % 3 === 0 ? 'continue' : 'end', listSteps: mode === 'steps' })
      let view = environment.reset(episode)
      for (;;) {
        const legal = view.legalActions
        const action =
          legal !== undefined && random.nextFloat() < 0.7
            ? random.choice(legal)
            : Array.from({ length: random.nextInt(30) }, () => random.choice(alphabet)).join('')
        const outcome = stepOutcomeSchema.parse(environment.step(action))
        if (outcome.info.invalidAction) invalid++
        else if (outcome.done) natural++
        if (outcome.done) break
        view = outcome.next!
      }
    }
    expect(invalid).toBeGreaterThan(0)
    expect(natural).toBeGreaterThan(0)
  })
})

describe('reasoning environments in the registry', () => {
  it('are made by id, after the two-player games, which gameIds alone lists', () => {
    expect(reasoningGameIds).toEqual(['game-of-24-v1', 'blocksworld-v1'])
    expect(games.names().slice(0, gameIds.length + 2)).toEqual([...gameIds, ...reasoningGameIds])
    for (const id of reasoningGameIds) {
      const environment = createGame(id)
      expect(environment.id).toBe(id)
      expect(environment.roles).toEqual(['player'])
      expect(environment.reset(0).role).toBe('player')
    }
    expect(games.create('game-of-24-v1', { mode: 'expression' }).reset(0).observation).toContain('Answer with one expression')
    expect(() => createGame('game-of-24-v1', { mode: 'proof' })).toThrow(InvalidArgumentError)
  })
})

describe('Game of 24 state keys', () => {
  const keysOf = (problem: readonly number[], steps: readonly string[], options: Parameters<typeof createGame24>[0] = {}) => {
    const environment = createGame24({ problems: [[...problem]], ...options })
    const keys = [environment.reset(0).stateKey]
    for (const step of steps.slice(0, -1)) keys.push(environment.step(`[${step}]`).next!.stateKey)
    return keys
  }

  it('key the numbers left, smallest first: other steps or another problem reaching the same numbers give the same key', () => {
    expect(keysOf([4, 8, 6, 4], ['4 + 8 = 12', '6 - 4 = 2', 'x'])).toEqual(['numbers 4 4 6 8', 'numbers 4 6 12', 'numbers 2 12'])
    expect(keysOf([4, 8, 6, 4], ['6 - 4 = 2', '4 + 8 = 12', 'x'])[2]).toBe('numbers 2 12')
    expect(keysOf([1, 1, 2, 12], ['1 - 1 = 0', '0 + 2 = 2', 'x'])[2]).toBe('numbers 2 12')
    expect(keysOf([1, 3, 4, 6], ['1 / 4 = 1/4', 'x'])[1]).toBe('numbers 1/4 3 6')
    expect(keysOf([1, 3, 4, 6], ['4 - 6 = -2', 'x'])[1]).toBe('numbers -2 1 3')
    expect(keysOf([4, 8, 6, 4], ['4 + 8 = 12', 'x'])[1]).not.toBe(keysOf([4, 8, 6, 4], ['4 * 8 = 32', 'x'])[1])
    expect(createGame24({ problems: [[4, 8, 6, 4]], mode: 'expression' }).reset(0).stateKey).toBe('numbers 4 4 6 8')
  })
})
