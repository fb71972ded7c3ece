import { defineProject } from 'vitest/config'

export default defineProject({
  resolve: { conditions: ['@ludic/source'] },
  ssr: { resolve: { conditions: ['@ludic/source'] } },
  test: {
    name: 'conformance-fixtures',
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 60_000,
  },
})
