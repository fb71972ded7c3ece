/**
 * What the role-play examples share (`roleplay-cpo`, `character-arena`): Ludic's shipped characters and user
 * personas as training contexts, the prompt and chat template a tiny model reads, a tokenizer trained on that text,
 * the warm-up dialogue made from the cards, the network-free rubric judge (group and pairwise) and its absolute
 * rubric score, and a judge served by any OpenAI-compatible endpoint instead (`LUDIC_JUDGE_URL`).
 */
import {
  createRandom,
  deriveSeed,
  InvalidArgumentError,
  type ChatMessage,
  type Completion,
  type EnvironmentV1,
  type GenerationRequest,
  type PolicyV1,
  type Trajectory,
} from '@ludic/core'
import { combineRubricScores, createGroupJudge, createPairwiseJudge, type GroupJudge, type PairwiseJudge } from '@ludic/rewards'
import {
  createRoleplayEnvironment,
  createScriptedUser,
  loadCharacters,
  loadPersonas,
  renderCharacterPrompt,
  roleplayEnvironmentId,
  roleplayReplyScores,
  roleplayRoles,
  type Character,
  type Persona,
  type RoleplayEnvironment,
  type RoleplayRuleScores,
} from '@ludic/roleplay'
import { createOpenAICompatiblePolicy } from '@ludic/rollout'
import { Tokenizer, trainBpe } from '@ludic/tokenizer'

export const endOfText = '<|end|>'

/** The characters and personas every context is drawn from (Ludic's shipped, hand-written ones). */
export const characters: readonly Character[] = loadCharacters()
export const personas: readonly Persona[] = loadPersonas()

/** The character's system prompt, compact (one line: name, speaking style, knowledge boundary) for a tiny model. */
export const characterPrompt = (character: Character): string => renderCharacterPrompt(character, { style: 'compact' })
const characterByPrompt = new Map(characters.map((character) => [characterPrompt(character), character]))

/**
 * The chat template of the tiny model: the system line, then each message on its own line, `<` before the other
 * role's and `>` before the model's own, ending with `>` where the reply goes.
 * `You are Button (…). You know nothing of … Stay in character.\n< What's your favourite thing here?\n>`
 */
export const chatTemplate = (messages: readonly ChatMessage[]): string =>
  `${messages.map((message) => (message.role === 'system' ? message.content : `${message.role === 'assistant' ? '>' : '<'} ${message.content}`)).join('\n')}\n>`

/**
 * One `roleplay-v1` environment over every (character, persona) context: each reset draws the context from its
 * seed, so a step's episodes cover many characters and the `groupSize` episodes of a seed share one context.
 */
export function createRoleplayMix(settings: { maxTurns: number }): EnvironmentV1 {
  let current: RoleplayEnvironment | undefined
  return {
    specificationVersion: 'v1',
    id: roleplayEnvironmentId,
    roles: roleplayRoles,
    reset(seed) {
      const draw = createRandom(deriveSeed('ludic.roleplay-context', seed))
      const character = draw.choice(characters)
      const persona = draw.choice(personas)
      current = createRoleplayEnvironment({ character, persona, maxTurns: settings.maxTurns, promptStyle: 'compact' })
      return current.reset(seed)
    },
    step(action) {
      if (current === undefined) throw new InvalidArgumentError({ argument: 'action', value: action, message: 'step before reset' })
      return current.step(action)
    },
  }
}

/**
 * The user simulator of every context: the scripted user of the persona whose prompt it is given (the persona
 * prompt says `You are {name}.`); it opens with the line the environment asks for, then answers with the persona's
 * follow-ups, seeded. Never trained (`rolePolicies: { user }`).
 */
export function createUserSimulator(seed: number): PolicyV1 {
  const users = personas.map((persona) => ({ marker: `You are ${persona.name}.`, policy: createScriptedUser(persona, { seed }) }))
  const userOf = (request: GenerationRequest) => {
    const system = request.messages?.find((message) => message.role === 'system')?.content ?? ''
    return (users.find((user) => system.includes(user.marker)) ?? users[0]!).policy
  }
  return {
    specificationVersion: 'v1',
    id: 'user-simulator',
    async generate(requests): Promise<Completion[]> {
      return Promise.all(requests.map(async (request) => (await userOf(request).generate([request]))[0]!))
    },
  }
}

/** A trajectory's character and its exchanges (the user's last line before each character reply). */
export function exchangesOf(trajectory: Trajectory): { character: Character | undefined; exchanges: { user?: string; reply: string }[] } {
  const firstCharacterTurn = trajectory.turns.find((turn) => turn.role === 'character')
  const character = firstCharacterTurn === undefined ? undefined : characterByPrompt.get(firstCharacterTurn.observation)
  const exchanges: { user?: string; reply: string }[] = []
  let user: string | undefined
  for (const turn of trajectory.turns) {
    if (turn.role === 'user') user = turn.action
    else if (turn.role === 'character') {
      exchanges.push({ ...(user === undefined ? {} : { user }), reply: turn.action })
      user = undefined
    }
  }
  return { character, exchanges }
}

