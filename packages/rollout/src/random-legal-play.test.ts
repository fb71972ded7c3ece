import { createRandom, deriveSeed, InvalidArgumentError, type ChatMessage, type EnvironmentV1, type TurnView } from '@ludic/core'
import {
  createIteratedPrisonersDilemma,
  createTicTacToe,
  kuhnInformationStates,
  negotiationMenu,
  negotiationTurnState,
  createSimpleNegotiation,
} from '@ludic/games'
import { describe, expect, it } from 'vitest'
import { randomLegalPlay } from './random-legal-play.js'

const chatTemplate = (messages: readonly ChatMessage[]) => `${messages.at(-1)?.content ?? ''}\n>`

/** The plain loop: every state random legal play visits, and the move played there. */
function plainPlay(environment: EnvironmentV1, games: number, seed: number): { view: TurnView; played: string }[] {
  const random = createRandom(seed)
  const visited: { view: TurnView; played: string }[] = []
  for (let game = 0; game < games; game++) {
    let view: TurnView | undefined = environment.reset(seed * 100_000 + game)
    while (view !== undefined) {
      const played = random.choice(view.legalActions!)
      visited.push({ view, played })
      const outcome = environment.step(played)
      view = outcome.done || outcome.truncated ? undefined : outcome.next
    }
  }
  return visited
}

describe('randomLegalPlay', () => {
  it('gives, at each distinct state of the plain loop, each legal move once, and the corpus of those pairs', () => {
    const expected: { prompt: string; response: string }[] = []
    const seen = new Set<string>()
    for (const { view } of plainPlay(createTicTacToe(), 30, 4)) {
      const prompt = chatTemplate([{ role: 'user', content: view.observation }])
      if (seen.has(prompt)) continue
      seen.add(prompt)
      for (const response of view.legalActions!) expected.push({ prompt, response })
    }
    const play = randomLegalPlay({ environment: () => createTicTacToe(), games: 30, seed: 4, chatTemplate })
    expect(play.examples.map(({ prompt, response }) => ({ prompt, response }))).toEqual(expected)
    expect(play.examples[0]!.messages).toEqual([{ role: 'user', content: play.states[0]!.observation }])
    expect(play.corpus).toEqual(expected.map(({ prompt, response }) => `${prompt}${response}`))
    expect(play.states).toHaveLength(plainPlay(createTicTacToe(), 30, 4).length)
  })

  it("gives every turn's move played (distinct: false, responses: played), from the generator it is given", () => {
    const seed = 9
    const random = createRandom(deriveSeed('a stream', seed))
    const reference = createRandom(deriveSeed('a stream', seed))
    const environment = createIteratedPrisonersDilemma({ rounds: 3 })
    const expected: string[] = []
    for (let game = 0; game < 5; game++) {
      let view: TurnView | undefined = environment.reset(seed * 100_000 + game)
      while (view !== undefined) {
        const played = reference.choice(view.legalActions!)
        expected.push(`${view.observation}\n>${played}`)
        const outcome = environment.step(played)
        view = outcome.done || outcome.truncated ? undefined : outcome.next
      }
    }
    const play = randomLegalPlay({
      environment: () => createIteratedPrisonersDilemma({ rounds: 3 }),
      games: 5,
      seed,
      random,
      chatTemplate,
      responses: 'played',
      distinct: false,
    })
    expect(play.corpus).toEqual(expected)
    expect(play.examples.map(({ prompt, response }) => `${prompt}${response}`)).toEqual(expected)
  })

  it('renders the prompt template with the history and context, and stops a game at maxTurns', () => {
    const contexts: string[] = []
    const play = randomLegalPlay({
      environment: () => createTicTacToe(),
      games: 2,
      seed: 1,
      maxTurns: 3,
      distinct: false,
      responses: 'played',
      prompt: (view, history, context) => {
        contexts.push(`${context.environmentId} ${context.turnIndex} ${context.seed} ${history.length}`)
        return [{ role: 'user', content: view.observation }]
      },
      chatTemplate,
    })
    expect(play.examples).toHaveLength(6)
    expect(contexts).toEqual([
      'tictactoe-v0 0 100000 0',
      'tictactoe-v0 1 100000 1',
      'tictactoe-v0 2 100000 2',
      'tictactoe-v0 0 100001 0',
      'tictactoe-v0 1 100001 1',
      'tictactoe-v0 2 100001 2',
    ])
  })

  it('repeats named moves, repeats the whole list to about repeatTo, and reads legal moves from the legalActions option', () => {
    const menu = (view: TurnView) => negotiationMenu(negotiationTurnState(view.state))
    const base = randomLegalPlay({ environment: () => createSimpleNegotiation({ turns: 4 }), games: 3, seed: 2, legalActions: menu, chatTemplate })
    const weighted = randomLegalPlay({
      environment: () => createSimpleNegotiation({ turns: 4 }),
      games: 3,
      seed: 2,
      legalActions: menu,
      chatTemplate,
      copies: { '[Deny]': 3 },
    })
    const expected = base.examples.flatMap((example) => (example.response === '[Deny]' ? [example, example, example] : [example]))
    expect(weighted.examples).toEqual(expected)
    expect(weighted.corpus).toEqual(base.corpus)
    const repeated = randomLegalPlay({ environment: () => createTicTacToe(), games: 1, chatTemplate, repeatTo: 100 })
    const once = randomLegalPlay({ environment: () => createTicTacToe(), games: 1, chatTemplate })
    const repeats = Math.max(1, Math.round(100 / once.examples.length))
    expect(repeated.examples).toEqual(Array.from({ length: repeats }, () => once.examples).flat())
  })

  it('takes given states instead of playing: each legal move once per state', () => {
    const states = kuhnInformationStates({ rounds: 1 })
    const play = randomLegalPlay({ states, chatTemplate })
    expect(play.examples.map(({ prompt, response }) => [prompt, response])).toEqual(
      states.flatMap((state) => state.legalActions.map((move) => [`${state.observation}\n>`, move])),
    )
    expect(play.states).toEqual(states)
  })

  it('refuses bad sizes, states with play options, and an environment that lists no legal moves, naming the argument', () => {
    const environment = () => createTicTacToe()
    const refused = (options: unknown, argument: string) => {
      let error: unknown
      try {
        randomLegalPlay(options as never)
      } catch (caught) {
        error = caught
      }
      expect(InvalidArgumentError.isInstance(error), String(error)).toBe(true)
      expect((error as InvalidArgumentError).argument).toBe(argument)
    }
    refused({ environment, chatTemplate, games: 0 }, 'options.games')
    refused({ environment, chatTemplate, games: 100_001 }, 'options.games')
    refused({ environment, chatTemplate, maxTurns: 1.5 }, 'options.maxTurns')
    refused({ environment, chatTemplate, copies: { '[0]': 0 } }, 'options.copies.[0]')
    refused({ environment }, 'options.chatTemplate')
    refused({ states: [], chatTemplate, games: 3 }, 'options')
    refused({ states: [], chatTemplate, responses: 'played' }, 'options.responses')
    refused({ environment, chatTemplate, games: 50, maxExamples: 10 }, 'options.maxExamples')
    refused({ environment, chatTemplate, games: 1, repeatTo: 10_000, maxExamples: 1000 }, 'options.maxExamples')
    refused({ environment: () => createSimpleNegotiation(), chatTemplate }, 'options.environment')
    refused({ states: [{ role: 'a', observation: 'no moves' }], chatTemplate }, 'options.states')
  })
})
