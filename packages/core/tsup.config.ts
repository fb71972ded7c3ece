import { defineConfig } from 'tsup'

export default defineConfig({
  entry: { index: 'src/index.ts', 'test/index': 'src/test/index.ts', 'node/index': 'src/node/index.ts' },
  format: ['esm'],
  dts: true,
  sourcemap: true,
  clean: true,
})
