import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'

// The playground: a static page and its training worker (an ES module worker). Cross-origin isolation (COOP + COEP)
// lets TensorFlow.js's WebAssembly backend use threads (SharedArrayBuffer); a static host serving the build should
// send the same two headers (without them the page still runs, single-threaded). `base: './'` lets the build sit
// under any path.
const isolation = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' }

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: './',
  worker: { format: 'es' },
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: false, chunkSizeWarningLimit: 4096, target: 'es2022' },
  server: { headers: isolation },
  preview: { headers: isolation },
})
