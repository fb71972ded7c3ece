#!/usr/bin/env node
/**
 * Type-checks every TypeScript block (```ts, ```typescript) of the user-facing Markdown: README.md,
 * docs/**\/*.md, packages/*\/README.md and examples/*\/README.md. Each block becomes one module in
 * `.snippets/` inside the repository, so `@ludic/*` imports resolve through the npm workspaces to the
 * packages' built types (run `npm run build` first), and all of them go through one strict `tsc --noEmit`
 * (NodeNext, as a user's ESM project compiles them). Errors are printed as `file.md:line:column`.
 *
 * A comment on the line before a block changes what is done with it:
 * - `<!-- snippet: skip (why) -->`: not checked (a fragment on purpose); the reasons are printed.
 * - `<!-- snippet: file path/to/file.ts -->`: the block (of any language) must equal that file (relative to the
 *   repository root), which its workspace type-checks and tests; the block is not compiled here.
 *
 * Usage: `node scripts/check-snippets.mjs [--keep]` (`--keep` leaves `.snippets/` for inspection).
 * Exits 1 on any error.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const outDir = join(root, '.snippets')
const keep = process.argv.includes('--keep')

/** The Markdown files whose blocks are checked, relative to the root, sorted. */
function markdownFiles() {
  const files = []
  if (existsSync(join(root, 'README.md'))) files.push('README.md')
  const walk = (directory) => {
    for (const entry of readdirSync(join(root, directory), { withFileTypes: true })) {
      const path = `${directory}/${entry.name}`
      if (entry.isDirectory()) walk(path)
      else if (entry.name.endsWith('.md')) files.push(path)
    }
  }
  if (existsSync(join(root, 'docs'))) walk('docs')
  for (const parent of ['packages', 'examples']) {
    if (!existsSync(join(root, parent))) continue
    for (const entry of readdirSync(join(root, parent), { withFileTypes: true })) {
      if (entry.isDirectory() && existsSync(join(root, parent, entry.name, 'README.md'))) files.push(`${parent}/${entry.name}/README.md`)
    }
  }
  return files.sort()
}

