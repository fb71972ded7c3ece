import { createRandom, InvalidArgumentError, parseArgument, type ChatMessage, type EnvironmentV1, type Random, type Turn, type TurnView } from '@ludic/core'
import { z } from 'zod'
import { defaultPromptTemplate, historyTurn, renderPrompt, type PromptContext, type PromptTemplate } from './prompt-template.js'

/** Game `g` of random legal play is reset with `seed × gameSeedStride + g`. */
export const gameSeedStride = 100_000
const largestSeed = Math.floor(Number.MAX_SAFE_INTEGER / gameSeedStride) - gameSeedStride

const isFunction = (value: unknown) => typeof value === 'function'
const isView = (value: unknown) => typeof value === 'object' && value !== null && typeof (value as TurnView).observation === 'string'

const sharedOptions = {
  /** The chat a policy would see at a state (`renderPrompt`: a `{observation}` template or a prompt function). Default `'{observation}'`. */
  prompt: z
    .union([z.string(), z.custom<Exclude<PromptTemplate, string>>(isFunction, 'must be a prompt function (view, history, context) => messages')])
    .default(defaultPromptTemplate),
  /** Renders the chat into the example's prompt text (the model's chat template, with the generation prompt). */
  chatTemplate: z.custom<(messages: readonly ChatMessage[]) => string>(isFunction, 'must be a function (messages) => prompt text'),
  /** The responses at a state: each of its legal moves once (a uniform target), or only the move played. Default `every-legal-move`. */
  responses: z.enum(['every-legal-move', 'played']).default('every-legal-move'),
  /** Each distinct prompt text once (its first visit), so frequent states do not dominate. Default true. */
  distinct: z.boolean().default(true),
  /** The legal moves at a state. Default: the view's `legalActions` (an environment that lists none cannot be played this way). */
  legalActions: z
    .custom<(view: TurnView, environmentId: string) => readonly string[]>(isFunction, 'must be a function (view, environmentId) => legal moves')
    .optional(),
  /** How many times a move's example is repeated (e.g. `{ '[Accept]': 4 }`); a move not named once. Default `{}`. */
  copies: z.record(z.string(), z.number().int().min(1).max(10_000_000)).default({}),
  /** The whole list repeated to about this many examples (`max(1, round(repeatTo / length))` copies), e.g. to weigh games equally. Default: once. */
  repeatTo: z.number().int().positive().max(10_000_000).optional(),
  /** The most examples made (copies and repetition included); more is an `InvalidArgumentError`. Default 1,000,000. */
  maxExamples: z.number().int().positive().max(10_000_000).default(1_000_000),
}

const playSchema = z.strictObject({
  ...sharedOptions,
  /** Makes the environment, once; it is reset for every game. */
  environment: z.custom<() => EnvironmentV1>(isFunction, 'must be a function () => EnvironmentV1'),
  /** Games played. Default 64. */
  games: z.number().int().positive().max(100_000).default(64),
  /** Game `g` is reset with `seed × 100,000 + g`; the moves are drawn from `createRandom(seed)` unless `random` is given. Default 0. */
  seed: z.number().int().min(-largestSeed).max(largestSeed).default(0),
  /** The generator the moves are drawn from (one `choice` per turn), e.g. a derived stream. Default `createRandom(seed)`. */
  random: z.custom<Random>((value) => typeof value === 'object' && value !== null && isFunction((value as Random).choice), 'must be a Random').optional(),
  /** A game still running after this many turns is cut off there. Default 1000. */
  maxTurns: z.number().int().positive().max(100_000).default(1000),
})

const statesSchema = z.strictObject({
  ...sharedOptions,
  /**
   * Instead of playing, these states in order (e.g. Kuhn Poker's 12 information states); a prompt function sees no
   * history and the context `{ environmentId: '', role: view.role, turnIndex: 0, seed: 0 }`.
   */
  states: z.array(z.custom<TurnView>(isView, 'must be a TurnView (an object with an observation)')).max(1_000_000),
  /** Each of a state's legal moves once (nothing is played). */
  responses: z.literal('every-legal-move').default('every-legal-move'),
})

export type RandomLegalPlayOptions = z.input<typeof playSchema> | z.input<typeof statesSchema>

/** One supervised example: the chat at a state, its prompt text and a legal move as the response. */
export interface RandomLegalPlayExample {
  messages: ChatMessage[]
  prompt: string
  response: string
}

