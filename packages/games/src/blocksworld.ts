import { InvalidArgumentError, LudicError, deriveSeed, parseArgument, type EnvironmentV1, type StepOutcome, type TurnView } from '@ludic/core'
import { z } from 'zod'
import { abbreviate, extractMove } from './action.js'
import {
  applyBlocksworldAction,
  blocksworldGoalSatisfied,
  blocksworldLegalActions,
  blocksworldProblemOptionsShape,
  blocksworldStateKey,
  describeBlocksworldGoal,
  describeBlocksworldState,
  formatBlocksworldAction,
  generateBlocksworldProblem,
  parseBlocksworldAction,
  refinePlanLength,
  type BlocksworldProblem,
  type BlocksworldState,
} from './blocksworld-problem.js'
import { createTranscript, type Transcript } from './transcript.js'

const reward = (name: string) => z.number().refine(Number.isFinite, `${name} must be a finite number`)

export const blocksworldOptionsSchema = z
  .strictObject({
    ...blocksworldProblemOptionsShape,
    /** Actions allowed before the episode ends unsolved. Default: `planLength` (only a shortest plan succeeds, as in the step-k splits). */
    maxSteps: z.number().int().positive().max(100).optional(),
    /** Which problems `reset` deals: `all`, or the `train` / `test` part of the split by `testShare`. Default: `all`. */
    split: z.enum(['all', 'train', 'test']).default('all'),
    /** Seed of the split. Default: 0. */
    splitSeed: z.number().int().default(0),
    /** Share of all problems in the test part: a problem is in it when a hash of the problem and `splitSeed` says so, so the parts never share a problem. Default: 0.2. */
    testShare: z.number().min(0.01).max(0.99).default(0.2),
    /** Show the allowed actions in the observation and as `legalActions` (FoR generates the valid actions and the policy picks one). Default: true. */
    listActions: z.boolean().default(true),
    /** `end`: an invalid action ends the episode. `continue`: it is refused and the state stays (until `maxTurns`). Default: `end`. */
    onInvalid: z.enum(['end', 'continue']).default('end'),
    /** Reward when the goal holds. Default: 1. */
    successReward: reward('successReward').default(1),
    /** Reward when the steps run out first. Default: 0. */
    failureReward: reward('failureReward').default(0),
    /** Reward of an invalid action (the episode's reward under `onInvalid: 'end'`). Default: 0. */
    invalidPenalty: reward('invalidPenalty').default(0),
    /** Truncate after this many actions, valid or not (matters with `onInvalid: 'continue'`). Default: 30. */
    maxTurns: z.number().int().positive().default(30),
  })
  .superRefine(refinePlanLength)
export type BlocksworldOptions = z.input<typeof blocksworldOptionsSchema>

/** The role of the one player. */
export const blocksworldRole = 'player'

/** Whether a problem falls in the test part of the split (a hash of the problem and the split seed, below `testShare`). */
export function blocksworldInTestSplit(problem: Pick<BlocksworldProblem, 'initial' | 'goal'>, splitSeed: number, testShare: number): boolean {
  const goal = problem.goal.map(([top, bottom]) => `${top}/${bottom}`).sort()
  return deriveSeed('blocksworld-split', splitSeed, blocksworldStateKey(problem.initial), goal.join(',')) / 2 ** 32 < testShare
}

function introduction(problem: BlocksworldProblem, maxSteps: number): string {
  return [
    `You are solving a Blocksworld planning problem with ${problem.blocks.length} blocks.`,
    'One action per turn, in brackets: [Pick up the red block], [Unstack the red block from on top of the blue block], [Put down the red block] or [Stack the red block on top of the blue block].',
    'Rules: the hand holds at most one block. Pick up or unstack only with an empty hand and a clear block (nothing on top of it): pick up takes it from the table, unstack from the block it is on. Put down or stack only the block in hand; stack only onto a clear block.',
    `As initial conditions I have that ${describeBlocksworldState(problem.initial)}.`,
    `My goal is to have that ${describeBlocksworldGoal(problem.goal)}.`,
    `You have ${maxSteps} steps.`,
  ].join('\n')
}

/**
 * Blocksworld (`blocksworld-v1`), one role (`player`): FoR's embodied-reasoning task (after RAP and the
 * Blocksworld planning benchmark). A generated problem (`generateBlocksworldProblem`: `blocks` blocks, a
 * shortest plan of exactly `planLength` actions) is dealt from the seed; each action is one of the four
 * verbs in the benchmark's words (`Unstack the red block from on top of the blue block`; read leniently
 * by `parseBlocksworldAction`), checked against the domain's preconditions. The goal holding after an
 * action ends the episode with `successReward`; running out of `maxSteps` with `failureReward`. The move is
 * read like every game's (last `\boxed{}` or `[...]`), or is the whole response when it has neither.
 * Observations are TextArena's `[GAME]` / `[Player 0]` lines. Same seed, same problem.
 */
