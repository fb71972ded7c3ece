import { describe, expect, it } from 'vitest'
import { createKuhnPoker } from './kuhn-poker.js'
import { kuhnInformationStates } from './kuhn-information-states.js'
import { kuhnTerseObservation } from './kuhn-terse-observation.js'

describe('kuhnTerseObservation', () => {
  it('keeps the round’s moves, the legal moves and the card, in that order', () => {
    const terse = Object.fromEntries(kuhnInformationStates({ rounds: 1 }).map((state) => [state.name, kuhnTerseObservation(state.observation)]))
    expect(terse['0']).toBe('[check], [bet]\ncard J')
    expect(terse['1pb']).toBe('[Player 1] [check]\n[Player 0] [bet]\n[fold], [call]\ncard Q')
    expect(terse['2b']).toBe('[Player 1] [bet]\n[fold], [call]\ncard K')
    expect(new Set(Object.values(terse)).size).toBe(12) // one text per information state
  })

  it('reads only the current round of a longer game', () => {
    const game = createKuhnPoker({ rounds: 3 })
    const first = game.reset(1)
    let view = game.step('[bet]').next!
    view = game.step('[fold]').next!
    expect(first.observation).toContain('Starting round 1')
    expect(view.observation).toContain('Starting round 2')
    expect(kuhnTerseObservation(view.observation)).toMatch(/^\[check\], \[bet\]\ncard [JQK]$/)
  })
})
