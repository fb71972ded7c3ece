import { defineConfig } from 'tsup'

export default defineConfig({
  entry: { index: 'src/index.ts', browser: 'src/browser.ts' },
  format: ['esm'],
  dts: true,
  sourcemap: true,
  clean: true,
})
