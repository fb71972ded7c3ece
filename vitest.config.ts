import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { availableParallelism } from 'node:os'
import { type Alias, configDefaults, defineConfig, type TestProjectInlineConfiguration } from 'vitest/config'

// One project per package, and one for all the examples, all alike: tests sit beside their sources
// (`src/**/*.test.ts`, the CLI page's `view/src/`; a package's cross-cutting conformance suites in `test/`) and import
// the other packages' sources, not their builds: each package's `exports` entry `./dist/<entry>.js` is aliased to
// `src/<entry>.ts` (or `src/<entry>/index.ts`), so the published `exports` name only what the tarball holds. Worker
// threads (asynchronous collection) run the built entries in dist/, so `npm test` builds first (turbo, cached). A
// package is `--project <folder>`; the examples are `--project examples` (one example: its folder as a filter,
// `npm test -- examples/<folder>`), one project because each project's workers import the packages afresh, and the
// examples import nearly all of them for one or two files each.
const repository = fileURLToPath(new URL('.', import.meta.url))
const folders = (parent: 'packages' | 'examples') =>
  readdirSync(join(repository, parent), { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(join(repository, parent, entry.name, 'package.json')))
    .map((entry) => entry.name)

// Test files share their worker's modules (`isolate: false`): a package's sources, TensorFlow.js and its WebAssembly
// binary are imported once per worker rather than once per file, which was 40% of the suite's time. A file that
// needs a module graph of its own runs in its package's second project, `<name>:isolated`, where every file starts
// fresh: one that replaces a module (`vi.mock`, `vi.doMock`: the module may already be loaded by an earlier file), or
// one that says why with a comment naming `isolated-test`. Mocks, stubbed globals and environment variables are
// restored after every test, so nothing a test changes reaches the next file.
const needsIsolation = (file: string) => /\bvi\.(?:do)?[mM]ock\(|\bisolated-test\b/.test(readFileSync(file, 'utf8'))
const testFolders = ['src', 'test', 'view/src']
const testPatterns = testFolders.map((folder) => `${folder}/**/*.test.ts`)
/** The test files under `root` (relative paths), as `testPatterns` name them. */
const testFiles = (root: string) =>
  testFolders
    .filter((folder) => existsSync(join(root, folder)))
    .flatMap((folder) => readdirSync(join(root, folder), { recursive: true, encoding: 'utf8' }).map((file) => join(folder, file)))
    .filter((file) => file.endsWith('.test.ts') && !file.split(sep).includes('node_modules'))

/** A folder's test projects: the shared one, and `<name>:isolated` when some of its files need their own module graph. */
function projects(root: string, name: string, patterns: readonly string[], files: readonly string[]): TestProjectInlineConfiguration[] {
  const isolated = files.filter((file) => needsIsolation(join(root, file)))
  // A package whose browser-safe modules reach Node-only parts through a registration (`src/node-platform.ts`, which
  // its Node entry imports and its browser entry does not) has it registered before each file, as its Node entry would.
  const nodePlatform = join(root, 'src', 'node-platform.ts')
  const setupFiles = existsSync(nodePlatform) ? [nodePlatform] : []
  const shared: TestProjectInlineConfiguration = {
    extends: true,
    test: { name, root, include: [...patterns], exclude: [...configDefaults.exclude, ...isolated], isolate: false, setupFiles },
  }
  if (isolated.length === 0) return [shared]
  return [shared, { extends: true, test: { name: `${name}:isolated`, root, include: isolated, isolate: true, setupFiles } }]
}

const packageProjects = folders('packages').flatMap((folder) => {
  const root = join(repository, 'packages', folder)
  return projects(root, folder, testPatterns, testFiles(root))
})
const examplesRoot = join(repository, 'examples')
const exampleProjects = projects(
  examplesRoot,
  'examples',
  testPatterns.map((pattern) => `*/${pattern}`),
  folders('examples').flatMap((folder) => testFiles(join(examplesRoot, folder)).map((file) => join(folder, file))),
)

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
    // Vitest's default, one worker fewer than the cores, leaves one of a 2-core machine's cores to the main process,
    // which only transforms sources: two workers there.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    restoreMocks: true,
    unstubEnvs: true,
    unstubGlobals: true,
    projects: [...packageProjects, ...exampleProjects],
  },
})
