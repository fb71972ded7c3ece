import { defineConfig } from 'vitest/config'

// One project per package; tests import package source through the `@ludic/source` export
// condition, so `npm test` needs no prior build.
export default defineConfig({
  resolve: { conditions: ['@ludic/source'] },
  ssr: { resolve: { conditions: ['@ludic/source'] } },
  test: {
    projects: ['packages/*', 'examples/*'],
  },
})