export interface RandomLegalPlay {
  /** The examples in the order visited (a state's moves in its legal order), copies and repetition included. */
  examples: RandomLegalPlayExample[]
  /** `prompt + response` of each example before copies and repetition: a tokenizer's training text. */
  corpus: string[]
  /** Every state visited (or given), repeats included, in order. */
  states: TurnView[]
}

/**
 * Random legal play as supervised warm-up examples: a model made from scratch learns the games' legal moves
 * before self-play (SPIRAL's and the examples' warm-up), and a tokenizer learns their text.
 *
 *   for g in 0 … games−1:  view = environment.reset(seed·100,000 + g)
 *     for turn < maxTurns:  prompt = chatTemplate(prompt(view, history))
 *       unless distinct and prompt seen:  one example (prompt, m) per m in legal(view)  [or per the move played]
 *       view = environment.step(random.choice(legal(view)))  until done or truncated
 *
 * Each legal move once at each distinct state gives a uniform target (the warm-up teaches which moves are legal, not
 * how often random play reaches a state); `responses: 'played'` with `distinct: false` gives every turn's move
 * instead, the states weighted by how often they occur. The draws are one `choice` per turn whatever the options,
 * so the same seed visits the same states. `states` replaces the play by a list of states (all of a small game's).
 */
export function randomLegalPlay(options: RandomLegalPlayOptions): RandomLegalPlay {
  const parsed =
    typeof options === 'object' && options !== null && 'states' in options
      ? parseArgument(statesSchema, options, 'options')
      : parseArgument(playSchema, options, 'options')
  const examples: RandomLegalPlayExample[] = []
  const corpus: string[] = []
  const states: TurnView[] = []
  const seen = new Set<string>()
  const legalOf = (view: TurnView, environmentId: string, argument: string): readonly string[] => {
    const legal = parsed.legalActions === undefined ? view.legalActions : parsed.legalActions(view, environmentId)
    if (legal === undefined || legal.length === 0) {
      throw new InvalidArgumentError({
        argument,
        value: environmentId === '' ? view.observation.slice(0, 200) : environmentId,
        message: 'gives no legal actions at a turn: random legal play needs TurnView.legalActions (or the legalActions option)',
      })
    }
    return legal
  }
  const visit = (view: TurnView, history: readonly Turn[], context: PromptContext, legal: readonly string[], played: string) => {
    states.push(view)
    const messages = renderPrompt(parsed.prompt, view, history, context)
    const prompt = parsed.chatTemplate(messages)
    if (parsed.distinct) {
      if (seen.has(prompt)) return
      seen.add(prompt)
    }
    for (const response of parsed.responses === 'played' ? [played] : legal) {
      corpus.push(`${prompt}${response}`)
      const copies = Object.hasOwn(parsed.copies, response) ? parsed.copies[response]! : 1
      if (examples.length + copies > parsed.maxExamples) {
        throw new InvalidArgumentError({ argument: 'options.maxExamples', value: parsed.maxExamples, message: 'is exceeded: play fewer games or turns' })
      }
      for (let copy = 0; copy < copies; copy++) examples.push({ messages, prompt, response })
    }
  }

  if ('states' in parsed) {
    for (const view of parsed.states) {
      const legal = legalOf(view, '', 'options.states')
      visit(view, [], { environmentId: '', role: view.role, turnIndex: 0, seed: 0 }, legal, '')
    }
  } else {
    const environment = parsed.environment()
    const random = parsed.random ?? createRandom(parsed.seed)
    for (let game = 0; game < parsed.games; game++) {
      const seed = parsed.seed * gameSeedStride + game
      const history: Turn[] = []
      let view: TurnView | undefined = environment.reset(seed)
      while (view !== undefined && history.length < parsed.maxTurns) {
        const legal = legalOf(view, environment.id, 'options.environment')
        const action = random.choice(legal)
        visit(view, history, { environmentId: environment.id, role: view.role, turnIndex: history.length, seed }, legal, action)
        const outcome = environment.step(action)
        history.push(historyTurn(history.length, view, action, outcome))
        view = outcome.done || outcome.truncated ? undefined : outcome.next
      }
    }
  }

  if (parsed.repeatTo === undefined || examples.length === 0) return { examples, corpus, states }
  const repeats = Math.max(1, Math.round(parsed.repeatTo / examples.length))
  if (repeats * examples.length > parsed.maxExamples) {
    throw new InvalidArgumentError({ argument: 'options.maxExamples', value: parsed.maxExamples, message: `is exceeded by repeatTo ${parsed.repeatTo}` })
  }
  return { examples: Array.from({ length: repeats }, () => examples).flat(), corpus, states }
}
