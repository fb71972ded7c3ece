import { defineProject } from 'vitest/config'

export default defineProject({
  resolve: { conditions: ['@ludic/source'] },
  ssr: { resolve: { conditions: ['@ludic/source'] } },
  test: { name: 'example-selfplay-tictactoe', include: ['src/**/*.test.ts'], testTimeout: 60_000 },
})
