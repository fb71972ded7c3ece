#!/usr/bin/env node
// Checks every publishable package (packages/*/package.json without "private": true) as it would be published:
// packs it once with npm (after `npm run build`) and checks that tarball with
//   - publint (strict: warnings are errors),
//   - @arethetypeswrong/cli with the `esm-only` profile (the packages are ESM-only: the CommonJS and `node10`
//     resolutions are not checked; ESM under Node 16+ and bundlers are),
//   - Ludic's own rules: the tarball holds package.json, README.md, LICENSE and dist/ (and what `files` adds), no
//     source, no test file, no text naming `../shared`; the README has an install line naming the package and its
//     required peer dependencies, and says the package is ESM-only.
// Exits non-zero if any package fails any check. Usage: node scripts/check-packages.mjs [folder…]
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { publint } from 'publint'
import { formatMessage } from 'publint/utils'

const repository = fileURLToPath(new URL('..', import.meta.url))
const attw = join(repository, 'node_modules', '.bin', 'attw')

/** The publishable packages: folder, directory and manifest. */
export function publishablePackages(only = []) {
  return readdirSync(join(repository, 'packages'), { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(join(repository, 'packages', entry.name, 'package.json')))
    .map((entry) => {
      const directory = join(repository, 'packages', entry.name)
      return { folder: entry.name, directory, manifest: JSON.parse(readFileSync(join(directory, 'package.json'), 'utf8')) }
    })
    .filter(({ folder, manifest }) => manifest.private !== true && (only.length === 0 || only.includes(folder)))
}

/** Every file an `exports` map points to (patterns skipped), as tarball paths without `./`. */
function exportTargets(value) {
  if (typeof value === 'string') return value.includes('*') ? [] : [value.replace(/^\.\//, '')]
  if (value === null || typeof value !== 'object') return []
  return Object.values(value).flatMap(exportTargets)
}

function ownRules({ manifest }, files, unpacked) {
  const problems = []
  const has = (name) => files.includes(name)
  for (const required of ['package.json', 'README.md', 'LICENSE']) if (!has(required)) problems.push(`the tarball has no ${required}`)
  if (!files.some((file) => file.startsWith('dist/'))) problems.push('the tarball has no dist/ (run `npm run build` first)')
  for (const file of files) {
    if (/(^|\/)src\//.test(file)) problems.push(`the tarball ships source: ${file}`)
    if (/\.(test|spec)\.[cm]?[jt]sx?$/.test(file) || /(^|\/)__tests__\//.test(file)) problems.push(`the tarball ships a test: ${file}`)
  }
  for (const target of exportTargets(manifest.exports)) if (!has(target)) problems.push(`exports names ${target}, which the tarball lacks`)
  for (const [file, text] of unpacked)
    if (text.includes('../shared')) problems.push(`${file} names ../shared (a path of this repository's CI, not of a user's machine)`)
  const readme = unpacked.get('README.md') ?? ''
  const installLine = readme.split('\n').find((line) => new RegExp(`^npm install (.* )?${manifest.name}( |$)`).test(line.trim()))
  if (installLine === undefined) problems.push(`README.md has no \`npm install ${manifest.name}\` line`)
  else {
    const optional = manifest.peerDependenciesMeta ?? {}
    for (const peer of Object.keys(manifest.peerDependencies ?? {})) {
      if (optional[peer]?.optional !== true && !installLine.split(/\s+/).some((word) => word === peer || word.startsWith(`${peer}@`))) {
        problems.push(`README.md's install line does not install the peer dependency ${peer}`)
      }
    }
  }
  if (!/ESM[- ]only/i.test(readme)) problems.push('README.md does not say the package is ESM-only')
  return problems
}

async function checkPackage(pkg, scratch) {
  const started = performance.now()
  const problems = []
  const [packed] = JSON.parse(
    execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', scratch], { cwd: pkg.directory, encoding: 'utf8', timeout: 120_000 }),
  )
  const tarball = join(scratch, packed.filename)
  const files = packed.files.map((file) => file.path)
  // Text files of the tarball (to look for ../shared): dist's JavaScript and declarations, README, package.json.
  const unpacked = new Map(files.filter((file) => /\.(js|d\.ts|md|json)$/.test(file)).map((file) => [file, readFileSync(join(pkg.directory, file), 'utf8')]))
  problems.push(...ownRules(pkg, files, unpacked))

  const bytes = readFileSync(tarball)
  const lint = await publint({ pack: { tarball: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) }, strict: true, level: 'warning' })
  for (const message of lint.messages) problems.push(`publint ${message.type}: ${formatMessage(message, lint.pkg, { color: false })}`)

  const types = spawnSync(attw, [tarball, '--profile', 'esm-only', '--format', 'ascii', '--no-color', '--no-emoji'], { encoding: 'utf8', timeout: 120_000 })
  if (types.status !== 0) problems.push(`attw (--profile esm-only) failed:\n${`${types.stdout}${types.stderr}`.trim()}`)

  return { name: pkg.manifest.name, files: files.length, unpackedSize: packed.unpackedSize, problems, seconds: (performance.now() - started) / 1000 }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const packages = publishablePackages(process.argv.slice(2))
  const scratch = mkdtempSync(join(tmpdir(), 'ludic-check-packages-'))
  let failed = 0
  try {
    for (const pkg of packages) {
      const result = await checkPackage(pkg, scratch).catch((error) => ({ name: pkg.manifest.name, problems: [String(error?.stack ?? error)], seconds: 0 }))
      const size = result.unpackedSize === undefined ? '' : `, ${result.files} files, ${(result.unpackedSize / 1024).toFixed(0)} KiB unpacked`
      if (result.problems.length === 0) console.log(`ok   ${result.name}${size} (${result.seconds.toFixed(1)} s)`)
      else {
        failed++
        console.log(`FAIL ${result.name}${size}`)
        for (const problem of result.problems) console.log(`     - ${problem.replaceAll('\n', '\n       ')}`)
      }
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
  console.log(`${packages.length - failed} of ${packages.length} publishable packages pass publint, attw (esm-only) and the packaging rules`)
  process.exit(failed === 0 && packages.length > 0 ? 0 : 1)
}
