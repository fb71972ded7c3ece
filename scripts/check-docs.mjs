#!/usr/bin/env node
// Checks that the documentation agrees with the code and with itself where that can be checked mechanically:
//   1. Figures of an example's run (exploitability, win rates, invalid moves, accuracy…) quoted in README.md or
//      docs/*.md come from a report committed in the example: the paragraph, list item or table that quotes them is
//      marked `<!-- figures: examples/<name>/<report>.json -->` (its first line), the report is tracked by git,
//      and every number of the block is in the report (at the precision written; a percentage also matches its
//      fraction). An unmarked sentence that quotes a run's outcome — a metric with a before → after figure, or a
//      metric and a figure said to be measured or reached — is an error: mark it with its report or take the figure
//      out (an example's own README keeps its measured runs; guides link to it). Figures of a benchmark suite
//      (a block naming `npm run bench` or `ludic bench`) are the suite's, not an example's run, and are not checked.
//   2. A run config's own quick try (a comment `# A quick try: \`<command>\``) is the command every README and guide
//      gives for a quick try of that config (a `ludic train <config> … --steps` line).
//   3. README.md's examples table lists every example (examples/<name>/package.json) and nothing else, its packages
//      table every publishable package, and docs/README.md's table every guide of docs/.
// Usage: node scripts/check-docs.mjs   (npm run check:docs; CI runs it after the snippets check)
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const repository = fileURLToPath(new URL('..', import.meta.url))
const read = (path) => readFileSync(join(repository, path), 'utf8')
const markdownUnder = (folder) =>
  readdirSync(join(repository, folder))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `${folder}/${name}`)
