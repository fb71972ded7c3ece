import { defineConfig } from 'tsup'

export default defineConfig({
  // `browser` is the browser entry (the `browser` export condition: no worker threads, no sockets). The worker thread
  // entry is its own file: createAsyncCollector starts it by URL. `worker` is the `@ludic/rollout/worker` subpath
  // (plumbing for packages that start their own worker threads); `test` the soak harness.
  entry: {
    index: 'src/index.ts',
    browser: 'src/browser.ts',
    worker: 'src/worker.ts',
    'async-worker': 'src/async-worker.ts',
    'test/index': 'src/test/index.ts',
  },
  format: ['esm'],
  dts: true,
  sourcemap: true,
  clean: true,
})
