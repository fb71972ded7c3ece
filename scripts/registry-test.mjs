#!/usr/bin/env node
// Proves the packages install one by one from a real registry, as a new user would get them. Run after `npm run build`:
//   1. starts verdaccio on 127.0.0.1 (a free port, a temporary config and storage): `@ludic/*` is served only from
//      what is published to it, everything else is proxied to the npm registry this machine's npm uses;
//   2. packs every publishable package (packages/*/package.json without "private": true) into one folder, as
//      `npm run pack:all` does (scripts/pack-all.mjs), and, before anything is published (so @ludic/* answer 404, as on
//      npm today), installs each `npm install …tgz` line of docs/getting-started.md into a fresh project of its own: the
//      tarballs it names must be a package with its @ludic dependencies, and the example marked
//      `<!-- tarball-install-test expect="…" -->` (the ```ts block after it) runs in the last line's project; then
//      publishes the tarballs, as a user registered through the registry's own `adduser` API;
//   3. for every package whose README marks an example `<!-- registry-test expect="…" -->` (the ```ts block after
//      it; advantages, games, tokenizer and model at least): makes a fresh project in the system's temporary
//      directory, outside the repository (`npm init -y`, "type": "module"), runs the README's `npm install` line
//      against the loopback registry, records what it installed (size, files, packages), installs tsx and runs the
//      example, which must exit 0 and print the expected text;
//   4. prints a table and writes .ci-results/registry-test.json.
// Everything has a time limit and verdaccio is stopped on every exit path. Exits non-zero on any failure.
// Usage: node scripts/registry-test.mjs [--keep] [--skip=folder,…] [folder…]
//   --keep leaves the temporary directory; --skip leaves packages out of step 2 (a local run while one does not build);
//   folders limit step 3 to those packages.
import { spawn, spawnSync } from 'node:child_process'
import { appendFileSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { basename, dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { publishablePackages } from './check-packages.mjs'
import { ludicClosure, packPackages } from './pack-all.mjs'

const repository = fileURLToPath(new URL('..', import.meta.url))
const required = ['advantages', 'games', 'tokenizer', 'model']
const keep = process.argv.includes('--keep')
const only = process.argv.slice(2).filter((argument) => !argument.startsWith('--'))
const skipped = process.argv
  .slice(2)
  .filter((argument) => argument.startsWith('--skip='))
  .flatMap((argument) => argument.slice('--skip='.length).split(','))
const overallLimitMs = 25 * 60_000
const started = performance.now()
const seconds = (since) => Number(((performance.now() - since) / 1000).toFixed(1))

const scratch = mkdtempSync(join(tmpdir(), 'ludic-registry-test-'))
const verdaccioLog = join(scratch, 'verdaccio.log')
let verdaccio
/** Child processes still running (each leads its own process group): killed on every way out. */
const running = new Set()

function killGroup(child) {
  if (child?.exitCode !== null || child.signalCode !== null || child.pid === undefined) return
  try {
    process.kill(-child.pid, 'SIGKILL')
  } catch {
    child.kill('SIGKILL')
  }
}
function cleanUp() {
  for (const child of running) killGroup(child)
  killGroup(verdaccio)
  if (!keep) rmSync(scratch, { recursive: true, force: true })
}
process.on('exit', cleanUp)
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => process.exit(130))
const watchdog = setTimeout(() => {
  console.error(`registry test: over ${overallLimitMs / 60_000} minutes, stopping`)
  process.exit(1)
}, overallLimitMs)
watchdog.unref()

/** Runs a command with a time limit (the whole process group is killed past it); resolves with its exit code and output. */
function run(command, args, { cwd, timeoutMs, env }) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd, env: env ?? process.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
    running.add(child)
    let output = ''
    child.stdout.on('data', (chunk) => (output += chunk))
    child.stderr.on('data', (chunk) => (output += chunk))
    const timer = setTimeout(() => {
      output += `\n[killed after ${timeoutMs / 1000} s]`
      killGroup(child)
    }, timeoutMs)
    child.on('error', (error) => (output += String(error)))
    child.on('close', (code, signal) => {
      running.delete(child)
      clearTimeout(timer)
      resolve({ code: code ?? (signal ? 128 : 1), output })
    })
  })
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}

async function waitForRegistry(url, timeoutMs) {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (verdaccio.exitCode !== null) throw new Error(`verdaccio exited (${verdaccio.exitCode}):\n${readFileSync(verdaccioLog, 'utf8').slice(-3000)}`)
    try {
      const response = await fetch(`${url}-/ping`, { signal: AbortSignal.timeout(2000) })
      if (response.ok) return
    } catch {}
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  throw new Error(`verdaccio did not answer within ${timeoutMs / 1000} s:\n${readFileSync(verdaccioLog, 'utf8').slice(-3000)}`)
}

