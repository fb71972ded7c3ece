import { game24Split } from '@ludic/games'
import { createStepwiseEnvironments } from '@ludic/trainer'
import { describe, expect, it } from 'vitest'
import { game24Prompt, game24Task, game24Tasks, trainGame24Tokenizer, type Game24Problem } from './game24-setup.js'

describe('game24Tasks', () => {
  it("gives Flow of Reasoning the same prompts, legal actions in the same order, and rewards as the problem's own functions, at every state", () => {
    const problems: Game24Problem[] = [[4, 7, 8, 8], [1, 1, 2, 6], ...game24Split({ seed: 0, testSize: 100 }).train.slice(0, 2)]
    const { environments, seeds, ...prompt } = game24Tasks(problems)
    const states = createStepwiseEnvironments(trainGame24Tokenizer(problems, 300), environments, prompt)
    let visited = 0
    const walk = (seed: number, steps: string[]) => {
      const problem = problems[seed]!
      const state = states.state({ environment: 0, seed }, steps)
      visited++
      if (state.done) {
        expect(game24Task.allowedActions(problem, steps)).toEqual([])
        expect(Math.log(state.episode.return)).toBe(game24Task.logReward(problem, steps))
        expect(state.episode.return >= 100).toBe(game24Task.solved(problem, steps))
        return
      }
      expect(state.prompt).toBe(game24Prompt(problem, steps))
      expect(state.legalActions).toEqual(game24Task.allowedActions(problem, steps))
      // Every first and second step; of the third, the first few (the leaves are checked above).
      for (const action of steps.length < 2 ? state.legalActions : state.legalActions.slice(0, 3)) walk(seed, [...steps, action])
    }
    for (const seed of seeds) walk(seed, [])
    expect(visited).toBeGreaterThan(500)
  })
})
