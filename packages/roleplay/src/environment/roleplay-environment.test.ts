import { InvalidArgumentError, stepOutcomeSchema, turnViewSchema, type StepOutcome } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import type { CharacterInput } from '../cards/character.js'
import { renderCharacterPrompt } from '../cards/character-prompt.js'
import type { Persona } from '../cards/persona.js'
import { createRoleplayEnvironment, type RoleplayEnvironmentOptions } from './roleplay-environment.js'

const character: CharacterInput = { id: 'maren', name: 'Maren', speakingStyle: 'says aye', knowledgeBoundary: ['radio'], scenario: 'A calm evening.' }
const persona: Persona = {
  id: 'child',
  name: 'Milo',
  description: 'A curious child.',
  behaviour: 'Asks why.',
  openers: ['Hi!', 'Are you real?', 'What is that?', 'Can I see the lamp?'],
  followUps: ['Why?'],
}
const create = (options: Partial<RoleplayEnvironmentOptions> = {}) => createRoleplayEnvironment({ character, persona, ...options })

/** Plays actions in turn, checking every view and outcome against core's schemas. */
function play(environment: ReturnType<typeof create>, actions: string[]): StepOutcome[] {
  return actions.map((action) => {
    const outcome = environment.step(action)
    expect(stepOutcomeSchema.safeParse(outcome).success).toBe(true)
    if (outcome.next !== undefined) expect(turnViewSchema.safeParse(outcome.next).success).toBe(true)
    return outcome
  })
}

describe('roleplay-v1', () => {
  it('alternates user and character for maxTurns exchanges, with zero rewards', () => {
    const environment = create({ maxTurns: 2 })
    expect(environment.id).toBe('roleplay-v1')
    expect(environment.roles).toEqual(['character', 'user'])
    const first = environment.reset(7)
    expect(first.role).toBe('user')
    const outcomes = play(environment, ['Hi!', 'Aye, welcome.', 'Why?', 'Because the sea is wide.'])
    expect(outcomes.map((outcome) => [outcome.next?.role, outcome.done])).toEqual([
      ['character', false],
      ['user', false],
      ['character', false],
      [undefined, true],
    ])
    expect(outcomes.every((outcome) => outcome.rewards.character === 0 && outcome.rewards.user === 0 && !outcome.truncated)).toBe(true)
    expect(outcomes.at(-1)!.info.reason).toBe('2 exchanges played (maxTurns)')
    expect(environment.transcript.map((entry) => entry.role)).toEqual(['user', 'character', 'user', 'character'])
  })

  it('shows the character its card prompt and the user its persona prompt with the seeded opening', () => {
    const environment = create({ promptStyle: 'compact', scenario: 'A storm.' })
    const first = environment.reset(3)
    expect(first.observation).toContain('You are Milo.')
    expect(first.observation).toContain('Scenario: A storm.')
    const opening = first.observation.match(/Open the conversation with exactly this line: (.*)$/)?.[1]
    expect(persona.openers).toContain(opening)
    const characterView = environment.step(opening!).next!
    expect(characterView).toEqual({ role: 'character', observation: renderCharacterPrompt(character, { style: 'compact', scenario: 'A storm.' }) })
    const secondUserView = environment.step('Aye.').next!
    expect(secondUserView.observation).not.toContain('Open the conversation')
  })

  it('gives the same episode for the same seed, and different seeds pick different openers', () => {
    const environment = create()
    const openings = new Set<string>()
    for (let seed = 0; seed < 20; seed++) {
      const view = environment.reset(seed)
      expect(create().reset(seed)).toEqual(view)
      openings.add(view.observation)
    }
    expect(openings.size).toBeGreaterThan(1)
    expect(create({ opening: 'Ahoy!' }).reset(1).observation).toMatch(/exactly this line: Ahoy!$/)
  })

  it('lets the character greet first when firstSpeaker is character (the greeting is not an exchange)', () => {
    const environment = create({ firstSpeaker: 'character', maxTurns: 1 })
    expect(environment.reset(1).role).toBe('character')
    const [greeting, user, reply] = play(environment, ['Evening, friend.', 'Hello?', 'Aye, hello.'])
    expect(greeting!.next?.role).toBe('user')
    expect(greeting!.next?.observation).not.toContain('Open the conversation')
    expect(user!.next?.role).toBe('character')
    expect(reply!.done).toBe(true)
  })

  it('ends when the user says a stop phrase', () => {
    const environment = create({ maxTurns: 5, stopPhrases: ['goodbye', '[end]'] })
    environment.reset(1)
    const outcomes = play(environment, ['Hi', 'Aye.', 'Thanks, GoodBye now'])
    expect(outcomes.at(-1)).toEqual({ done: true, truncated: false, rewards: { character: 0, user: 0 }, info: { reason: 'the user ended the conversation' } })
    // The character saying it does not end the episode.
    environment.reset(1)
    expect(play(environment, ['Hi', 'goodbye'])[1]!.done).toBe(false)
  })

  it('flags empty and overlong actions as invalid, cuts the long one, and passes the turn', () => {
    const environment = create({ maxUtteranceCharacters: 10 })
    environment.reset(1)
    const [empty, long] = play(environment, ['   ', 'a'.repeat(25)])
    expect(empty!.info).toEqual({ invalidAction: true, reason: 'empty utterance from the user' })
    expect(empty!.next?.role).toBe('character')
    expect(long!.info.invalidAction).toBe(true)
    expect(long!.info.reason).toMatch(/25 characters cut to 10/)
    expect(environment.transcript[1]!.utterance).toBe('a'.repeat(10))
    expect(environment.step(undefined as unknown as string).info.invalidAction).toBe(true)
  })

  it('answers a step after the end with an invalid outcome, never a throw', () => {
    const environment = create({ maxTurns: 1 })
    expect(environment.step('too early').info.invalidAction).toBe(true)
    environment.reset(1)
    play(environment, ['Hi', 'Aye'])
    expect(environment.step('more').done).toBe(true)
    expect(environment.step('more').info.invalidAction).toBe(true)
  })

  it('checks its options', () => {
    expect(() => create({ maxTurns: 0 })).toThrow(/options\.maxTurns/)
    expect(() => create({ persona: { ...persona, openers: [] } })).toThrow(/options\.persona\.openers/)
    expect(() => create({ character: { id: 'x' } as CharacterInput })).toThrow(InvalidArgumentError)
    expect(() => create({ unknown: 1 } as Partial<RoleplayEnvironmentOptions>)).toThrow(InvalidArgumentError)
  })
})

describe('roleplay-v1 prompt size', () => {
  it("refuses a card whose placeholders would multiply the prompt past maxPromptCharacters, naming the field; the limit is the caller's", () => {
    const amplified: CharacterInput = { id: 'n', name: 'N'.repeat(1000), description: '{{char}}'.repeat(2000) }
    expect(() => createRoleplayEnvironment({ character: amplified, persona })).toThrow(/'character\.description'.*renders to 2000000 characters/)
    expect(() => createRoleplayEnvironment({ character: amplified, persona, maxPromptCharacters: 3_000_000 })).not.toThrow()
    expect(() => create({ maxPromptCharacters: 0 })).toThrow(InvalidArgumentError)
  })
})