/** The npm registry this machine's npm uses (the uplink for everything but @ludic/*). */
function upstreamRegistry() {
  const result = spawnSync('npm', ['config', 'get', 'registry'], { cwd: tmpdir(), encoding: 'utf8', timeout: 30_000 })
  const url = result.stdout?.trim()
  return url?.startsWith('http') ? (url.endsWith('/') ? url : `${url}/`) : 'https://registry.npmjs.org/'
}

/** Bytes (apparent size) and files under a directory; symbolic links count as files, not followed. */
function directorySize(directory) {
  let bytes = 0
  let files = 0
  const stack = [directory]
  while (stack.length > 0) {
    const current = stack.pop()
    for (const entry of readdirSync(current, { withFileTypes: true })) {
      const path = join(current, entry.name)
      if (entry.isDirectory()) stack.push(path)
      else {
        files++
        bytes += lstatSync(path).size
      }
    }
  }
  return { bytes, files }
}

/** Installed package folders under node_modules (each `node_modules/<name>` or `node_modules/@scope/<name>`, nested too). */
function countPackages(nodeModules) {
  let count = 0
  const visit = (directory) => {
    if (!existsSync(directory)) return
    for (const entry of readdirSync(directory, { withFileTypes: true })) {
      if (!entry.isDirectory() || entry.name.startsWith('.')) continue
      if (entry.name.startsWith('@')) {
        for (const scoped of readdirSync(join(directory, entry.name), { withFileTypes: true })) {
          if (scoped.isDirectory()) {
            count++
            visit(join(directory, entry.name, scoped.name, 'node_modules'))
          }
        }
      } else {
        count++
        visit(join(directory, entry.name, 'node_modules'))
      }
    }
  }
  visit(nodeModules)
  return count
}

/** The README's `npm install` line naming the package, and its marked example with the text it must print. */
function readmeParts(pkg) {
  const readme = existsSync(join(pkg.directory, 'README.md')) ? readFileSync(join(pkg.directory, 'README.md'), 'utf8') : ''
  const marker = /<!--\s*registry-test\s+expect="([^"]+)"\s*-->\s*\n(?:\s*<!--.*?-->\s*\n)*```(?:ts|typescript)\n([\s\S]*?)\n```/.exec(readme)
  if (marker === null) return undefined
  const installLine = readme
    .split('\n')
    .map((line) => line.trim())
    .find((line) => line.startsWith('npm install ') && line.split(/\s+/).includes(pkg.manifest.name))
  if (installLine === undefined) throw new Error(`${pkg.manifest.name}: README.md has a registry-test example but no \`npm install ${pkg.manifest.name}\` line`)
  return { install: installLine.split(/\s+/).slice(2), expect: marker[1].replaceAll('&quot;', '"'), example: `${marker[2]}\n` }
}

/**
 * getting-started's tarball install lines (`npm install ../ludic/tarballs/ludic-x-1.0.0.tgz … peer@range`), and its
 * example marked `<!-- tarball-install-test expect="…" -->` with the text it must print.
 */
function gettingStartedTarballParts() {
  const guide = readFileSync(join(repository, 'docs/getting-started.md'), 'utf8')
  const lines = guide
    .split('\n')
    .map((line) => line.replace(/#.*$/, '').trim())
    .filter((line) => line.startsWith('npm install ') && line.includes('.tgz'))
    .map((line) => line.split(/\s+/).slice(2))
  const marker = /<!--\s*tarball-install-test\s+expect="([^"]+)"\s*-->\s*\n```(?:ts|typescript)\n([\s\S]*?)\n```/.exec(guide)
  if (lines.length === 0) throw new Error('docs/getting-started.md has no `npm install …tgz` line')
  if (marker === null) throw new Error('docs/getting-started.md has no <!-- tarball-install-test expect="…" --> example')
  return { lines, expect: marker[1].replaceAll('&quot;', '"'), example: `${marker[2]}\n` }
}

