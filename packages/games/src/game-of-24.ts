import { InvalidArgumentError, LudicError, createRandom, parseArgument, type EnvironmentV1, type StepOutcome, type TurnView } from '@ludic/core'
import { z } from 'zod'
import { abbreviate, extractMove } from './action.js'
import {
  canonicalGame24Expression,
  evaluateGame24Expression,
  game24ExpressionNumbers,
  game24MaxExpressionLength,
  parseGame24Expression,
  type Game24Result,
} from './game-of-24-expression.js'
import { game24Problems, game24Split, game24Target } from './game-of-24-solver.js'
import { game24Items, game24NextSteps, playGame24Step, type Game24Item } from './game-of-24-step.js'
import { createTranscript, type Transcript } from './transcript.js'
import { formatRational, parseRational, rationalEquals, type Rational } from './rational.js'

const reward = (name: string) => z.number().refine(Number.isFinite, `${name} must be a finite number`)

export const game24OptionsSchema = z.strictObject({
  /**
   * `steps`: one step per turn, `[4 + 8 = 12]`, three turns (FoR's and ToT's format: each step is an
   * action). `expression`: one turn, the whole answer, `[(4 + 8) * (6 - 4)]`. Default: `steps`.
   */
  mode: z.enum(['steps', 'expression']).default('steps'),
  /** Which of the 1,362 standard problems to draw from (`game24Split`). Default: `all`. */
  split: z.enum(['all', 'train', 'test']).default('all'),
  /** Seed of the train/test split. Default: 0. */
  splitSeed: z.number().int().default(0),
  /** Problems in the test part of the split. Default: 100. */
  testSize: z.number().int().min(0).max(1362).default(100),
  /** Your own problems (four integers 0–10,000 each; need not be solvable), instead of the split. */
  problems: z
    .array(z.array(z.number().int().min(0).max(10_000)).length(4))
    .min(1)
    .max(100_000)
    .optional(),
  /** `random`: `reset(seed)` draws a problem with `createRandom(seed)`; `index`: problem number `seed` (modulo the count), to go through a list. Default: `random`. */
  pick: z.enum(['random', 'index']).default('random'),
  /** Only integer results (FoR's released code). Default: false (exact fractions). */
  integerSteps: z.boolean().default(false),
  /** `end`: an invalid step ends the episode. `continue`: it is refused, the numbers stay, the player tries again (until `maxTurns`). Default: `end`. */
  onInvalid: z.enum(['end', 'continue']).default('end'),
  /** Show every valid next step (`game24NextSteps`) in the observation and as `legalActions`. Default: false. */
  listSteps: z.boolean().default(false),
  /** Reward when the last number is 24. Default: 1. */
  successReward: reward('successReward').default(1),
  /** Reward when it is not (FoR's log-reward wants a small positive value, e.g. 0.001). Default: 0. */
  failureReward: reward('failureReward').default(0),
  /** Reward of an invalid step (the episode's reward under `onInvalid: 'end'`). Default: 0. */
  invalidPenalty: reward('invalidPenalty').default(0),
  /** Truncate after this many actions (matters only with `onInvalid: 'continue'`). Default: 10. */
  maxTurns: z.number().int().positive().default(10),
})
export type Game24Options = z.input<typeof game24OptionsSchema>

/** The role of the one player. */
export const game24Role = 'player'

/**
 * Checks a whole answer: an expression of integers with + − × ÷ and parentheses (no unary minus), optionally
 * followed by `= 24`, that uses each of `numbers` exactly once. Gives its exact value, its canonical form
 * (`canonicalGame24Expression`) and whether it is 24; unreadable answers, wrong numbers, a division by zero
 * or a wrong stated value are reasons, never throws. A leading `Answer:` is ignored.
 */
