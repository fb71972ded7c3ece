import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { InvalidArgumentError } from '@ludic/core'
import { loadModel } from '@ludic/model'
import { initTensors } from '@ludic/tensors'
import { loadTokenizer } from '@ludic/tokenizer'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { main as kuhnMain } from '../../selfplay-kuhn-poker/src/main.js'
import { resolveRecipe } from './recipes.js'
import { lastLogits, PlaygroundSession } from './session.js'

// The playground's session in Node, on WebAssembly as the page's default: the same recipe as the Kuhn example (same
// figures for the same seed), play, preferences and DPO, and files Node's loaders read.

const directories: string[] = []
beforeAll(async () => {
  await initTensors({ backend: 'wasm', verbose: false })
})
afterAll(async () => {
  for (const directory of directories) await rm(directory, { recursive: true, force: true, maxRetries: 5 })
})

const small = { sftSteps: 6, episodesPerStep: 8, miniBatchSize: 16, evaluationEpisodes: 8, seed: 3 } as const

describe('the playground session', () => {
  it('trains Kuhn Poker as the example does: the same exploitability and win rate after the warm-up and after a step', async () => {
    const runDirectory = await mkdtemp(join(tmpdir(), 'ludic-playground-kuhn-'))
    directories.push(runDirectory)
    const report = await kuhnMain({ ...small, steps: 1, evaluateEvery: 1, checkpointEvery: 0, runDirectory, backend: 'wasm', progress: false, log: () => {} })
    const session = PlaygroundSession.create({ game: 'kuhn', ...small, steps: 1, evaluateEvery: 1 })
    try {
      await session.warmUp()
      const before = await session.evaluate()
      expect(before.exploitability).toBe(report.before.exploitability)
      expect(before.winRate).toBe(report.before.winRate)
      const step = await session.trainStep()
      expect(step.step).toBe(1)
      expect(Number.isFinite(step.loss)).toBe(true)
      const after = await session.evaluate()
      expect(after.exploitability).toBe(report.after.exploitability)
      expect(after.winRate).toBe(report.after.winRate)
    } finally {
      session.dispose()
    }
  })

  it('plays a TicTacToe game against a person to its end, the model sampling only legal moves', async () => {
    const session = PlaygroundSession.create({ game: 'tictactoe', ...small, sftSteps: 2 })
    try {
      let game = await session.newGame('player0')
      expect(game.board).toEqual(['', '', '', '', '', '', '', '', ''])
      expect(game.legalActions).toHaveLength(9)
      let personMoves = 0
      while (!game.done) {
        game = await session.play(game.legalActions[0]!)
        personMoves++
      }
      expect(game.modelMoves.length).toBeGreaterThan(0)
      for (const move of game.modelMoves) {
        expect(move.moves.map((entry) => entry.action)).toContain(move.played)
        expect(move.moves.reduce((total, entry) => total + entry.probability, 0)).toBeCloseTo(1, 6)
      }
      expect(Object.keys(game.rewards).sort()).toEqual(['player0', 'player1'])
      // The last board has the game's last move on it: an O for each of the person's moves, an X for each of the model's.
      expect(game.board!.filter((mark) => mark === 'O')).toHaveLength(personMoves)
      expect(game.board!.filter((mark) => mark === 'X')).toHaveLength(game.modelMoves.length)
      await expect(session.play('[4]')).rejects.toThrow(InvalidArgumentError)
      game = await session.newGame('player1')
      expect(game.modelMoves).toHaveLength(1)
      await expect(session.play('[9]')).rejects.toThrow(/is not legal here/)
    } finally {
      session.dispose()
    }
  })

  it('learns a recorded preference with DPO: the chosen move becomes more likely', async () => {
    const session = PlaygroundSession.create({ game: 'kuhn', ...small })
    try {
      await session.warmUp()
      let game = await session.newGame('player1')
      // Whoever opens (the deal decides), after one move of the person's the model has decided once.
      if (game.modelMoves.length === 0) game = await session.play(game.legalActions[0]!)
      const decision = game.modelMoves[0]!
      const [first, second] = decision.moves
      const chosen = first!.probability < second!.probability ? first! : second!
      const rejected = chosen === first ? second! : first!
      expect(() => session.addPreference({ prompt: decision.prompt, chosen: chosen.action, rejected: chosen.action })).toThrow(InvalidArgumentError)
      session.addPreference({ prompt: decision.prompt, chosen: chosen.action, rejected: rejected.action })
      const metrics = await session.trainPreferences({ steps: 4 })
      expect(metrics).toHaveLength(4)
      const after = await session.moveProbabilities(
        decision.prompt,
        decision.moves.map((move) => move.action),
      )
      expect(after.moves.find((move) => move.action === chosen.action)!.probability).toBeGreaterThan(chosen.probability + 0.05)
    } finally {
      session.dispose()
    }
  })

  it('writes files that loadModel and loadTokenizer read in Node, with the same logits; and reads them back', async () => {
    const session = PlaygroundSession.create({ game: 'kuhn', ...small })
    const directory = await mkdtemp(join(tmpdir(), 'ludic-playground-files-'))
    directories.push(directory)
    let restored: PlaygroundSession | undefined
    try {
      await session.warmUp()
      const files = await session.files()
      expect(Object.keys(files).sort()).toEqual([
        'config.json',
        'generation_config.json',
        'model.safetensors',
        'playground.json',
        'tokenizer.json',
        'tokenizer_config.json',
      ])
      for (const [name, content] of Object.entries(files)) await writeFile(join(directory, name), content)
      const model = await loadModel(directory)
      const tokenizer = await loadTokenizer(directory)
      const ids = tokenizer.encode('[Player 0] [check]\n[check], [bet]\ncard K\n>', { addSpecialTokens: false })
      expect(Array.from(ids)).toEqual(Array.from(session.tokenizer.encode('[Player 0] [check]\n[check], [bet]\ncard K\n>', { addSpecialTokens: false })))
      const expected = await lastLogits(session.model, ids)
      const loaded = await lastLogits(model, ids)
      model.dispose()
      for (let index = 0; index < expected.length; index++) expect(Math.abs(loaded[index]! - expected[index]!)).toBeLessThanOrEqual(1e-5)
      restored = await PlaygroundSession.fromFiles(files)
      expect(restored.recipe).toEqual(session.recipe)
      expect(await lastLogits(restored.model, ids)).toEqual(expected)
      await expect(PlaygroundSession.fromFiles({ ...files, 'playground.json': '{' })).rejects.toThrow(/playground.json/)
      // A model saved in Node (saveModel's files and the tokenizer's, no recipe): the page's game names the recipe.
      const { 'playground.json': _recipe, ...fromNode } = files
      await expect(PlaygroundSession.fromFiles(fromNode)).rejects.toThrow(/has no playground.json/)
      const nodeSession = await PlaygroundSession.fromFiles(fromNode, { game: 'kuhn' })
      expect(await lastLogits(nodeSession.model, ids)).toEqual(expected)
      nodeSession.dispose()
      await expect(PlaygroundSession.fromFiles({ ...fromNode, 'tokenizer_config.json': '{}' }, { game: 'kuhn' })).rejects.toThrow(/eos_token/)
      const { 'config.json': _config, ...withoutConfig } = files
      await expect(PlaygroundSession.fromFiles(withoutConfig)).rejects.toThrow(/has no config.json/)
    } finally {
      session.dispose()
      restored?.dispose()
    }
  })

  it('refuses a bad recipe when the session is built, naming the field', () => {
    expect(() => resolveRecipe({ game: 'chess' as 'kuhn' })).toThrow(/options\.game/)
    expect(() => PlaygroundSession.create({ game: 'kuhn', episodesPerStep: 0 })).toThrow(/episodesPerStep/)
    expect(() => PlaygroundSession.create({ game: 'kuhn', steps: Number.NaN })).toThrow(InvalidArgumentError)
  })
})
