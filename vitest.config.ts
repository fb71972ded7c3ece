import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { defineConfig, type TestProjectInlineConfiguration } from 'vitest/config'

// One project per package and example, all alike: tests sit beside their sources (`src/**/*.test.ts`; a
// package's cross-cutting conformance suites in `test/`) and import package sources through the
// `@ludic/source` export condition. Worker threads (asynchronous collection) run the built entries in dist/,
// so `npm test` builds first (turbo, cached). A package is `--project <folder>`, an example
// `--project example-<folder>`.
const repository = fileURLToPath(new URL('.', import.meta.url))
const folders = (parent: 'packages' | 'examples') =>
  readdirSync(join(repository, parent), { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(join(repository, parent, entry.name, 'package.json')))
    .map((entry) => entry.name)

const project = (parent: 'packages' | 'examples', folder: string): TestProjectInlineConfiguration => ({
  extends: true,
  test: {
    name: parent === 'packages' ? folder : `example-${folder}`,
    root: join(repository, parent, folder),
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
  },
})

export default defineConfig({
  resolve: { conditions: ['@ludic/source'] },
  ssr: { resolve: { conditions: ['@ludic/source'] } },
  test: {
    testTimeout: 60_000,
    projects: [...folders('packages').map((folder) => project('packages', folder)), ...folders('examples').map((folder) => project('examples', folder))],
  },
})