export function checkGame24Answer(numbers: readonly number[], text: string): Game24Result<{ value: Rational; expression: string; solved: boolean }> {
  if (text.length > 2 * game24MaxExpressionLength) return { ok: false, reason: `longer than ${2 * game24MaxExpressionLength} characters` }
  const sides = text
    .trim()
    .replace(/^answer\s*:/i, '')
    .split('=')
  if (sides.length > 2) return { ok: false, reason: "more than one '='" }
  const parsed = parseGame24Expression(sides[0]!)
  if (!parsed.ok) return { ok: false, reason: `cannot read the expression: ${parsed.reason}` }
  const used = game24ExpressionNumbers(parsed.value).map(formatRational)
  const wanted = numbers.map(String)
  const sort = (values: string[]) => [...values].sort((a, b) => Number(a) - Number(b))
  if (sort(used).join(' ') !== sort(wanted).join(' '))
    return { ok: false, reason: `must use each of ${sort(wanted).join(' ')} exactly once (it uses ${sort(used).join(' ') || 'none'})` }
  const value = evaluateGame24Expression(parsed.value)
  if (!value.ok) return value
  if (sides.length === 2) {
    const stated = parseRational(sides[1]!)
    if (stated === undefined) return { ok: false, reason: "the value after '=' must be one number" }
    if (!rationalEquals(stated, value.value)) return { ok: false, reason: `the expression is ${formatRational(value.value)}, not ${formatRational(stated)}` }
  }
  const solved = value.value.numerator === game24Target && value.value.denominator === 1
  return { ok: true, value: { value: value.value, expression: canonicalGame24Expression(parsed.value), solved } }
}

function introduction(numbers: readonly number[], mode: 'steps' | 'expression', integerSteps: boolean): string {
  const head = `You are playing the Game of 24. Use the numbers ${numbers.join(' ')} and the operations + - * / to reach 24, using each number exactly once.`
  if (mode === 'expression') {
    return `${head}\nAnswer with one expression in brackets. For example, for 4 4 6 8: [(4 + 8) * (6 - 4)]`
  }
  const fractions = integerSteps ? 'Every result must be an integer.' : 'Results are exact fractions (write them like 24/5).'
  return [
    head,
    'Each turn, combine two of the remaining numbers in one step: the operation, then = and its result, in brackets.',
    `The two numbers are replaced by the result. ${fractions} After ${numbers.length - 1} steps the last number must be 24.`,
    'For example, for 4 4 6 8: [4 + 8 = 12], then [6 - 4 = 2], then [12 * 2 = 24].',
  ].join('\n')
}

/**
 * The Game of 24 (`game-of-24-v1`), one role (`player`): four numbers are dealt (a problem of `game24Problems`,
 * of a split, or of your own list), and the player reaches 24 with + − × ÷, each number used once. In `steps`
 * mode each action is one step (`4 + 8 = 12`; the `= 12` may be left out, and is checked when given) on two
 * remaining numbers, computed exactly; after three steps the last number decides the reward. In `expression`
 * mode the one action is the whole expression. The move is read like every game's (last `\boxed{}` or
 * `[...]`), or is the whole response when it has neither. Observations are TextArena's `[GAME]` /
 * `[Player 0]` lines: the problem, then each step and the numbers left; `TurnView.state` gives the same as data
 * (`{ numbers, steps, remaining }`: the problem, the steps played, the numbers left as exact fractions). Same seed,
 * same problem.
 */
