import { defineConfig } from 'tsup'

export default defineConfig({
  entry: { index: 'src/index.ts', browser: 'src/browser.ts', 'test/index': 'src/test/index.ts' },
  format: ['esm'],
  dts: true,
  sourcemap: true,
  clean: true,
  // tfjs-core ships its gradient registrations only as extension-less ESM files that Node cannot load
  // (the `@tensorflow/tfjs` bundle inlines them the same way); tfjs-core itself stays external.
  noExternal: [/^@tensorflow\/tfjs-core\/dist\//],
})
