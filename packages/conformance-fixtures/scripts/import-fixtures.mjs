#!/usr/bin/env node
/**
 * Converts the reference fixtures of ../shared/fixtures (verl and TRL outputs on random inputs; see that
 * directory's README) into this package's data/: only the numbers and identifiers the tests need.
 *
 *   node packages/conformance-fixtures/scripts/import-fixtures.mjs [source directory]
 *
 * Kept per file: function, source, verl_commit / trl_commit, dtype, policy_loss_name, num_cases and the
 * cases ({ id, inputs, params, tags, dtype, outputs | error }). Dropped: the prose (semantics,
 * conventions, *_schema). Writes data/index.json (file list with case counts), data/<verl|trl>/*.json and
 * src/fixture-names.ts, then reads every written file back and checks that it equals the source exactly
 * (every number the same double, -0 included).
 */
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const packageDirectory = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const source = resolve(process.argv[2] ?? join(packageDirectory, '../../../shared/fixtures'))
const dataDirectory = join(packageDirectory, 'data')

const fileKeys = ['function', 'source', 'verl_commit', 'trl_commit', 'dtype', 'policy_loss_name', 'num_cases']
const caseKeys = ['id', 'inputs', 'params', 'tags', 'dtype', 'outputs', 'error']
const droppedFileKeys = (key) => key === 'semantics' || key === 'conventions' || key.endsWith('_schema')

function fail(message) {
  console.error(`import-fixtures: ${message}`)
  process.exit(1)
}

function readJson(path) {
  try {
    return JSON.parse(readFileSync(path, 'utf8'))
  } catch (error) {
    fail(`cannot read ${path}: ${error.message}`)
  }
}

function pick(object, keys) {
  const result = {}
  for (const key of keys) if (object[key] !== undefined) result[key] = object[key]
  return result
}

/** JSON.stringify, except that -0 stays -0 (JSON.stringify writes 0) and non-finite numbers are refused. */
function stringify(value) {
  return JSON.stringify(value, (key, item) => {
    if (typeof item === 'number' && !Number.isFinite(item)) throw new Error(`non-finite number at ${key}`)
    return item
  }).replace(/"__negative_zero__"/g, '-0')
}

function markNegativeZeros(value) {
  if (Object.is(value, -0)) return '__negative_zero__'
  if (Array.isArray(value)) return value.map(markNegativeZeros)
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, markNegativeZeros(item)]))
  return value
}

/** One case per line: compact, and a diff shows which cases changed. */
function serialize(fixture) {
  const { cases, ...header } = fixture
  const head = stringify(markNegativeZeros(header)).slice(0, -1)
  const lines = cases.map((testCase) => stringify(markNegativeZeros(testCase)))
  return `${head},"cases":[\n${lines.join(',\n')}\n]}\n`
}

function sameExactly(a, b, path) {
  if (typeof a === 'number' || typeof b === 'number') {
    if (!Object.is(a, b)) fail(`round trip changed ${path}: ${a} -> ${b}`)
    return
  }
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) fail(`round trip changed ${path}`)
    a.forEach((item, index) => sameExactly(item, b[index], `${path}[${index}]`))
    return
  }
  if (a !== null && typeof a === 'object') {
    if (b === null || typeof b !== 'object' || Object.keys(a).join() !== Object.keys(b).join()) fail(`round trip changed ${path}`)
    for (const key of Object.keys(a)) sameExactly(a[key], b[key], `${path}.${key}`)
    return
  }
  if (a !== b) fail(`round trip changed ${path}: ${a} -> ${b}`)
}

const index = readJson(join(source, 'index.json'))
if (!Array.isArray(index.files) || index.files.length === 0) fail(`${source}/index.json lists no files`)

rmSync(dataDirectory, { recursive: true, force: true })
const names = []
const indexEntries = []
for (const entry of index.files) {
  if (!/^(verl|trl)\/[a-z0-9_]+\.json$/.test(entry.file)) fail(`unexpected file name in the index: ${entry.file}`)
  const original = readJson(join(source, entry.file))
  const unknown = Object.keys(original).filter((key) => !fileKeys.includes(key) && key !== 'cases' && !droppedFileKeys(key))
  if (unknown.length > 0) fail(`${entry.file}: unknown top-level fields ${unknown.join(', ')} (keep or drop them explicitly)`)
  if (original.function !== entry.function) fail(`${entry.file}: function ${original.function}, index says ${entry.function}`)
  if (!Array.isArray(original.cases) || original.cases.length !== entry.num_cases || original.num_cases !== entry.num_cases) {
    fail(`${entry.file}: ${original.cases?.length} cases (num_cases ${original.num_cases}), index says ${entry.num_cases}`)
  }
  const cases = original.cases.map((testCase) => {
    const unknownCaseKeys = Object.keys(testCase).filter((key) => !caseKeys.includes(key))
    if (unknownCaseKeys.length > 0) fail(`${entry.file} ${testCase.id}: unknown case fields ${unknownCaseKeys.join(', ')}`)
    if ((testCase.outputs === undefined) === (testCase.error === undefined)) fail(`${entry.file} ${testCase.id}: needs exactly one of outputs and error`)
    return pick(testCase, caseKeys)
  })
  const errors = cases.filter((testCase) => testCase.error !== undefined).length
  if (entry.num_error_cases !== undefined && errors !== entry.num_error_cases) fail(`${entry.file}: ${errors} error cases, index says ${entry.num_error_cases}`)
  const converted = { ...pick(original, fileKeys), cases }
  const target = join(dataDirectory, entry.file)
  mkdirSync(dirname(target), { recursive: true })
  writeFileSync(target, serialize(converted))
  sameExactly(converted, JSON.parse(readFileSync(target, 'utf8')), entry.file)
  for (const [key, value] of Object.entries(converted)) if (key !== 'cases') sameExactly(original[key], value, `${entry.file}.${key}`)
  original.cases.forEach((testCase, position) => {
    for (const key of caseKeys) sameExactly(testCase[key] ?? null, cases[position][key] ?? null, `${entry.file}#${position}.${key}`)
  })
  const name = entry.file.replace(/\.json$/, '')
  names.push(name)
  indexEntries.push({ name, file: entry.file, function: entry.function, num_cases: entry.num_cases, num_error_cases: errors })
}

const sourceFiles = ['verl', 'trl'].flatMap((directory) => readdirSync(join(source, directory)).map((file) => `${directory}/${file}`))
const notIndexed = sourceFiles.filter((file) => !index.files.some((entry) => entry.file === file))
if (notIndexed.length > 0) fail(`files not in the index: ${notIndexed.join(', ')}`)

writeFileSync(
  join(dataDirectory, 'index.json'),
  `${JSON.stringify({ verl_commit: index.verl_commit, trl_commit: index.trl_commit, files: indexEntries }, null, 1)}\n`,
)
writeFileSync(
  join(packageDirectory, 'src/fixture-names.ts'),
  `// Generated by scripts/import-fixtures.mjs from data/index.json: do not edit.\n\n` +
    `/** Every fixture in data/, as \`<upstream>/<file name without .json>\`. */\n` +
    `export const fixtureNames = [\n${names.map((name) => `  '${name}',`).join('\n')}\n] as const\n\n` +
    `export type FixtureName = (typeof fixtureNames)[number]\n`,
)
console.log(
  `import-fixtures: ${names.length} files, ${indexEntries.reduce((total, entry) => total + entry.num_cases, 0)} cases from ${source} -> ${dataDirectory}`,
)
