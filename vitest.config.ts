import { defineConfig } from 'vitest/config'

// One project per package and example; tests import package source through the `@ludic/source` export
// condition. Worker threads (asynchronous collection) run the built entries in dist/, so `npm test` builds
// first (turbo, cached).
export default defineConfig({
  resolve: { conditions: ['@ludic/source'] },
  ssr: { resolve: { conditions: ['@ludic/source'] } },
  test: {
    projects: ['packages/*', 'examples/*'],
  },
})
