#!/usr/bin/env node
// Packs every publishable package (packages/*/package.json without "private": true) with `npm pack` into one folder,
// tarballs/ at the repository root unless another is given, and prints for each package the `npm install` line that
// installs it into a project of one's own from there: its tarball, the tarballs of the @ludic packages it depends on
// (transitively: npm would look any other one up on the registry, where @ludic/* are not published yet, and fail with
// E404) and its required peer dependencies. This is the way to use the packages before a release is published.
// Run after `npm run build` (`npm run pack:all` builds first). The folder's earlier `ludic-*.tgz` are removed first.
// Usage: node scripts/pack-all.mjs [folder]   (npm run pack:all [-- folder])
// scripts/registry-test.mjs packs with `packPackages` too, and installs getting-started's tarball line from them.
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs'
import { isAbsolute, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { publishablePackages } from './check-packages.mjs'

const repository = fileURLToPath(new URL('..', import.meta.url))

/**
 * Packs every publishable package into `destination` (made if missing); returns, per package, its name, version,
 * folder under packages/, tarball file name and path, manifest and sizes (`skip`: folders left out). Throws if a
 * package is not built.
 */
export function packPackages(destination, { env = process.env, skip = [] } = {}) {
  const packages = publishablePackages().filter((pkg) => !skip.includes(pkg.folder))
  const notBuilt = packages.filter((pkg) => !existsSync(join(pkg.directory, 'dist')))
  if (notBuilt.length > 0) throw new Error(`not built (run \`npm run build\` first): ${notBuilt.map((pkg) => pkg.manifest.name).join(', ')}`)
  mkdirSync(destination, { recursive: true })
  return packages.map((pkg) => {
    const output = execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', destination], {
      cwd: pkg.directory,
      env,
      encoding: 'utf8',
      timeout: 120_000,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    const [info] = JSON.parse(output.slice(output.indexOf('[')))
    return {
      name: pkg.manifest.name,
      version: info.version,
      folder: pkg.folder,
      filename: info.filename,
      path: join(destination, info.filename),
      manifest: pkg.manifest,
      files: info.entryCount,
      size: info.size,
      unpackedSize: info.unpackedSize,
    }
  })
}

/** The @ludic packages `name` needs: itself and its @ludic dependencies, transitively, in the order packed. */
export function ludicClosure(packed, name) {
  const byName = new Map(packed.map((entry) => [entry.name, entry]))
  const needed = new Set()
  const visit = (current) => {
    const entry = byName.get(current)
    if (entry === undefined) throw new Error(`${current} is not a publishable package of this repository`)
    if (needed.has(current)) return
    needed.add(current)
    for (const dependency of Object.keys(entry.manifest.dependencies ?? {})) if (dependency.startsWith('@ludic/')) visit(dependency)
  }
  visit(name)
  return packed.filter((entry) => needed.has(entry.name))
}

/**
 * The arguments of `npm install` for `name` from the tarballs: every tarball of its closure (as paths relative to
 * `from` when given), then its required (not optional) peer dependencies that are not @ludic packages, at their range.
 */
export function tarballInstallArguments(packed, name, { from } = {}) {
  const closure = ludicClosure(packed, name)
  const tarballs = closure.map((entry) => (from === undefined ? entry.path : relative(from, entry.path) || '.'))
  const { peerDependencies = {}, peerDependenciesMeta = {} } = closure.find((entry) => entry.name === name).manifest
  const peers = Object.entries(peerDependencies)
    .filter(([peer]) => !peer.startsWith('@ludic/') && peerDependenciesMeta[peer]?.optional !== true)
    .map(([peer, range]) => `${peer}@${range}`)
  return [...tarballs.map((path) => (isAbsolute(path) || path.startsWith('.') ? path : `./${path}`)), ...peers]
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const destination = resolve(process.argv[2] ?? join(repository, 'tarballs'))
  if (existsSync(destination)) for (const file of readdirSync(destination)) if (/^ludic-.*\.tgz$/.test(file)) rmSync(join(destination, file))
  let packed
  try {
    packed = packPackages(destination)
  } catch (error) {
    console.error(`pack:all: ${error?.stderr ?? error?.message ?? error}`)
    process.exit(1)
  }
  console.log(`${packed.length} packages packed into ${destination}:`)
  for (const entry of packed) console.log(`  ${entry.filename}`)
  console.log('\n@ludic/* are not on the npm registry yet: install a package with the tarballs of the @ludic packages it depends on,')
  console.log('in the same command. From a project of your own, for each package:\n')
  for (const entry of packed) console.log(`# ${entry.name}\nnpm install ${tarballInstallArguments(packed, entry.name).join(' ')}\n`)
}
