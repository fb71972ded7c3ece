import { defineConfig } from 'tsup'

export default defineConfig({
  // The worker modules are their own files: the asynchronous mode's rollout workers and the disaggregated source's
  // collection thread import them by path. `example` is the examples' scaffolding (`@ludic/trainer/example`); `browser`
  // the browser entry (the `browser` export condition: no Node-only parts registered).
  entry: {
    index: 'src/index.ts',
    browser: 'src/browser.ts',
    example: 'src/example.ts',
    'rollout-worker': 'src/rollout-worker.ts',
    'disaggregated-worker': 'src/disaggregated-worker.ts',
  },
  format: ['esm'],
  dts: true,
  sourcemap: true,
  clean: true,
})
