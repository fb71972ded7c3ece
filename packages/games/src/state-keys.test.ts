import { createRandom, stateKeySchema, turnContextOf } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { turnLegalActions } from './legal-actions.js'
import { createGame, gameIds, reasoningGameIds } from './registry.js'

/**
 * Every game of the registry keys every turn (`TurnView.stateKey`), over seeded random legal play: within the
 * schema's bound, never shared by two roles, and a function of what the acting role sees — two turns with the same
 * observation have the same key, so no key depends on hidden information (the opponent's card or dice).
 */
describe('state keys of every game', () => {
  it.each([...gameIds, ...reasoningGameIds])('%s: every turn has a key, a function of the observation, never shared by two roles', (id) => {
    const environment = createGame(id, id === 'game-of-24-v1' ? { listSteps: true } : undefined)
    const random = createRandom(7)
    const keyOfObservation = new Map<string, string>()
    const roleOfKey = new Map<string, string>()
    let turns = 0
    for (let episode = 0; episode < 120; episode++) {
      let view = environment.reset(episode % 40) // seeds repeat: the same deal is played again with other moves
      for (let turn = 0; turn < 200; turn++) {
        turns++
        expect(stateKeySchema.safeParse(view.stateKey).success, `${id}: ${String(view.stateKey)}`).toBe(true)
        const key = view.stateKey!
        expect(keyOfObservation.get(view.observation) ?? key, `${id} turn ${turn}`).toBe(key)
        keyOfObservation.set(view.observation, key)
        expect(roleOfKey.get(key) ?? view.role, key).toBe(view.role)
        roleOfKey.set(key, view.role)
        const legal = turnLegalActions(turnContextOf(id, view))
        const outcome = environment.step(`[${random.choice(legal).replace(/^\[|\]$/g, '')}]`)
        if (outcome.next === undefined) break
        view = outcome.next
      }
    }
    expect(turns).toBeGreaterThan(120)
    expect(roleOfKey.size).toBeLessThan(turns) // situations recur across episodes: what GiGPO groups by
  })
})
