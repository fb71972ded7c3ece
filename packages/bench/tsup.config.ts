import { defineConfig } from 'tsup'

export default defineConfig({
  // The speed suites' child processes and the rollout setups of the asynchronous collection and of the disaggregated
  // source's collection thread are their own files: they run by path.
  entry: {
    index: 'src/index.ts',
    'perf-child': 'src/perf-child.ts',
    'selfplay-rollout-setup': 'src/selfplay-rollout-setup.ts',
    'disaggregated-server': 'src/disaggregated/server-child.ts',
    'negotiation-rollout-setup': 'src/negotiation-rollout-setup.ts',
  },
  format: ['esm'],
  dts: true,
  sourcemap: true,
  clean: true,
})
