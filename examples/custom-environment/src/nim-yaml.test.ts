import { fileURLToPath } from 'node:url'
import { createRandomPolicy, games } from '@ludic/games'
import { initTensors } from '@ludic/tensors'
import { loadTrainingRun } from '@ludic/trainer'
import { expect, it } from 'vitest'

// An isolated-test: the run config imports the plugin by its path (Node's loader), which registers nim-v0; a file run
// before it in the same worker may have registered nim-v0 already through the test's own loader (another module
// instance), and a second registration is refused, as it should be.
it('nim.yaml imports its plugin (which registers nim-v0) and makes a self-play run on Nim', async () => {
  await initTensors({ backend: 'wasm', verbose: false })
  const path = fileURLToPath(new URL('../nim.yaml', import.meta.url))
  const opponents = { create: (_name: string, { seed }: { seed: number }) => createRandomPolicy({ seed }), names: () => ['random'] }
  const run = await loadTrainingRun(path, { environments: games, opponents, overrides: ['tokenizer.train.episodes=4', 'warmUp.episodes=4'] })
  expect(games.names()).toContain('nim-v0')
  expect(run.kind).toBe('rl')
  if (run.kind !== 'rl') return
  expect(run.steps).toBe(30)
  const environment = run.config.environments![0]!()
  expect(environment.id).toBe('nim-v0')
  expect(environment.reset(0).observation).toMatch(/stones left/)
  expect(run.warmUp?.steps).toBe(60)
  run.model.dispose()
})
