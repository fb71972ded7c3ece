import { completionSchema } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { createOpponentPolicy, opponentCompletion } from './opponent-policy.js'
import { renderGamePrompt } from './game-prompts.js'

describe('createOpponentPolicy', () => {
  it('reads the observation out of the prompt and answers with a token-free completion', async () => {
    const seen: string[] = []
    const policy = createOpponentPolicy({
      id: 'echo',
      decide: (observation) => {
        seen.push(observation)
        return '[ok]'
      },
    })
    const completions = await policy.generate([
      { messages: renderGamePrompt('first observation', 'spiral'), maxTokens: 4 },
      { messages: renderGamePrompt('second observation', 'terse'), maxTokens: 4 },
    ])
    expect(seen).toEqual(['first observation', 'second observation'])
    expect(completions.map((completion) => completionSchema.parse(completion).text)).toEqual(['[ok]', '[ok]'])
    expect(policy).toMatchObject({ specificationVersion: 'v1', id: 'echo' })
  })

  it('draws from its seeded stream, or from the request seed when given', async () => {
    const make = (seed: number) => createOpponentPolicy({ id: 'dice', seed, decide: (_observation, random) => `[${random.nextInt(1000)}]` })
    const ask = async (policy: ReturnType<typeof make>, seeds: (number | undefined)[]) =>
      (await policy.generate(seeds.map((seed) => ({ messages: renderGamePrompt('x', 'spiral'), maxTokens: 4, ...(seed === undefined ? {} : { seed }) })))).map(
        (completion) => completion.text,
      )
    const streamed = await ask(make(1), [undefined, undefined, undefined])
    expect(await ask(make(1), [undefined, undefined, undefined])).toEqual(streamed)
    expect(await ask(make(2), [undefined, undefined, undefined])).not.toEqual(streamed)
    expect(await ask(make(1), [7, 7])).toEqual(await ask(make(2), [7, 7]))
  })

  it('refuses minTokens and ignoreEos by name: a move is not drawn token by token', async () => {
    const policy = createOpponentPolicy({ id: 'fixed', decide: () => '[ok]' })
    const request = { messages: renderGamePrompt('x', 'spiral'), maxTokens: 4 }
    await expect(policy.generate([{ ...request, minTokens: 1 }])).rejects.toThrow(/'requests\[0\]\.minTokens'.*opponent policy 'fixed'/)
    await expect(policy.generate([request, { ...request, ignoreEos: true }])).rejects.toThrow(/'requests\[1\]\.ignoreEos'/)
  })

  it('builds empty typed arrays', () => {
    const completion = opponentCompletion('[bet]')
    expect(completion.promptTokenIds).toEqual(new Int32Array(0))
    expect(completion.tokenIds).toEqual(new Int32Array(0))
    expect(completion.logprobs).toEqual(new Float32Array(0))
  })
})
