import { completionSchema } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { kuhnBestResponse } from './kuhn-exploitability.js'
import { kuhnInformationStates } from './kuhn-information-states.js'
import { createKuhnBestResponsePolicy, createKuhnNashPolicy, createKuhnTabularPolicy } from './kuhn-opponents.js'
import { createKuhnPoker } from './kuhn-poker.js'
import { kuhnConstantPolicy, kuhnNashPolicy } from './kuhn-policy.js'
import { playEpisode } from './play-episode.js'
import { renderGamePrompt } from './game-prompts.js'
import { createRandomPolicy } from './random-policy.js'

const states = kuhnInformationStates()
/** A request for an information state, with the turn view the environment gives there (as the rollout sends it). */
const request = (state: (typeof states)[number], seed?: number) => ({
  messages: renderGamePrompt(state.observation, 'spiral'),
  maxTokens: 8,
  turn: state.turn,
  ...(seed === undefined ? {} : { seed }),
})

describe('Kuhn opponents', () => {
  it("play a Nash policy's probabilities at each information state", async () => {
    const alpha = 1 / 6
    const table = kuhnNashPolicy(alpha)
    const nash = createKuhnNashPolicy({ alpha, seed: 3 })
    for (const state of states) {
      const samples = 2000
      const completions = await nash.generate(new Array(samples).fill(request(state)))
      const aggressive = completions.filter((completion) => completion.text === state.legalActions[1]).length
      expect(completions.every((completion) => state.legalActions.includes(completion.text))).toBe(true)
      const probability = table[state.name]
      expect(Math.abs(aggressive / samples - probability)).toBeLessThanOrEqual(4 * Math.sqrt((probability * (1 - probability)) / samples) + 1e-9)
    }
  })

  it('answer with a bare completion and honour request seeds', async () => {
    const nash = createKuhnNashPolicy({ alpha: 1 / 3 })
    const [completion] = await nash.generate([request(states[0]!)])
    expect(completionSchema.parse(completion)).toMatchObject({ finishReason: 'stop' })
    expect(completion!.tokenIds).toHaveLength(0)
    expect(completion!.logprobs).toBeInstanceOf(Float32Array)
    const seeded = async () => (await nash.generate(new Array(20).fill(0).map((_, index) => request(states[0]!, index)))).map((c) => c.text)
    expect(await seeded()).toEqual(await seeded())
    expect(nash.id).toBe(`kuhn-nash-${1 / 3}`)
  })

  it('best-respond deterministically to a given policy', async () => {
    const uniform = kuhnConstantPolicy(0.5)
    const response = kuhnBestResponse(uniform)
    const policy = createKuhnBestResponsePolicy({ policy: uniform })
    const completions = await policy.generate(states.map((state) => request(state)))
    states.forEach((state, index) => expect(completions[index]!.text).toBe(state.legalActions[response[state.name]]))
  })

  it('earn the best-response value against the uniform random player (1/2 as first actor)', async () => {
    const environment = createKuhnPoker({ rounds: 1, reward: 'chips' }) // player1 acts first
    const players = { player1: createKuhnBestResponsePolicy({ policy: kuhnConstantPolicy(0.5) }), player0: createRandomPolicy({ seed: 9 }) }
    const games = 3000
    let chips = 0
    for (let seed = 0; seed < games; seed++) chips += (await playEpisode(environment, players, { seed })).rewards.player1!
    expect(chips / games).toBeGreaterThan(0.5 - 0.1)
    expect(chips / games).toBeLessThan(0.5 + 0.1)
  })

  it('play whole 5-round episodes in either seat without invalid actions', async () => {
    const environment = createKuhnPoker()
    const nash = createKuhnNashPolicy({ alpha: 0.1, seed: 1 })
    const tabular = createKuhnTabularPolicy({ policy: kuhnConstantPolicy(0.3), seed: 2 })
    for (let seed = 0; seed < 50; seed++) {
      const result = await playEpisode(environment, seed % 2 ? { player0: nash, player1: tabular } : { player0: tabular, player1: nash }, {
        seed,
        prompt: 'spiral',
      })
      expect(result.invalidAction).toBe(false)
      expect(result.rewards.player0! + result.rewards.player1!).toBe(0)
    }
    const chat = { messages: renderGamePrompt(states[0]!.observation, 'spiral'), maxTokens: 8 }
    await expect(nash.generate([chat])).rejects.toMatchObject({ name: 'InvalidArgumentError', argument: 'request.turn' })
    const board = { environmentId: 'tictactoe-v0', role: 'player0', state: { board: ['', '', '', '', '', '', '', '', ''] } }
    await expect(nash.generate([{ ...chat, turn: board }])).rejects.toMatchObject({ argument: 'request.turn.state.informationState' })
  })
})
