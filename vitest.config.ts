import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type Alias, defineConfig, type TestProjectInlineConfiguration } from 'vitest/config'

// One project per package and example, all alike: tests sit beside their sources (`src/**/*.test.ts`, the CLI page's `view/src/`; a
// package's cross-cutting conformance suites in `test/`) and import the other packages' sources, not their
// builds: each package's `exports` entry `./dist/<entry>.js` is aliased to `src/<entry>.ts` (or
// `src/<entry>/index.ts`), so the published `exports` name only what the tarball holds. Worker threads
// (asynchronous collection) run the built entries in dist/, so `npm test` builds first (turbo, cached). A
// package is `--project <folder>`, an example `--project example-<folder>`.
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
    include: ['src/**/*.test.ts', 'test/**/*.test.ts', 'view/src/**/*.test.ts'],
  },
})

/** `@ludic/x` and `@ludic/x/sub` → the source file of the built entry their `exports` name. */
function sourceAliases(): Alias[] {
  const aliases: Alias[] = []
  for (const folder of folders('packages')) {
    const directory = join(repository, 'packages', folder)
    const manifest = JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8')) as { name: string; exports?: Record<string, unknown> }
    for (const [subpath, target] of Object.entries(manifest.exports ?? {})) {
      if (subpath.includes('*') || typeof target !== 'object' || target === null) continue
      const built = (target as Record<string, unknown>).import ?? (target as Record<string, unknown>).default
      const entry = typeof built === 'string' ? /^\.\/dist\/(.+)\.js$/.exec(built)?.[1] : undefined
      if (entry === undefined) continue
      const source = [`src/${entry}.ts`, `src/${entry}/index.ts`].map((file) => join(directory, file)).find((file) => existsSync(file))
      if (source === undefined) continue
      const specifier = `${manifest.name}${subpath.slice(1)}`
      aliases.push({ find: new RegExp(`^${specifier.replaceAll('/', '\\/')}$`), replacement: source })
    }
  }
  return aliases
}

// Timeouts catch a hang; they are not speed checks (speed is the benchmarks'). Sized for a 2-core machine running
// two suites at once, where a test takes about five times as long as alone: the slowest test takes ~20 s alone and
// ~100 s so, the slowest hook (a conformance suite loading its reference tokenizers) ~3 s alone and over 10 s so.
// A test needing more says so with its own timeout, and why.
export default defineConfig({
  resolve: { alias: sourceAliases() },
  test: {
    testTimeout: 300_000,
    hookTimeout: 120_000,
    projects: [...folders('packages').map((folder) => project('packages', folder)), ...folders('examples').map((folder) => project('examples', folder))],
  },
})