const fenceOpen = /^( {0,3})(`{3,}|~{3,})\s*([\w+-]*)(.*)$/
const directive = /^\s*<!--\s*snippet:\s*(skip|file)\b\s*(.*?)\s*-->\s*$/

/** The fenced blocks of a Markdown text: language, code, the 1-based line of the opening fence, the directive before it. */
function blocksOf(text) {
  const lines = text.split(/\r?\n/)
  const blocks = []
  for (let index = 0; index < lines.length; index++) {
    const open = fenceOpen.exec(lines[index])
    if (open === null) continue
    const [, indent, fence, language] = open
    const body = []
    let end = index + 1
    for (; end < lines.length; end++) {
      const line = lines[end]
      if (line.trimStart().startsWith(fence[0].repeat(fence.length)) && line.trim().replaceAll(fence[0], '') === '') break
      body.push(line.startsWith(indent) ? line.slice(indent.length) : line.trimStart())
    }
    let previous = index - 1
    while (previous >= 0 && lines[previous].trim() === '') previous--
    const marker = previous >= 0 ? directive.exec(lines[previous]) : null
    blocks.push({
      language: language.toLowerCase(),
      code: body.join('\n'),
      line: index + 1,
      directive: marker === null ? undefined : { kind: marker[1], argument: marker[2].replace(/^\((.*)\)$/, '$1') },
    })
    index = end
  }
  return blocks
}

const checked = []
const skipped = []
const identical = []
const problems = []

rmSync(outDir, { recursive: true, force: true })
mkdirSync(outDir, { recursive: true })

for (const file of markdownFiles()) {
  // TypeScript blocks are compiled; a block of any language marked `snippet: file` is compared with its file.
  const blocks = blocksOf(readFileSync(join(root, file), 'utf8')).filter(
    (block) => block.language === 'ts' || block.language === 'typescript' || block.directive?.kind === 'file',
  )
  blocks.forEach((block, index) => {
    const where = `${file}:${block.line}`
    if (block.directive?.kind === 'skip') {
      if (block.directive.argument === '') problems.push(`${where}: error: a skipped block must say why: <!-- snippet: skip (reason) -->`)
      skipped.push({ where, reason: block.directive.argument })
      return
    }
    if (block.directive?.kind === 'file') {
      const target = block.directive.argument
      const path = join(root, target)
      if (target === '' || !existsSync(path)) {
        problems.push(`${where}: error: <!-- snippet: file ${target} --> names no file`)
      } else if (readFileSync(path, 'utf8').replace(/\s+$/, '') !== block.code.replace(/\s+$/, '')) {
        const fileLines = readFileSync(path, 'utf8').replace(/\s+$/, '').split('\n')
        const blockLines = block.code.replace(/\s+$/, '').split('\n')
        let first = 0
        while (first < Math.max(fileLines.length, blockLines.length) && fileLines[first] === blockLines[first]) first++
        problems.push(
          `${file}:${block.line + 1 + first}: error: the block differs from ${target} at its line ${first + 1}:\n` +
            `  block: ${blockLines[first] ?? '(ends)'}\n  file:  ${fileLines[first] ?? '(ends)'}`,
        )
      }
      identical.push({ where, target })
      return
    }
    const name = `${file.replace(/\.md$/, '').replaceAll(/[^\w-]+/g, '_')}-${index + 1}.ts`
    // One module per block: a trailing `export {}` makes a block without imports a module too (own scope, top-level await).
    writeFileSync(join(outDir, name), `${block.code}\nexport {}\n`)
    checked.push({ name, file, line: block.line })
  })
}

writeFileSync(
  join(outDir, 'tsconfig.json'),
  `${JSON.stringify(
    {
      compilerOptions: {
        target: 'ES2022',
        lib: ['ES2023'],
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        types: ['node'],
        strict: true,
        noUncheckedIndexedAccess: true,
        exactOptionalPropertyTypes: true,
        noImplicitOverride: true,
        isolatedModules: true,
        verbatimModuleSyntax: true,
        esModuleInterop: true,
        resolveJsonModule: true,
        skipLibCheck: true,
        noEmit: true,
      },
      include: ['*.ts'],
    },
    null,
    2,
  )}\n`,
)
// The repository's package.json says "type": "module", so the blocks are ES modules (top-level await allowed).

let tscOutput = ''
if (checked.length > 0) {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
  const result = spawnSync(process.execPath, [tsc, '-p', join(outDir, 'tsconfig.json'), '--pretty', 'false'], { cwd: root, encoding: 'utf8' })
  tscOutput = `${result.stdout}${result.stderr}`
  if (result.status !== 0 && tscOutput.trim() === '') problems.push(`tsc exited with ${result.status} and no output`)
}

// `.snippets/<name>.ts(line,column): error TS…: message`, continuation lines indented; map back to the Markdown.
const byName = new Map(checked.map((block) => [block.name, block]))
let typeErrors = 0
for (const line of tscOutput.split('\n')) {
  if (line.trim() === '') continue
  const match = /^(.*?)\((\d+),(\d+)\): (error|warning) (TS\d+): (.*)$/.exec(line)
  if (match === null) {
    if (problems.length > 0 && /^\s/.test(line)) problems[problems.length - 1] += `\n${line}`
    else problems.push(line)
    continue
  }
  const [, path, row, column, , code, message] = match
  const block = byName.get(relative(outDir, join(root, path)))
  typeErrors++
  problems.push(block === undefined ? line : `${block.file}:${block.line + Number(row)}:${column}: ${code}: ${message}`)
}

if (!keep) rmSync(outDir, { recursive: true, force: true })

for (const problem of problems) console.error(problem)
if (skipped.length > 0) {
  console.log(`${skipped.length} block(s) skipped on purpose:`)
  for (const { where, reason } of skipped) console.log(`  ${where}: ${reason}`)
}
console.log(
  `snippets: ${checked.length} type-checked, ${identical.length} compared with their files, ${skipped.length} skipped; ` +
    `${problems.length === 0 ? 'no errors' : `${problems.length} error(s)${typeErrors > 0 ? ` (${typeErrors} from tsc)` : ''}`}`,
)
process.exit(problems.length === 0 ? 0 : 1)