/** Problems of one tarball install line: a tarball not in tarballs/ or not packed, or a @ludic dependency left out. */
function tarballLineProblems(line, packed) {
  const problems = []
  const named = []
  for (const argument of line.filter((argument) => argument.endsWith('.tgz'))) {
    const entry = packed.find((candidate) => candidate.filename === basename(argument))
    if (basename(dirname(argument)) !== 'tarballs') problems.push(`${argument} is not in the folder \`npm run pack:all\` writes (tarballs/)`)
    if (entry === undefined)
      problems.push(`${argument}: \`npm run pack:all\` writes no such tarball (${packed.map((candidate) => candidate.filename).join(', ')})`)
    else named.push(entry.name)
  }
  for (const name of named) {
    for (const needed of ludicClosure(packed, name)) {
      if (!named.includes(needed.name))
        problems.push(`${name} needs ${needed.filename} in the same command (npm looks ${needed.name} up on the registry: E404)`)
    }
  }
  return problems
}

const formatBytes = (bytes) => (bytes >= 1024 * 1024 ? `${(bytes / 1024 / 1024).toFixed(1)} MiB` : `${(bytes / 1024).toFixed(0)} KiB`)

/** `npm init -y` in `project`, then a private ES-module app; what went wrong, if anything. */
async function initProject(npm, project) {
  const init = await npm(['init', '-y'], project, 60_000)
  if (init.code !== 0) return `npm init -y failed:\n${init.output}`
  const manifest = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8'))
  writeFileSync(join(project, 'package.json'), `${JSON.stringify({ ...manifest, private: true, type: 'module' }, null, 2)}\n`)
  return undefined
}

