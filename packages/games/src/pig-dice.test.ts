import { stepOutcomeSchema } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { createPigDice } from './pig-dice.js'

const rollsOf = (observation: string) => (/Your roll history for this turn: (.*)/.exec(observation)?.[1] ?? '').match(/\d/g)?.map(Number) ?? []

describe('Pig Dice', () => {
  it('shows the rules, scores and turn total', () => {
    const view = createPigDice().reset(1)
    expect(view.role).toBe('player0')
    expect(view.legalActions).toEqual(['[roll]', '[hold]'])
    expect(view.observation).toBe(
      [
        'You are Player 0 playing a game of Pig Dice.',
        'Rules:',
        "- On your turn, you can either '[roll]' or '[hold]'",
        '- Roll a 2-6: Add to your turn total',
        '- Roll a 1: Lose turn total and end turn',
        '- Hold: Add turn total to your score and end turn',
        '- First to 100 points wins',
        '',
        "When it's your turn, you'll see the current scores and turn total.",
        "Respond with '[roll]' to roll the die or '[hold]' to bank your points.",
        '',
        "Current Scores: Player 0: '0'; Player 1: '0'",
        'Your current turn total is 0.',
        'This is the first roll of your turn.',
        "Available actions: '[roll]' or '[hold]'",
      ].join('\n'),
    )
  })

  it('adds rolls of 2–6 to the turn total, loses it on a 1, banks it on [hold]', () => {
    let sawBust = false
    let sawHold = false
    for (let seed = 0; seed < 30 && !(sawBust && sawHold); seed++) {
      const environment = createPigDice()
      let view = environment.reset(seed)
      let total = 0
      for (let step = 0; step < 4; step++) {
        const outcome = environment.step('[roll]')
        view = outcome.next!
        if (view.role === 'player1') {
          expect(view.observation).toMatch(new RegExp(`Player 0 rolled [\\d, ]*1 and busted, losing ${total} points\\.`))
          expect(view.observation).toContain("Current Scores: Player 0: '0'; Player 1: '0'")
          sawBust = true
          break
        }
        const rolls = rollsOf(view.observation)
        total = rolls.reduce((sum, roll) => sum + roll, 0)
        expect(rolls.every((roll) => roll >= 2 && roll <= 6)).toBe(true)
        expect(view.observation).toContain(`Your current turn total is ${total}.`)
      }
      if (view.role === 'player0') {
        view = environment.step('[hold]').next!
        expect(view.role).toBe('player1')
        expect(view.observation).toContain(`Current Scores: Player 0: '${total}'; Player 1: '0'`)
        expect(view.observation).toContain(`held, banking ${total} points.`)
        sawHold = true
      }
    }
    expect(sawBust && sawHold).toBe(true)
  })

  it('ends when a player banks the target score: +1/−1', () => {
    const environment = createPigDice({ targetScore: 8 })
    let view = environment.reset(3)
    for (;;) {
      // Roll until the turn total reaches the target, then hold.
      const total = Number(/Your current turn total is (\d+)/.exec(view.observation)![1])
      const outcome = stepOutcomeSchema.parse(environment.step(total >= 8 ? '[hold]' : '[roll]'))
      if (outcome.done) {
        expect(outcome.info.reason).toMatch(/won by reaching \d+ points \(target 8\)/)
        const winner = view.role
        expect(outcome.rewards[winner]).toBe(1)
        expect(outcome.rewards.player0! + outcome.rewards.player1!).toBe(0)
        break
      }
      view = outcome.next!
    }
  })

  it('rolls the same dice for the same seed and actions', () => {
    const trace = (seed: number) => {
      const environment = createPigDice()
      let view = environment.reset(seed)
      const seen: string[] = []
      for (let step = 0; step < 40; step++) {
        const outcome = environment.step(step % 3 === 2 ? '[hold]' : '[roll]')
        if (outcome.done) break
        view = outcome.next!
        seen.push(view.observation.split('\n\n').at(-1)!)
      }
      return seen
    }
    expect(trace(7)).toEqual(trace(7))
    expect(trace(7)).not.toEqual(trace(8))
  })

  it('rejects other moves and truncates after maxTurns', () => {
    const environment = createPigDice()
    environment.reset(0)
    expect(environment.step('[pass]')).toMatchObject({ done: true, rewards: { player0: -1.5, player1: 0.5 }, info: { invalidAction: true } })
    const short = createPigDice({ maxTurns: 2 })
    short.reset(0)
    short.step('[hold]')
    expect(short.step('[hold]')).toMatchObject({ done: true, truncated: true, rewards: { player0: 0, player1: 0 } })
    expect(createPigDice({ targetScore: 20 }).reset(0).observation).toContain('- First to 20 points wins')
  })
})

describe('Pig Dice state keys', () => {
  it('key the scores and the turn total, not the rolls that made it', () => {
    const environment = createPigDice()
    expect(environment.reset(0).stateKey).toBe('player0|score 0|opponent 0|turn total 0')
    // The turn total after the first roll of one seed and after the first two rolls of another.
    const afterRolls = (seed: number, rolls: number) => {
      let view = environment.reset(seed)
      for (let roll = 0; roll < rolls; roll++) view = environment.step('[roll]').next!
      return { key: view.stateKey, rolls: rollsOf(view.observation) }
    }
    const one = Array.from({ length: 200 }, (_, seed) => ({ seed, ...afterRolls(seed, 1) })).find(({ rolls }) => rolls[0] === 6)!
    const two = Array.from({ length: 200 }, (_, seed) => ({ seed, ...afterRolls(seed, 2) })).find(
      ({ rolls }) => rolls.length === 2 && rolls[0]! + rolls[1]! === 6,
    )!
    expect(one.key).toBe('player0|score 0|opponent 0|turn total 6')
    expect(two.key).toBe(one.key)
    environment.reset(one.seed)
    environment.step('[roll]')
    expect(environment.step('[hold]').next!.stateKey).toBe('player1|score 0|opponent 6|turn total 0')
  })
})