const folderReadmes = (parent) =>
  readdirSync(join(repository, parent), { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && existsSync(join(repository, parent, entry.name, 'README.md')))
    .map((entry) => `${parent}/${entry.name}/README.md`)
const examples = readdirSync(join(repository, 'examples'), { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && existsSync(join(repository, 'examples', entry.name, 'package.json')))
  .map((entry) => entry.name)
const tracked = new Set(execFileSync('git', ['ls-files'], { cwd: repository, encoding: 'utf8' }).split('\n'))

/**
 * The blocks of a Markdown file (paragraphs, lists, tables: runs of lines between blank lines; code blocks blanked
 * out), each with its first line and the report its opening `<!-- figures: … -->` line names, if any.
 */
function blocks(text) {
  const lines = text.replace(/```[\s\S]*?```/g, (code) => code.replace(/[^\n]/g, '')).split('\n')
  const result = []
  for (let index = 0; index < lines.length; index++) {
    if (lines[index].trim() === '') continue
    const first = index
    while (index + 1 < lines.length && lines[index + 1].trim() !== '') index++
    const body = lines.slice(first, index + 1)
    const marker = /^\s*<!--\s*figures:\s*(\S+)\s*-->\s*$/.exec(body[0])
    result.push({ line: first + 1, report: marker?.[1], text: (marker === null ? body : body.slice(1)).join('\n') })
  }
  return result
}

const metric = String.raw`\b(?:exploitability|win[- ]rates?|invalid[- ]moves?|invalid[- ]rate|accuracy|pass@\d+|distinct correct solutions|rating)\b`
const figure = String.raw`\**[-−+]?\d+(?:\.\d+)?\s*%?\**`
/** A metric and, in the same sentence, a before → after pair (`exploitability 0.43 → 0.08`, `win rate **27% → 68%**`). */
const beforeAfter = new RegExp(`${metric}.*?${figure}\\s*(?:→|->)\\s*${figure}`, 'i')
/** A metric followed by its figure (`exploitability ≤ 0.10`, `invalid moves 1.1%`) in a sentence that says it was measured. */
const metricFigure = new RegExp(`${metric}\\W{0,3}(?:of |at |under |below |≤ |< )?${figure}`, 'i')
const measured = /\b(measured|re-measured|reached|gave|gives|took)\b/i
const number = /[-−]?\d+(?:\.\d+)?%?/g

/** The sentences (table rows, list items) of a block that quote a run's outcome. */
function runFigureSentences(text) {
  return text
    .split(/\n(?=\s*(?:\||[-*]\s|\d+\.\s))|(?<=[.;])\s+(?=[A-Z(`*])/)
    .filter((sentence) => beforeAfter.test(sentence) || (metricFigure.test(sentence) && measured.test(sentence)))
}

/** Every number in a JSON value. */
function reportNumbers(value, into = []) {
  if (typeof value === 'number') into.push(value)
  else if (Array.isArray(value)) for (const item of value) reportNumbers(item, into)
  else if (value !== null && typeof value === 'object') for (const item of Object.values(value)) reportNumbers(item, into)
  return into
}

/** Whether a number written in the docs (`0.43`, `27%`, `−0.1`) is one of the report's, at the precision written. */
function inReport(written, numbers) {
  const percent = written.endsWith('%')
  const digits = written.replace('%', '').replace('−', '-')
  const decimals = digits.includes('.') ? digits.split('.')[1].length : 0
  const value = Number(digits)
  const half = 0.5 * 10 ** -decimals
  const candidates = percent ? numbers.flatMap((number) => [number, 100 * number]) : numbers
  return candidates.some((number) => Math.abs(number - value) <= half + 1e-12)
}

const problems = []

// 1. Run figures in the README and the guides.
for (const file of ['README.md', ...markdownUnder('docs')]) {
  for (const block of blocks(read(file))) {
    if (block.report !== undefined) {
      const report = block.report
      if (!tracked.has(report)) {
        problems.push(`${file}:${block.line}: its figures name ${report}, which is not a committed file`)
        continue
      }
      const numbers = reportNumbers(JSON.parse(read(report)))
      for (const written of block.text.replace(/\[[^\]]*\]\([^)]*\)/g, '').match(number) ?? []) {
        if (!inReport(written, numbers)) problems.push(`${file}:${block.line}: ${written} is not in ${report}`)
      }
      continue
    }
    if (/npm run bench|ludic bench/.test(block.text)) continue
    for (const sentence of runFigureSentences(block.text)) {
      problems.push(
        `${file}:${block.line}: a figure of a run with no committed report (mark the block with <!-- figures: examples/<name>/<report>.json --> or take the figure out): ${sentence.replace(/\s+/g, ' ').slice(0, 200)}`,
      )
    }
  }
}

// 2. Quick tries of run configs.
const documents = ['README.md', ...markdownUnder('docs'), ...folderReadmes('packages'), ...folderReadmes('examples')]
const configs = examples.flatMap((name) =>
  readdirSync(join(repository, 'examples', name))
    .filter((file) => /\.ya?ml$/.test(file))
    .map((file) => `examples/${name}/${file}`),
)
const normalise = (command) => command.replace(/\s+/g, ' ').trim()
for (const config of configs) {
  const own = /^#\s*A quick try:\s*`([^`]+)`/m.exec(read(config))?.[1]
  for (const file of documents) {
    for (const [index, line] of read(file).split('\n').entries()) {
      // (A line that is a comment is a copy of the config's own comment, in a block that shows the file.)
      if (!line.includes(`ludic train ${config}`) || !line.includes('--steps') || line.trim().startsWith('#')) continue
      const command = normalise(
        line
          .replace(/#.*$/, '')
          .replace(/^[-*>\s]*/, '')
          .replace(/^`|`$/g, ''),
      )
      if (own === undefined) problems.push(`${file}:${index + 1}: a quick try of ${config}, which has no "# A quick try: \`…\`" comment to agree with`)
      else if (command !== normalise(own)) problems.push(`${file}:${index + 1}: the quick try \`${command}\` is not ${config}'s own: \`${normalise(own)}\``)
    }
  }
}

// 3. The tables that list everything: README.md's examples and packages, docs/README.md's guides.
/** The first table after a heading (or the file's first table), as the link targets of its rows. */
function tableLinks(text, heading, pattern) {
  const from = heading === undefined ? 0 : text.indexOf(`\n${heading}\n`)
  const table = from < 0 ? '' : (/(?:^|\n)(\|[\s\S]*?)(?:\n\n|$)/.exec(text.slice(from))?.[1] ?? '')
  return [...table.matchAll(pattern)].map((match) => match[1])
}
const readme = read('README.md')
const listedExamples = tableLinks(readme, '## Examples', /\]\(examples\/([\w-]+)\)/g)
for (const name of examples) if (!listedExamples.includes(name)) problems.push(`README.md: the examples table does not list examples/${name}`)
for (const name of listedExamples) if (!examples.includes(name)) problems.push(`README.md: the examples table lists examples/${name}, which is not an example`)
const publishable = readdirSync(join(repository, 'packages'), { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && existsSync(join(repository, 'packages', entry.name, 'package.json')))
  .filter((entry) => JSON.parse(read(`packages/${entry.name}/package.json`)).private !== true)
  .map((entry) => entry.name)
const listedPackages = tableLinks(readme, '## Packages', /\]\(packages\/([\w-]+)\)/g)
for (const name of publishable) if (!listedPackages.includes(name)) problems.push(`README.md: the packages table does not list packages/${name}`)
const guides = markdownUnder('docs').filter((file) => file !== 'docs/README.md')
const listedGuides = tableLinks(read('docs/README.md'), undefined, /\]\(([\w-]+\.md)\)/g).map((name) => `docs/${name}`)
for (const guide of guides) if (!listedGuides.includes(guide)) problems.push(`docs/README.md: the guides table does not list ${guide}`)

for (const problem of problems) console.log(problem)
console.log(
  problems.length === 0
    ? `documentation checks: run figures in README.md and docs/, quick tries of ${configs.length} run configs, the tables of ${examples.length} examples, ${publishable.length} packages and ${guides.length} guides: ok`
    : `documentation checks: ${problems.length} problem(s)`,
)
process.exit(problems.length === 0 ? 0 : 1)
