import { defineConfig } from 'tsup'

export default defineConfig({
  // The speed suites' child process and the asynchronous collection's rollout setup are their own files: they run by path.
  entry: {
    index: 'src/index.ts',
    'perf-child': 'src/perf-child.ts',
    'selfplay-rollout-setup': 'src/selfplay-rollout-setup.ts',
    'disaggregated-server': 'src/disaggregated/server-child.ts',
  },
  format: ['esm'],
  dts: true,
  sourcemap: true,
  clean: true,
})