/** The four rubric dimensions of the default judge, weighted equally (`combineRubricScores`). */
export const rubricWeights = { inCharacter: 1, knowledgeBoundary: 1, answersUser: 1, noRepetition: 1 } as const
export type RubricDimension = keyof typeof rubricWeights

/**
 * The absolute rubric score of a trajectory, in [0, 1]: each character reply scored by `roleplayReplyScores`
 * (stays in character, respects the knowledge boundary, answers the user, does not repeat), the four dimensions
 * averaged over the replies and combined with `rubricWeights`. 0 when the character never replied.
 */
export function rubricScore(trajectory: Trajectory): { score: number; dimensions: Record<RubricDimension, number> } {
  const { character, exchanges } = exchangesOf(trajectory)
  const dimensions: Record<RubricDimension, number> = { inCharacter: 0, knowledgeBoundary: 0, answersUser: 0, noRepetition: 0 }
  if (character === undefined || exchanges.length === 0) return { score: 0, dimensions }
  const previous: string[] = []
  for (const { user, reply } of exchanges) {
    const scores: RoleplayRuleScores = roleplayReplyScores(character, { reply, userLine: user, previousReplies: previous })
    for (const name of Object.keys(dimensions) as RubricDimension[]) dimensions[name] += scores[name] / exchanges.length
    previous.push(reply)
  }
  return { score: combineRubricScores(dimensions, rubricWeights), dimensions }
}

/**
 * What the rubric judge is shown of a trajectory: its id (a judge's candidates are strings); `table` gives the
 * ranking function the trajectory back while its group is being judged.
 */
const rubricView = (trajectory: Trajectory) => ({ context: trajectory.groupId, candidate: trajectory.id })

/** Keeps the trajectories of each group in `table` while `judge` scores it (every shuffle), then forgets them. */
function withTable<J extends { score(group: readonly Trajectory[], options?: { signal?: AbortSignal }): Promise<number[]> }>(
  judge: J,
  table: Map<string, Trajectory>,
): J {
  return {
    ...judge,
    async score(group: readonly Trajectory[], options?: { signal?: AbortSignal }) {
      for (const trajectory of group) table.set(trajectory.id, trajectory)
      try {
        return await judge.score(group, options)
      } finally {
        for (const trajectory of group) table.delete(trajectory.id)
      }
    },
  }
}

/** What a language-model judge is shown: the character's full card, then the conversation; the candidate is the character's part. */
function languageModelView(trajectory: Trajectory): { context: string; candidate: string } {
  const { character, exchanges } = exchangesOf(trajectory)
  const card = character === undefined ? '' : renderCharacterPrompt(character, { style: 'full' })
  const opening = exchanges[0]?.user
  return {
    context: `${card}\n\nThe user opens with: ${opening ?? '(nothing)'}`,
    candidate: exchanges.map(({ user, reply }, index) => `${index > 0 && user !== undefined ? `User: ${user}\n` : ''}Character: ${reply}`).join('\n'),
  }
}

/** Where a language-model judge is, from the environment: `LUDIC_JUDGE_URL` (+ `LUDIC_JUDGE_KEY`, `LUDIC_JUDGE_MODEL`). */
export function remoteJudgeFromEnvironment(environment: NodeJS.ProcessEnv = process.env): PolicyV1 | undefined {
  const url = environment.LUDIC_JUDGE_URL
  if (url === undefined || url === '') return undefined
  return createOpenAICompatiblePolicy({
    baseURL: url,
    model: environment.LUDIC_JUDGE_MODEL ?? 'judge',
    ...(environment.LUDIC_JUDGE_KEY === undefined ? {} : { apiKey: environment.LUDIC_JUDGE_KEY }),
    timeoutMs: 60_000,
    // A judge answers with text; hosted APIs send no token ids and may reject the parameter that asks for them.
    requireTokenIds: false,
    returnTokenIds: false,
  })
}

/**
 * The comparative group judge of CPO: a language model when `judge` is given (the character's card and the
 * conversation shown, ranked with the versioned template), else the rubric (`rubricScore`) as a ranking function.
 * Either way judged twice, in a seeded shuffle and its reverse, and the scores r_i = (G − rank_i)/(G − 1) averaged.
 */
export function createRoleplayGroupJudge(options: { judge?: PolicyV1 | undefined; seed: number }): GroupJudge {
  if (options.judge !== undefined) {
    return createGroupJudge({ judge: options.judge, view: languageModelView, seed: options.seed, name: 'roleplay-group-judge', temperature: 0 })
  }
  const table = new Map<string, Trajectory>()
  const judge = createGroupJudge({
    judge: (_context, candidates) => candidates.map((id) => rubricScore(table.get(id)!).score),
    judgeName: 'rubric',
    view: rubricView,
    seed: options.seed,
    name: 'roleplay-rubric-judge',
  })
  return withTable(judge, table)
}