export function createBlocksworld(options: BlocksworldOptions = {}): EnvironmentV1 {
  const parsed = parseArgument(blocksworldOptionsSchema, options, 'options')
  const maxSteps = parsed.maxSteps ?? parsed.planLength
  // Fails here, not at reset, if no problem of this size exists (parsing already bounds planLength).
  generateBlocksworldProblem({ blocks: parsed.blocks, planLength: parsed.planLength, seed: 0 })

  let problem: BlocksworldProblem | undefined
  let state: BlocksworldState = { stacks: [], holding: undefined }
  let transcript: Transcript = createTranscript()
  let steps = 0
  let turns = 0
  let over = true

  const dealt = (seed: number): BlocksworldProblem => {
    for (let attempt = 0; attempt < 1000; attempt++) {
      const candidate = generateBlocksworldProblem({
        blocks: parsed.blocks,
        planLength: parsed.planLength,
        seed: attempt === 0 ? seed : deriveSeed(seed, attempt),
      })
      if (parsed.split === 'all' || blocksworldInTestSplit(candidate, parsed.splitSeed, parsed.testShare) === (parsed.split === 'test')) return candidate
    }
    throw new LudicError(`No Blocksworld problem of the ${parsed.split} part found in 1,000 draws (testShare ${parsed.testShare})`)
  }
  const legalActions = () => (parsed.listActions ? blocksworldLegalActions(state).map(formatBlocksworldAction) : undefined)
  const stateLine = () => {
    const line = `Current state: ${describeBlocksworldState(state)}. Steps left: ${maxSteps - steps}.`
    const legal = legalActions()
    return legal === undefined ? line : `${line}\nYour available actions are: ${legal.map((action) => `[${action}]`).join(', ')}`
  }
  const view = (): TurnView => {
    const legal = legalActions()
    const turn: TurnView = { role: blocksworldRole, observation: transcript.render(0), stateKey: stateKey() }
    return legal === undefined ? turn : { ...turn, legalActions: legal }
  }
  /**
   * `state blue,red|green#; goal blue/green,red/blue; steps left 3`: the blocks (stacks bottom to top, in sorted
   * order, then `#` and the block in hand), the goal (`top/bottom` relations, sorted) and the steps left — the
   * same arrangement reached by different plans has the same key.
   */
  const stateKey = () => {
    const goal = problem!.goal.map(([top, bottom]) => `${top}/${bottom}`).sort()
    return `state ${blocksworldStateKey(state)}; goal ${goal.join(',')}; steps left ${maxSteps - steps}`
  }
  const finish = (value: number, reason: string, extra: { invalidAction?: true; truncated?: true } = {}): StepOutcome => {
    over = true
    return {
      done: true,
      truncated: extra.truncated ?? false,
      rewards: { [blocksworldRole]: value },
      info: extra.invalidAction ? { invalidAction: true, reason } : { reason },
    }
  }
  const invalid = (reason: string): StepOutcome => {
    const text = `Invalid action: ${reason}`
    if (parsed.onInvalid === 'end') return finish(parsed.invalidPenalty, text, { invalidAction: true })
    transcript.game(`${text}. Try again.`)
    transcript.game(stateLine())
    turns++
    if (turns >= parsed.maxTurns)
      return finish(parsed.invalidPenalty + parsed.failureReward, `${text}; truncated after ${turns} turns (maxTurns)`, {
        invalidAction: true,
        truncated: true,
      })
    return { done: false, truncated: false, next: view(), rewards: { [blocksworldRole]: parsed.invalidPenalty }, info: { invalidAction: true, reason: text } }
  }

  return {
    specificationVersion: 'v1',
    id: 'blocksworld-v1',
    roles: [blocksworldRole],
    reset(seed: number): TurnView {
      if (!Number.isSafeInteger(seed)) throw new InvalidArgumentError({ argument: 'seed', value: seed, message: 'must be a safe integer' })
      problem = dealt(seed)
      state = problem.initial
      transcript = createTranscript()
      transcript.game(introduction(problem, maxSteps))
      steps = 0
      turns = 0
      over = false
      transcript.game(stateLine())
      return view()
    },
    step(action: string): StepOutcome {
      if (problem === undefined) throw new LudicError("Environment 'blocksworld-v1': step() before reset(seed)")
      if (over) throw new LudicError("Environment 'blocksworld-v1': step() after the episode ended; call reset(seed) to start another")
      if (typeof action !== 'string') throw new InvalidArgumentError({ argument: 'action', value: action, message: 'must be a string' })
      const move = (extractMove(action) ?? action).trim()
      if (move === '') return invalid('empty (expected an action such as [Pick up the red block])')
      const parsedAction = parseBlocksworldAction(move)
      if (parsedAction === undefined) return invalid(`${abbreviate(move)} is not an action (pick up, unstack, put down or stack a block)`)
      const applied = applyBlocksworldAction(state, parsedAction)
      if (!applied.ok) return invalid(`${formatBlocksworldAction(parsedAction)}: ${applied.reason}`)
      state = applied.state
      steps++
      turns++
      transcript.player(0, formatBlocksworldAction(parsedAction))
      if (blocksworldGoalSatisfied(state, problem.goal)) return finish(parsed.successReward, `Goal reached in ${steps} steps`)
      if (steps >= maxSteps) return finish(parsed.failureReward, `Out of steps: the goal is not reached after ${steps}`)
      if (turns >= parsed.maxTurns) return finish(parsed.failureReward, `Truncated after ${turns} turns (maxTurns)`, { truncated: true })
      transcript.game(stateLine())
      return { done: false, truncated: false, next: view(), rewards: { [blocksworldRole]: 0 }, info: {} }
    },
  }
}
