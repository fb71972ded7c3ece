import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'

// The page of `ludic view`: built into the CLI package's dist/view/, which the view server serves (with
// `Content-Security-Policy: default-src 'self'`: no inline script, nothing from the network). Preact's JSX through
// Vite's own transform (no Babel). `LUDIC_VIEW_API` proxies /api to a running `ludic view` for `vite dev`.
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: './',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: fileURLToPath(new URL('../dist/view', import.meta.url)),
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 2048,
  },
  server: process.env.LUDIC_VIEW_API === undefined ? {} : { proxy: { '/api': process.env.LUDIC_VIEW_API } },
})
