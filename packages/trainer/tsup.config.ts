import { defineConfig } from 'tsup'

export default defineConfig({
  // The rollout worker module is its own file: the asynchronous mode's worker threads import it by path.
  entry: { index: 'src/index.ts', 'rollout-worker': 'src/rollout-worker.ts' },
  format: ['esm'],
  dts: true,
  sourcemap: true,
  clean: true,
})