/** The pairwise trajectory judge of CharacterArena: the language model when given, else the rubric (higher wins; equal is a tie). */
export function createRoleplayPairwiseJudge(options: { judge?: PolicyV1 | undefined; seed: number }): PairwiseJudge {
  if (options.judge !== undefined) {
    return createPairwiseJudge({ judge: options.judge, view: languageModelView, seed: options.seed, name: 'roleplay-pairwise-judge', temperature: 0 })
  }
  const table = new Map<string, Trajectory>()
  const judge = createPairwiseJudge({
    judge: (_context, first, second) => {
      const [a, b] = [rubricScore(table.get(first)!).score, rubricScore(table.get(second)!).score]
      return Math.abs(a - b) < 1e-9 ? 'tie' : a > b ? 'A' : 'B'
    },
    judgeName: 'rubric',
    view: rubricView,
    seed: options.seed,
    name: 'roleplay-rubric-pairwise',
  })
  return {
    ...judge,
    async compare(a, b, compareOptions) {
      table.set(a.id, a)
      table.set(b.id, b)
      try {
        return await judge.compare(a, b, compareOptions)
      } finally {
        table.delete(a.id)
        table.delete(b.id)
      }
    },
  }
}

// ---- warm-up dialogue made from the cards -----------------------------------------------------------------

const stopWords = new Set(
  'what whats what’s your youre you’re about with that this there here have does tell they them then than when where which would could should will just really been very from into some like know sure think want yes okay'.split(
    ' ',
  ),
)

/** The user line's first two content words (4+ letters, not a stop word), as the reply's acknowledgement: `Favourite thing?`. */
function acknowledgement(userLine: string): string {
  const words = (userLine.toLowerCase().match(/[a-z’']+/g) ?? [])
    .map((word) => word.replace(/[’']/g, ''))
    .filter((word) => word.length >= 4 && !stopWords.has(word))
  const picked = words.slice(0, 2)
  if (picked.length === 0) return ''
  const text = picked.join(' ')
  return `${text[0]!.toUpperCase()}${text.slice(1)}?`
}

/** Every line a user simulator can say first or later: the personas' openers and follow-ups. */
export const userLines: readonly string[] = [...new Set(personas.flatMap((persona) => [...persona.openers, ...persona.followUps]))]

/**
 * The warm-up dialogue: for every character and user line, replies of seven kinds, so the warmed-up model says
 * all of them and CPO has something to choose between: two good ones (the user's topic acknowledged, then one
 * of the character's own lines) and five that a role-play judge should rank lower — an assistant's reply that
 * breaks character, another character's line, a line said twice, a topic outside the knowledge boundary, and a
 * bare `Yes.`. Prompts are rendered exactly as in the rollout (`roleplayPrompt` + `chatTemplate`).
 */
export function warmUpDialogue(seed: number): { prompt: string; response: string; kind: string }[] {
  const random = createRandom(deriveSeed('ludic.roleplay-warm-up', seed))
  const examples: { prompt: string; response: string; kind: string }[] = []
  for (const character of characters) {
    const others = characters.filter((other) => other.id !== character.id)
    for (const userLine of userLines) {
      const prompt = chatTemplate([
        { role: 'system', content: characterPrompt(character) },
        { role: 'user', content: userLine },
      ])
      const ack = acknowledgement(userLine)
      const [first, second] = random.shuffle([...character.sampleLines])
      const other = random.choice(random.choice(others).sampleLines)
      const topic = character.knowledgeBoundary.length === 0 ? 'the internet' : random.choice(character.knowledgeBoundary)
      const replies: [string, string][] = [
        ['good', `${ack} ${first}`.trim()],
        ['good', `${ack} ${second ?? first}`.trim()],
        ['assistant', `As an AI assistant, I can help you with that question.`],
        ['other-character', other!],
        ['repeated', `${first} ${first}`],
        ['boundary', `${ack} Let me tell you all about ${topic}.`.trim()],
        ['terse', 'Yes.'],
      ]
      for (const [kind, response] of replies) examples.push({ prompt, response: ` ${response}`, kind })
    }
  }
  return examples
}

/** A byte-level BPE trained on what the model reads and writes: every warm-up prompt and reply. */
export function trainRoleplayTokenizer(vocabSize: number): Tokenizer {
  const corpus = warmUpDialogue(0).map((example) => `${example.prompt}${example.response}`)
  return Tokenizer.fromJSON(trainBpe(corpus, { vocabSize, specialTokens: [endOfText] }), { eos_token: endOfText })
}