async function main() {
  const packages = publishablePackages().filter((pkg) => !skipped.includes(pkg.folder))
  if (skipped.length > 0) console.log(`left out on request: ${skipped.join(', ')}`)
  const missingDist = packages.filter((pkg) => !existsSync(join(pkg.directory, 'dist')))
  if (missingDist.length > 0) throw new Error(`not built (run \`npm run build\` first): ${missingDist.map((pkg) => pkg.manifest.name).join(', ')}`)
  const targets = packages
    .map((pkg) => ({ ...pkg, parts: readmeParts(pkg) }))
    .filter((pkg) => pkg.parts !== undefined && (only.length === 0 || only.includes(pkg.folder)))
  const untested = required.filter((folder) => (only.length === 0 || only.includes(folder)) && !targets.some((pkg) => pkg.folder === folder))
  if (untested.length > 0) throw new Error(`README.md of ${untested.join(', ')} has no <!-- registry-test expect="…" --> example`)
  if (targets.length === 0) throw new Error(`no package to install: none of ${only.join(', ')} has a README example marked for the registry test`)

  // 1. The registry.
  const port = await freePort()
  const registry = `http://127.0.0.1:${port}/`
  const uplink = upstreamRegistry()
  writeFileSync(
    join(scratch, 'config.yaml'),
    [
      `storage: ${join(scratch, 'storage')}`,
      'auth:',
      '  htpasswd:',
      `    file: ${join(scratch, 'htpasswd')}`,
      'uplinks:',
      '  npm:',
      `    url: ${uplink}`,
      '    timeout: 120s',
      '    max_fails: 5',
      'packages:',
      "  '@ludic/*':",
      '    access: $all',
      '    publish: $authenticated',
      "  '**':",
      '    access: $all',
      '    publish: $authenticated',
      '    proxy: npm',
      'max_body_size: 200mb',
      'log: { type: stdout, format: pretty, level: warn }',
      '',
    ].join('\n'),
  )
  const registryStarted = performance.now()
  verdaccio = spawn(
    process.execPath,
    [join(repository, 'node_modules/verdaccio/bin/verdaccio'), '--config', join(scratch, 'config.yaml'), '--listen', `127.0.0.1:${port}`],
    {
      cwd: scratch,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  )
  verdaccio.stdout.on('data', (chunk) => appendFileSync(verdaccioLog, chunk))
  verdaccio.stderr.on('data', (chunk) => appendFileSync(verdaccioLog, chunk))
  writeFileSync(verdaccioLog, '')
  await waitForRegistry(registry, 60_000)
  const startSeconds = seconds(registryStarted)
  console.log(`verdaccio on ${registry} (uplink ${uplink}) in ${startSeconds} s`)

  // A user, registered through the registry's API (what `npm adduser` does), and an npm configuration that uses only it.
  const user = { name: 'ludic-ci', password: `ci-${process.pid}-${Date.now()}` }
  const added = await fetch(`${registry}-/user/org.couchdb.user:${user.name}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ _id: `org.couchdb.user:${user.name}`, name: user.name, password: user.password, type: 'user', roles: [] }),
    signal: AbortSignal.timeout(30_000),
  })
  const { token } = await added.json()
  if (!added.ok || typeof token !== 'string') throw new Error(`adding a user to verdaccio failed: HTTP ${added.status}`)
  const npmrc = join(scratch, 'npmrc')
  writeFileSync(npmrc, `registry=${registry}\n//127.0.0.1:${port}/:_authToken=${token}\nfund=false\naudit=false\nupdate-notifier=false\n`)
  // npm's own settings only from that file (and a fresh cache): none of the repository's or the machine's.
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_(config|package|lifecycle)_/i.test(key)))
  Object.assign(env, { npm_config_userconfig: npmrc, npm_config_globalconfig: join(scratch, 'npmrc-global'), npm_config_cache: join(scratch, 'npm-cache') })
  writeFileSync(join(scratch, 'npmrc-global'), '')
  const npm = (args, cwd, timeoutMs) => run('npm', [...args, '--registry', registry], { cwd, timeoutMs, env })

  // 2. Pack every publishable package, as `npm run pack:all` does.
  const publishStarted = performance.now()
  const tarballs = join(scratch, 'tarballs')
  const packed = packPackages(tarballs, { env, skip: skipped })
  const tsxVersion = JSON.parse(readFileSync(join(repository, 'node_modules/tsx/package.json'), 'utf8')).version
  const results = []

  // 2a. getting-started's tarball install lines, in fresh projects, while no @ludic package is on the registry.
  if (skipped.length === 0 && only.length === 0) {
    const guide = gettingStartedTarballParts()
    for (const [index, line] of guide.lines.entries()) {
      const install = `npm install ${line.join(' ')}`
      const result = { package: `getting-started tarball line ${index + 1}`, version: '-', install, ok: false }
      results.push(result)
      const fail = (why) => {
        result.error = why
        console.log(`FAIL ${result.package} (${install}): ${why}`)
      }
      const problems = tarballLineProblems(line, packed)
      if (problems.length > 0) {
        fail(problems.join('; '))
        continue
      }
      const project = join(scratch, 'projects', `tarball-line-${index + 1}`)
      mkdirSync(project, { recursive: true })
      const initProblem = await initProject(npm, project)
      if (initProblem !== undefined) {
        fail(initProblem)
        continue
      }
      const args = line.map((argument) => (argument.endsWith('.tgz') ? join(tarballs, basename(argument)) : argument))
      const installStarted = performance.now()
      const installed = await npm(['install', ...args, '--no-audit', '--no-fund'], project, 300_000)
      result.installSeconds = seconds(installStarted)
      if (installed.code !== 0) {
        fail(`${install} failed:\n${installed.output.slice(-3000)}`)
        continue
      }
      const size = directorySize(join(project, 'node_modules'))
      Object.assign(result, { installedBytes: size.bytes, installedFiles: size.files, installedPackages: countPackages(join(project, 'node_modules')) })
      if (index < guide.lines.length - 1) {
        result.ok = true
        continue
      }
      const tsx = await npm(['install', '--save-dev', `tsx@${tsxVersion}`, '--no-audit', '--no-fund'], project, 300_000)
      if (tsx.code !== 0) {
        fail(`npm install tsx failed:\n${tsx.output.slice(-3000)}`)
        continue
      }
      writeFileSync(join(project, 'example.ts'), guide.example)
      const exampleStarted = performance.now()
      const example = await run(join(project, 'node_modules/.bin/tsx'), ['example.ts'], { cwd: project, timeoutMs: 300_000, env })
      result.exampleSeconds = seconds(exampleStarted)
      result.exampleOutput = example.output.trim().split('\n').slice(-8).join('\n')
      if (example.code !== 0) fail(`getting-started's example exited with ${example.code}:\n${example.output.slice(-3000)}`)
      else if (!example.output.includes(guide.expect))
        fail(`getting-started's example did not print ${JSON.stringify(guide.expect)}:\n${example.output.slice(-3000)}`)
      else result.ok = true
    }
  }

  // 2b. Publish them.
  const published = {}
  for (const entry of packed) {
    const publish = await npm(['publish', entry.path, '--ignore-scripts', '--access', 'public', '--tag', 'latest'], scratch, 120_000)
    if (publish.code !== 0) throw new Error(`npm publish ${entry.name} failed:\n${publish.output.slice(-3000)}`)
    published[entry.name] = { version: entry.version, files: entry.files, size: entry.size, unpackedSize: entry.unpackedSize }
  }
  const publishSeconds = seconds(publishStarted)
  console.log(`packed and published ${packages.length} packages in ${publishSeconds} s: ${Object.keys(published).join(', ')}`)

  // 3. One fresh project per package, outside the repository.
  for (const pkg of targets) {
    const name = pkg.manifest.name
    const project = join(scratch, 'projects', pkg.folder)
    mkdirSync(project, { recursive: true })
    if (!relative(repository, project).startsWith('..')) throw new Error(`${project} is inside the repository`)
    const result = { package: name, version: published[name].version, install: `npm install ${pkg.parts.install.join(' ')}`, ok: false }
    results.push(result)
    const fail = (why) => {
      result.error = why
      console.log(`FAIL ${name}: ${why}`)
    }
    const initProblem = await initProject(npm, project)
    if (initProblem !== undefined) {
      fail(initProblem)
      continue
    }

    const installStarted = performance.now()
    const install = await npm(['install', ...pkg.parts.install, '--no-audit', '--no-fund'], project, 300_000)
    result.installSeconds = seconds(installStarted)
    if (install.code !== 0) {
      fail(`${result.install} failed:\n${install.output.slice(-3000)}`)
      continue
    }
    const installed = directorySize(join(project, 'node_modules'))
    result.installedBytes = installed.bytes
    result.installedFiles = installed.files
    result.installedPackages = countPackages(join(project, 'node_modules'))
    result.packageFiles = published[name].files
    result.packageUnpackedBytes = published[name].unpackedSize

    // Loading with require (Node ≥ 20.19 can require ES modules without top-level await): recorded, not required.
    const required = await run(process.execPath, ['--input-type=commonjs', '-e', `require(${JSON.stringify(name)})`], { cwd: project, timeoutMs: 60_000, env })
    result.require = required.code === 0 ? 'ok' : (/ERR_[A-Z_]+/.exec(required.output)?.[0] ?? `exit ${required.code}`)

    const tsx = await npm(['install', '--save-dev', `tsx@${tsxVersion}`, '--no-audit', '--no-fund'], project, 300_000)
    if (tsx.code !== 0) {
      fail(`npm install tsx failed:\n${tsx.output.slice(-3000)}`)
      continue
    }
    writeFileSync(join(project, 'example.ts'), pkg.parts.example)
    const exampleStarted = performance.now()
    const example = await run(join(project, 'node_modules/.bin/tsx'), ['example.ts'], { cwd: project, timeoutMs: 300_000, env })
    result.exampleSeconds = seconds(exampleStarted)
    result.exampleOutput = example.output.trim().split('\n').slice(-8).join('\n')
    if (example.code !== 0) fail(`the README example exited with ${example.code}:\n${example.output.slice(-3000)}`)
    else if (!example.output.includes(pkg.parts.expect))
      fail(`the README example did not print ${JSON.stringify(pkg.parts.expect)}:\n${example.output.slice(-3000)}`)
    else result.ok = true
  }

  // 4. Report.
  const rows = [
    ['package', 'install line', 'install s', 'installed', 'files', 'packages', 'own files', 'own unpacked', 'require', 'example'],
    ...results.map((result) => [
      result.package,
      result.install.replace(/^npm install /, ''),
      String(result.installSeconds ?? '-'),
      result.installedBytes === undefined ? '-' : formatBytes(result.installedBytes),
      String(result.installedFiles ?? '-'),
      String(result.installedPackages ?? '-'),
      String(result.packageFiles ?? '-'),
      result.packageUnpackedBytes === undefined ? '-' : formatBytes(result.packageUnpackedBytes),
      result.require ?? '-',
      result.ok ? (result.exampleSeconds === undefined ? 'installed' : `ok (${result.exampleSeconds} s)`) : 'FAILED',
    ]),
  ]
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)))
  console.log('')
  for (const [index, row] of rows.entries()) {
    console.log(row.map((cell, column) => cell.padEnd(widths[column])).join('  '))
    if (index === 0) console.log(widths.map((width) => '-'.repeat(width)).join('  '))
  }
  const failed = results.filter((result) => !result.ok).length
  const report = {
    node: process.version,
    registry: 'verdaccio (loopback)',
    uplink,
    seconds: { verdaccioStart: startSeconds, publish: publishSeconds, total: seconds(started) },
    published,
    results,
  }
  mkdirSync(join(repository, '.ci-results'), { recursive: true })
  writeFileSync(join(repository, '.ci-results/registry-test.json'), `${JSON.stringify(report, null, 2)}\n`)
  console.log(
    `\nregistry test: ${packages.length} packages packed and published in ${publishSeconds} s; ${results.length - failed} of ${results.length} projects installed and ran their example (each package's README line alone, from the registry; getting-started's tarball lines before publishing) (${seconds(started)} s in all)`,
  )
  return failed === 0
}

let ok = false
try {
  ok = await main()
} catch (error) {
  console.error(`registry test failed: ${error?.stack ?? error}`)
}
if (keep) console.log(`kept ${scratch}`)
process.exit(ok ? 0 : 1)
