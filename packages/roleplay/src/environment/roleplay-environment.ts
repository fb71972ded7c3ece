import { createRandom, deriveSeed, parseArgument, type EnvironmentV1, type StepOutcome, type TurnView } from '@ludic/core'
import { z } from 'zod'
import { characterSchema } from '../cards/character.js'
import { renderCharacterPrompt } from '../cards/character-prompt.js'
import { renderPersonaPrompt } from '../cards/persona-prompt.js'
import { personaSchema } from '../cards/persona.js'

export const roleplayEnvironmentId = 'roleplay-v1'
export const roleplayRoles = ['character', 'user'] as const
export type RoleplayRole = (typeof roleplayRoles)[number]

export const roleplayEnvironmentOptionsSchema = z.strictObject({
  character: characterSchema,
  persona: personaSchema,
  /** The scenario of the episode. Default: the character's own. */
  scenario: z
    .string()
    .max(64 * 1024)
    .optional(),
  /** Exchanges (a user line and the character's reply) before the episode ends. Default: 3. */
  maxTurns: z.number().int().min(1).max(1000).default(3),
  /** Who speaks first. With `'character'`, the character greets first (that turn is not an exchange). Default: `'user'`. */
  firstSpeaker: z.enum(['user', 'character']).default('user'),
  /** The user's first line, asked for verbatim in the user's first observation. Default: one of `persona.openers`, chosen by the reset seed. */
  opening: z
    .string()
    .min(1)
    .max(64 * 1024)
    .optional(),
  /** Longer actions are cut to this many characters and flagged invalid. Default: 2,000. */
  maxUtteranceCharacters: z.number().int().positive().default(2000),
  /** A user line containing one of these (case-insensitive) ends the episode. Default: `['[end]']`. */
  stopPhrases: z.array(z.string().min(1).max(200)).max(100).default(['[end]']),
  /** The character's prompt style (`renderCharacterPrompt`). Default: `'full'`. */
  promptStyle: z.enum(['full', 'compact']).default('full'),
  /** The most characters of the character's prompt, placeholders replaced (`renderCharacterPrompt`'s `maxCharacters`). Default: 1 Mi. */
  maxPromptCharacters: z.number().int().positive().optional(),
})
export type RoleplayEnvironmentOptions = z.input<typeof roleplayEnvironmentOptionsSchema>

/** A role-play environment with its transcript (the utterances as the environment kept them). */
export interface RoleplayEnvironment extends EnvironmentV1 {
  readonly id: typeof roleplayEnvironmentId
  /** The episode so far: each step's role and utterance (cut to `maxUtteranceCharacters`). */
  readonly transcript: readonly { role: RoleplayRole; utterance: string }[]
}

/**
 * `roleplay-v1`: a character (the trained policy) talks with a user (a user simulator: any `PolicyV1` with
 * `roleplayPrompt`, or `createScriptedUser`). Environment rewards are always 0; the reward comes from a
 * trajectory scorer (a judge, a reward model, `roleplayRuleScores`).
 *
 * - The character's observation is its system prompt (`renderCharacterPrompt(character, { style, scenario })`),
 *   the user's the persona prompt (`renderPersonaPrompt`); the conversation itself is the history, which
 *   `roleplayPrompt` turns into chat messages.
 * - With `firstSpeaker: 'user'` the user opens; its first observation asks for the opening line verbatim
 *   (`opening`, or an opener of the persona chosen by the reset seed), so every policy playing the same
 *   context and seed hears the same first line. Then the roles alternate; the episode ends (done) after the
 *   character's `maxTurns`-th reply, or when a user line contains a stop phrase.
 * - An empty or whitespace action is invalid (`info.invalidAction`), as is one longer than
 *   `maxUtteranceCharacters` (cut to it); both still pass the turn, and neither throws.
 */
export function createRoleplayEnvironment(options: RoleplayEnvironmentOptions): RoleplayEnvironment {
  const settings = parseArgument(roleplayEnvironmentOptionsSchema, options, 'options')
  const { character, persona, maxTurns, firstSpeaker, maxUtteranceCharacters, promptStyle } = settings
  const scenario = settings.scenario ?? character.scenario
  const stopPhrases = settings.stopPhrases.map((phrase) => phrase.toLowerCase())
  const characterPrompt = renderCharacterPrompt(character, {
    style: promptStyle,
    scenario,
    ...(settings.maxPromptCharacters === undefined ? {} : { maxCharacters: settings.maxPromptCharacters }),
  })
  const transcript: { role: RoleplayRole; utterance: string }[] = []
  let opening = ''
  let replies = 0
  let over = true
  let next: RoleplayRole = firstSpeaker

  const view = (role: RoleplayRole): TurnView => {
    if (role === 'character') return { role, observation: characterPrompt }
    const first = !transcript.some((entry) => entry.role === 'user')
    return {
      role,
      observation: renderPersonaPrompt(persona, {
        characterName: character.name,
        ...(scenario.trim() === '' ? {} : { scenario }),
        ...(first && firstSpeaker === 'user' ? { opening } : {}),
        stopPhrases: settings.stopPhrases,
      }),
    }
  }
  const outcome = (role: RoleplayRole, info: StepOutcome['info'], done: boolean): StepOutcome => {
    const rewards = { character: 0, user: 0 }
    if (done) {
      over = true
      return { done: true, truncated: false, rewards, info }
    }
    next = role === 'character' ? 'user' : 'character'
    return { done: false, truncated: false, next: view(next), rewards, info }
  }

  return {
    specificationVersion: 'v1',
    id: roleplayEnvironmentId,
    roles: roleplayRoles,
    get transcript() {
      return transcript
    },
    reset(seed: number): TurnView {
      const random = createRandom(deriveSeed(roleplayEnvironmentId, 'opening', persona.id, seed))
      opening = settings.opening ?? random.choice(persona.openers)
      transcript.length = 0
      replies = 0
      over = false
      next = firstSpeaker
      return view(next)
    },
    step(action: string): StepOutcome {
      const role = next
      if (over)
        return { done: true, truncated: false, rewards: { character: 0, user: 0 }, info: { invalidAction: true, reason: 'the episode is over: reset first' } }
      const text = typeof action === 'string' ? action : ''
      let utterance = text.trim()
      const info: { invalidAction?: boolean; reason?: string } = {}
      if (utterance === '') Object.assign(info, { invalidAction: true, reason: `empty utterance from the ${role}` })
      else if (utterance.length > maxUtteranceCharacters) {
        utterance = utterance.slice(0, maxUtteranceCharacters)
        Object.assign(info, {
          invalidAction: true,
          reason: `utterance of ${text.trim().length} characters cut to ${maxUtteranceCharacters} (maxUtteranceCharacters)`,
        })
      }
      transcript.push({ role, utterance })
      if (role === 'user') {
        const lower = utterance.toLowerCase()
        if (stopPhrases.some((phrase) => lower.includes(phrase)))
          return outcome(role, { ...info, reason: info.reason ?? 'the user ended the conversation' }, true)
        return outcome(role, info, false)
      }
      const greeting = firstSpeaker === 'character' && transcript.length === 1
      if (!greeting) replies++
      return outcome(role, replies >= maxTurns ? { ...info, reason: info.reason ?? `${maxTurns} exchanges played (maxTurns)` } : info, replies >= maxTurns)
    },
  }
}
