import { defineConfig } from 'tsup'

export default defineConfig({
  // The worker thread entry is its own file: createAsyncCollector starts it by URL. `worker` is the
  // `@ludic/rollout/worker` subpath (plumbing for packages that start their own worker threads); `test` the soak harness.
  entry: { index: 'src/index.ts', worker: 'src/worker.ts', 'async-worker': 'src/async-worker.ts', 'test/index': 'src/test/index.ts' },
  format: ['esm'],
  dts: true,
  sourcemap: true,
  clean: true,
})