export function createGame24(options: Game24Options = {}): EnvironmentV1 {
  const parsed = parseArgument(game24OptionsSchema, options, 'options')
  const list = parsed.problems ?? (parsed.split === 'all' ? game24Problems() : game24Split({ seed: parsed.splitSeed, testSize: parsed.testSize })[parsed.split])
  if (list.length === 0)
    throw new InvalidArgumentError({ argument: 'options.testSize', value: parsed.testSize, message: `leaves the ${parsed.split} part empty` })

  let numbers: readonly number[] = []
  let items: Game24Item[] = []
  let steps: string[] = []
  let transcript: Transcript = createTranscript()
  let turns = 0
  let over = true
  let started = false

  const legalActions = () =>
    parsed.listSteps && parsed.mode === 'steps'
      ? game24NextSteps(
          items.map((item) => item.value),
          parsed,
        )
      : undefined
  const remainingLine = () => {
    const line = `Remaining numbers: ${items.map((item) => formatRational(item.value)).join(' ')}`
    const legal = legalActions()
    return legal === undefined ? line : `${line}\nYour available actions are: ${legal.map((step) => `[${step}]`).join(', ')}`
  }
  const view = (): TurnView => {
    const legal = legalActions()
    const turn: TurnView = {
      role: game24Role,
      observation: transcript.render(0),
      stateKey: stateKey(),
      // The problem, the steps played (as written) and the numbers left: a prompt or a scripted player reads these, not the wording.
      state: { numbers: [...numbers], steps: [...steps], remaining: items.map((item) => formatRational(item.value)) },
    }
    return legal === undefined ? turn : { ...turn, legalActions: legal }
  }
  /**
   * `numbers 2 12 24/5`: the numbers left, smallest first (exact fractions) — all that decides the rest, so the same
   * numbers reached by different steps, or dealt by different problems, have the same key.
   */
  const stateKey = () => {
    const values = items.map((item) => ({ value: item.value.numerator / item.value.denominator, text: formatRational(item.value) }))
    values.sort((a, b) => a.value - b.value || (a.text < b.text ? -1 : a.text > b.text ? 1 : 0)) // the text breaks ties of rounding
    return `numbers ${values.map(({ text }) => text).join(' ')}`
  }
  const finish = (value: number, reason: string, extra: { invalidAction?: true; truncated?: true } = {}): StepOutcome => {
    over = true
    return {
      done: true,
      truncated: extra.truncated ?? false,
      rewards: { [game24Role]: value },
      info: extra.invalidAction ? { invalidAction: true, reason } : { reason },
    }
  }
  const invalid = (reason: string): StepOutcome => {
    const text = `Invalid ${parsed.mode === 'steps' ? 'step' : 'answer'}: ${reason}`
    if (parsed.onInvalid === 'end') return finish(parsed.invalidPenalty, text, { invalidAction: true })
    transcript.game(`${text}. Try again.`)
    if (parsed.mode === 'steps') transcript.game(remainingLine())
    turns++
    if (turns >= parsed.maxTurns)
      return finish(parsed.invalidPenalty + parsed.failureReward, `${text}; truncated after ${turns} turns (maxTurns)`, {
        invalidAction: true,
        truncated: true,
      })
    return { done: false, truncated: false, next: view(), rewards: { [game24Role]: parsed.invalidPenalty }, info: { invalidAction: true, reason: text } }
  }
  const end = (solved: boolean, value: Rational, expression: string): StepOutcome =>
    solved
      ? finish(parsed.successReward, `Reached 24: ${expression}`)
      : finish(parsed.failureReward, `Ended with ${formatRational(value)}, not 24: ${expression}`)

  return {
    specificationVersion: 'v1',
    id: 'game-of-24-v1',
    roles: [game24Role],
    reset(seed: number): TurnView {
      if (!Number.isSafeInteger(seed)) throw new InvalidArgumentError({ argument: 'seed', value: seed, message: 'must be a safe integer' })
      const index = parsed.pick === 'index' ? ((seed % list.length) + list.length) % list.length : createRandom(seed).nextInt(list.length)
      numbers = list[index]!
      items = game24Items(numbers)
      steps = []
      transcript = createTranscript()
      transcript.game(introduction(numbers, parsed.mode, parsed.integerSteps))
      if (parsed.mode === 'steps') transcript.game(remainingLine())
      turns = 0
      over = false
      started = true
      return view()
    },
    step(action: string): StepOutcome {
      if (!started) throw new LudicError("Environment 'game-of-24-v1': step() before reset(seed)")
      if (over) throw new LudicError("Environment 'game-of-24-v1': step() after the episode ended; call reset(seed) to start another")
      if (typeof action !== 'string') throw new InvalidArgumentError({ argument: 'action', value: action, message: 'must be a string' })
      const move = (extractMove(action) ?? action).trim()
      if (move === '') return invalid('empty (expected a step such as [4 + 8 = 12])')
      if (parsed.mode === 'expression') {
        const checked = checkGame24Answer(numbers, move)
        if (!checked.ok) return invalid(`${abbreviate(move)}: ${checked.reason}`)
        transcript.player(0, checked.value.expression)
        return end(checked.value.solved, checked.value.value, checked.value.expression)
      }
      const played = playGame24Step(items, move, parsed)
      if (!played.ok) return invalid(`${abbreviate(move)}: ${played.reason}`)
      items = played.value.items
      steps.push(played.value.step)
      transcript.player(0, played.value.step)
      turns++
      if (items.length === 1) {
        const last = items[0]!
        return end(rationalEquals(last.value, { numerator: game24Target, denominator: 1 }), last.value, canonicalGame24Expression(last.expression))
      }
      transcript.game(remainingLine())
      if (turns >= parsed.maxTurns) return finish(parsed.failureReward, `Truncated after ${turns} turns (maxTurns)`, { truncated: true })
      return { done: false, truncated: false, next: view(), rewards: { [game24Role]: 0 }, info: {} }
    },
  }
}
