import { completionSchema, type GenerationRequest } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { renderPersonaPrompt } from '../cards/persona-prompt.js'
import type { Persona } from '../cards/persona.js'
import { createRoleplayEnvironment } from './roleplay-environment.js'
import { roleplayPrompt } from './roleplay-prompt.js'
import { createScriptedUser } from './scripted-user.js'

const persona: Persona = {
  id: 'child',
  name: 'Milo',
  description: 'A curious child.',
  behaviour: 'Asks why.',
  openers: ['Hi!', 'Are you real?', 'What is that?'],
  followUps: ['Why?', 'Wow!', 'Can I try?', 'What next?'],
}
const request = (messages: GenerationRequest['messages'], seed?: number): GenerationRequest => ({
  messages,
  maxTokens: 32,
  ...(seed === undefined ? {} : { seed }),
})

describe('createScriptedUser', () => {
  it('says the opening its prompt asks for, then follow-ups, as valid empty-token completions', async () => {
    const user = createScriptedUser(persona, { seed: 1 })
    expect(user.id).toBe('scripted-user:child')
    const system = { role: 'system' as const, content: renderPersonaPrompt(persona, { characterName: 'Maren', opening: 'Ahoy there!' }) }
    const [opening, later] = await user.generate([
      request([system]),
      request([system, { role: 'assistant', content: 'Ahoy there!' }, { role: 'user', content: 'Aye.' }]),
    ])
    expect(opening!.text).toBe('Ahoy there!')
    expect(persona.followUps).toContain(later!.text)
    for (const completion of [opening, later]) {
      expect(completionSchema.safeParse(completion).success).toBe(true)
      expect(completion!.tokenIds).toHaveLength(0)
    }
  })

  it('picks an opener without an opening line, deterministically per seed and request seed', async () => {
    const system = { role: 'system' as const, content: 'You are Milo.' }
    const lines = async (seed: number, requestSeed: number) => (await createScriptedUser(persona, { seed }).generate([request([system], requestSeed)]))[0]!.text
    expect(persona.openers).toContain(await lines(1, 1))
    expect(await lines(1, 1)).toBe(await lines(1, 1))
    const seen = new Set<string>()
    for (let requestSeed = 0; requestSeed < 20; requestSeed++) seen.add(await lines(1, requestSeed))
    expect(seen.size).toBeGreaterThan(1)
  })

  it('refuses minTokens and ignoreEos by name: its lines are not drawn token by token', async () => {
    const user = createScriptedUser(persona, { seed: 1 })
    const system = { role: 'system' as const, content: 'You are Milo.' }
    await expect(user.generate([{ ...request([system]), minTokens: 2 }])).rejects.toThrow(/'requests\[0\]\.minTokens'.*scripted user 'child'/)
    await expect(user.generate([request([system]), { ...request([system]), ignoreEos: true }])).rejects.toThrow(/'requests\[1\]\.ignoreEos'/)
  })

  it('ends a roleplay-v1 episode after endAfter lines', async () => {
    const environment = createRoleplayEnvironment({ character: { id: 'maren', name: 'Maren' }, persona, maxTurns: 10 })
    const user = createScriptedUser(persona, { seed: 2, endAfter: 2 })
    const history: { index: number; role: string; observation: string; action: string; rewards: Record<string, number>; invalidAction: boolean }[] = []
    let view = environment.reset(5)
    let done = false
    while (!done) {
      const action =
        view.role === 'user'
          ? (
              await user.generate([
                request(roleplayPrompt(view, history, { environmentId: 'roleplay-v1', role: view.role, turnIndex: history.length, seed: 5 })),
              ])
            )[0]!.text
          : 'Aye, friend.'
      history.push({ index: history.length, role: view.role, observation: view.observation, action, rewards: {}, invalidAction: false })
      const outcome = environment.step(action)
      done = outcome.done
      if (outcome.next !== undefined) view = outcome.next
    }
    expect(history.map((turn) => turn.role)).toEqual(['user', 'character', 'user', 'character', 'user'])
    expect(history[0]!.action).toBe(environment.reset(5).observation.match(/exactly this line: (.*)$/)![1])
    expect(history.at(-1)!.action).toBe('[end]')
  })

  it('checks its arguments', () => {
    expect(() => createScriptedUser({ ...persona, followUps: [] }, { seed: 1 })).toThrow(/persona\.followUps/)
    expect(() => createScriptedUser(persona, { seed: 1.5 })).toThrow(/options\.seed/)
  })
})
