#!/usr/bin/env node
// Checks that each package's browser entry bundles for a browser: esbuild bundles `export * from '<package>'` as a
// browser would get it (platform browser, the `browser` export condition, ESM, minified), from the built dist/ (run
// `npm run build` first), and FAILS when the bundle reaches a Node built-in (`fs`, `node:worker_threads`…) or a module
// that cannot be resolved, naming the package and the chain of importers that reached it. A dependency's own
// `browser` field that maps a built-in away (TensorFlow.js's `fs: false`) is honoured, as a bundler would.
// Prints each bundle's size and gzip size (zlib, default level), with TensorFlow.js bundled in and without it
// (`@tensorflow/*` external: what the package adds to an app that already has TensorFlow.js).
// Usage: node scripts/check-browser.mjs [@ludic/name | folder …]
// (default: every package whose exports have a `browser` condition, and the packages meant to be browser-safe as they are)
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { builtinModules } from 'node:module'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gzipSync } from 'node:zlib'
import { build } from 'esbuild'

const repository = fileURLToPath(new URL('..', import.meta.url))
/** Packages that have no Node-only part, so their one entry must bundle for a browser as it is. */
const browserSafeAsTheyAre = ['core', 'games', 'advantages', 'objectives', 'roleplay', 'rewards']
const nodeBuiltins = new Set(builtinModules.flatMap((name) => [name, `node:${name}`]))
const isNodeBuiltin = (specifier) => specifier.startsWith('node:') || nodeBuiltins.has(specifier) || nodeBuiltins.has(specifier.split('/')[0])

function workspacePackages() {
  return readdirSync(join(repository, 'packages'), { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(join(repository, 'packages', entry.name, 'package.json')))
    .map((entry) => ({ folder: entry.name, manifest: JSON.parse(readFileSync(join(repository, 'packages', entry.name, 'package.json'), 'utf8')) }))
}

const hasBrowserCondition = (exports) =>
  exports !== null && typeof exports === 'object' && Object.entries(exports).some(([key, value]) => key === 'browser' || hasBrowserCondition(value))

/** The package names to check: those given (as `@ludic/x` or `x`), or the default set. */
function selectedPackages(argumentsGiven) {
  const packages = workspacePackages()
  if (argumentsGiven.length > 0) {
    return argumentsGiven.map((given) => {
      const found = packages.find(({ folder, manifest }) => manifest.name === given || folder === given)
      if (found === undefined) {
        console.error(`check-browser: no package ${JSON.stringify(given)} under packages/ (give @ludic/<name> or a folder name)`)
        process.exit(2)
      }
      return found.manifest.name
    })
  }
  return packages
    .filter(({ folder, manifest }) => manifest.private !== true && (hasBrowserCondition(manifest.exports) || browserSafeAsTheyAre.includes(folder)))
    .map(({ manifest }) => manifest.name)
}

const display = (path) => (path.startsWith(repository) ? relative(repository, path) : path)

/**
 * Bundles one package for a browser. Every import is resolved through esbuild itself; one that does not resolve is
 * recorded with its importer and left external, so a single build reports every problem, each with its chain.
 */
async function bundle(name, { withoutTensorFlow }) {
  const importerOf = new Map() // resolved path → the file that first imported it
  const problems = []
  const chainTo = (importer) => {
    const chain = []
    for (let file = importer; file !== undefined && !chain.includes(file); file = importerOf.get(file)) chain.push(file)
    return chain.reverse().map(display)
  }
  const guard = {
    name: 'ludic-browser-guard',
    setup(builder) {
      builder.onResolve({ filter: /.*/ }, async (args) => {
        if (args.pluginData?.guarded === true) return undefined
        if (args.kind === 'entry-point') return undefined
        if (withoutTensorFlow && args.path.startsWith('@tensorflow/')) return { path: args.path, external: true }
        const result = await builder.resolve(args.path, {
          kind: args.kind,
          importer: args.importer,
          resolveDir: args.resolveDir,
          namespace: args.namespace,
          pluginData: { guarded: true },
        })
        if (result.errors.length > 0) {
          const what = isNodeBuiltin(args.path) ? 'the Node built-in' : 'the unresolvable module'
          problems.push(`${what} ${JSON.stringify(args.path)}, imported by: ${chainTo(args.importer).join(' → ')}`)
          return { path: args.path, external: true }
        }
        if (result.path !== '' && !importerOf.has(result.path) && args.importer !== '') importerOf.set(result.path, args.importer)
        // Resolved (a `browser` field's `false` included): esbuild resolves it again the same way, from its cache.
        return undefined
      })
    },
  }
  const output = await build({
    stdin: { contents: `export * from '${name}'\n`, resolveDir: repository, sourcefile: `<${name}>`, loader: 'js' },
    bundle: true,
    platform: 'browser',
    conditions: ['browser'],
    format: 'esm',
    target: 'es2022',
    minify: true,
    write: false,
    logLevel: 'silent',
    plugins: [guard],
  })
  const code = output.outputFiles[0].contents
  return { problems: problems.map((problem) => problem.replace('<stdin> → ', `${name} → `)), bytes: code.byteLength, gzipBytes: gzipSync(code).byteLength }
}

const kib = (bytes) => `${(bytes / 1024).toFixed(1)} KiB`

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const names = selectedPackages(process.argv.slice(2))
  const rows = []
  let failed = 0
  for (const name of names) {
    try {
      const full = await bundle(name, { withoutTensorFlow: false })
      const own = await bundle(name, { withoutTensorFlow: true })
      const problems = [...new Set([...full.problems, ...own.problems])]
      if (problems.length > 0) {
        failed++
        console.log(`FAIL ${name}: its browser bundle reaches what a browser does not have`)
        for (const problem of problems) console.log(`     - ${problem}`)
      }
      rows.push([name, problems.length === 0 ? 'ok' : 'FAIL', kib(full.bytes), kib(full.gzipBytes), kib(own.bytes), kib(own.gzipBytes)])
    } catch (error) {
      failed++
      console.log(`FAIL ${name}: esbuild could not bundle it`)
      for (const message of error?.errors ?? [{ text: String(error?.stack ?? error) }]) {
        const where = message.location ? ` (${display(message.location.file)}:${message.location.line})` : ''
        console.log(`     - ${message.text}${where}`)
      }
      rows.push([name, 'FAIL', '', '', '', ''])
    }
  }
  const header = ['package', 'check', 'minified', 'gzip', 'minified without @tensorflow/*', 'gzip without @tensorflow/*']
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column].length)))
  const line = (cells) => `| ${cells.map((cell, column) => (column < 2 ? cell.padEnd(widths[column]) : cell.padStart(widths[column]))).join(' | ')} |`
  console.log(`\n${line(header)}\n|${widths.map((width, column) => `${'-'.repeat(width + 1)}${column < 2 ? '-' : ':'}`).join('|')}|`)
  for (const row of rows) console.log(line(row))
  console.log(
    `\n${names.length - failed} of ${names.length} packages bundle for a browser (esbuild, platform browser, conditions browser) with no Node built-in`,
  )
  process.exit(failed === 0 && names.length > 0 ? 0 : 1)
}
