import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { ParseError } from '@ludic/core'
import { gamePrompts, games } from '@ludic/games'
import { describe, expect, it } from 'vitest'
import { createRlTrainer } from './rl-trainer.js'
import { loadRunConfig } from './run-config.js'
import { createPickEnvironment, tokenizer, useBackendAndDirectory } from './test/support.js'

const temporaryDirectory = useBackendAndDirectory('ludic-run-config-')

// The games of @ludic/games and their named prompts, as a command line would pass them.
const registries = { environments: games, prompts: gamePrompts }

const write = async (name: string, content: unknown) => {
  const path = join(temporaryDirectory(), name)
  await writeFile(path, typeof content === 'string' ? content : JSON.stringify(content))
  return path
}

const valid = {
  model: { preset: 'tiny', seed: 1, overrides: { hiddenSize: 32, numAttentionHeads: 2, numHiddenLayers: 1, intermediateSize: 64 } },
  environments: [{ game: 'kuhn-poker-v1', options: { rounds: 1, reward: 'chips' } }],
  advantage: { name: 'rae', options: { decay: 0.9 } },
  policyLoss: { name: 'ppo-clip', options: { clipHigh: 0.28 } },
  optimizer: { learningRate: 1e-4 },
  schedule: { type: 'warmup-cosine', warmupSteps: 1, totalSteps: 10 },
  batch: { episodesPerStep: 2, miniBatchSize: 8, ppoEpochs: 1, maxTokens: 3 },
  prompt: 'terse',
  runDirectory: 'run',
}

describe('loadRunConfig', () => {
  it('resolves the named estimator, loss, environments and model preset into a trainer config that runs', async () => {
    const config = await loadRunConfig(await write('valid.json', valid), { ...registries, tokenizer })
    expect(config.runDirectory).toBe(join(temporaryDirectory(), 'run'))
    expect(config.model.config.hiddenSize).toBe(32)
    expect(config.model.config.vocabSize).toBe(tokenizer.vocabSize)
    expect((config.advantage as { name: string }).name).toBe('rae')
    expect(config.environments![0]!().id).toBe('kuhn-poker-v1')
    expect(config.prompt).toBe(gamePrompts.terse) // 'terse' named a games prompt
    const trainer = createRlTrainer(config)
    const metrics = await trainer.step()
    expect(metrics.episodes).toBe(2)
    trainer.dispose()
    config.model.dispose()
  })

  it('names the file and the field of bad input', async () => {
    const cases: [unknown, string][] = [
      ['{ not json', 'not JSON'],
      [{ ...valid, environments: [{ game: 'chess-v0' }] }, 'environments[0].game'],
      [{ ...valid, advantage: { name: 'nope' } }, 'unknown advantage estimator'],
      [{ ...valid, policyLoss: { name: 'ppo-clip', options: { clipLow: -1 } } }, 'policyLoss'],
      [{ ...valid, environments: [{ game: 'kuhn-poker-v1', options: { rounds: 0 } }] }, 'environments'],
      [{ ...valid, batch: { ppoEpochs: 0 } }, 'batch.ppoEpochs'],
      [{ ...valid, surprise: true }, 'surprise'],
    ]
    for (const [index, [content, expected]] of cases.entries()) {
      const path = await write(`bad-${index}.json`, content)
      const error = await loadRunConfig(path, { ...registries, tokenizer }).catch((caught: unknown) => caught)
      expect(error, JSON.stringify(content)).toBeInstanceOf(ParseError)
      expect((error as Error).message).toContain(path)
      expect((error as Error).message).toContain(expected)
    }
    const missing = await loadRunConfig(join(temporaryDirectory(), 'missing.json'), registries).catch((caught: unknown) => caught)
    expect(missing).toBeInstanceOf(ParseError)
    const noTokenizer = await loadRunConfig(await write('no-tokenizer.json', valid), registries).catch((caught: unknown) => caught)
    expect((noTokenizer as Error).message).toContain('tokenizer')
    await expect(loadRunConfig(await write('no-registry.json', valid), {} as never)).rejects.toThrow(/options.environments/)
  })

  it('makes an environment registered by the user', async () => {
    const config = await loadRunConfig(await write('custom.json', { ...valid, environments: [{ game: 'pick-v1' }], prompt: '{observation}' }), {
      tokenizer,
      environments: { create: () => createPickEnvironment(['player0', 'player1']), names: () => ['pick-v1'] },
    })
    expect(config.environments![0]!().id).toBe('pick-v1')
    expect(config.prompt).toBe('{observation}')
    config.model.dispose()
  })
})
