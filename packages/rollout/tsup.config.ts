import { defineConfig } from 'tsup'

export default defineConfig({
  // The worker thread entry is its own file: createAsyncCollector starts it by URL.
  entry: { index: 'src/index.ts', 'async-worker': 'src/async-worker.ts' },
  format: ['esm'],
  dts: true,
  sourcemap: true,
  clean: true,
})
