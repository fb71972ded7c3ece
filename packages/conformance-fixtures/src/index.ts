/**
 * Reference fixtures for conformance tests: inputs, parameters and the outputs (or errors) that verl and
 * TRL produced for them, in data/ (converted from the reference fixture set by scripts/import-fixtures.mjs).
 * Test-only and private: a fixture that is missing or incomplete throws, it never turns into a skip.
 */
import { existsSync, readFileSync } from 'node:fs'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { fixtureNames, type FixtureName } from './fixture-names.js'

export { fixtureNames, type FixtureName }

export interface ConformanceCase<Inputs = Record<string, unknown>, Params = Record<string, unknown>, Outputs = Record<string, unknown>> {
  /** `<function>#<n>`. */
  id: string
  inputs: Inputs
  params: Params
  tags?: string[]
  /** Set on cases computed in another dtype than the file's (TRL alpha-divergence: float32). */
  dtype?: string
  /** Exactly one of outputs and error: error when upstream raised for these inputs. */
  outputs?: Outputs
  error?: { type: string; message: string }
}

export interface ConformanceFixture<Inputs = Record<string, unknown>, Params = Record<string, unknown>, Outputs = Record<string, unknown>> {
  /** The name it was loaded by, e.g. `verl/agg_loss`. */
  name: FixtureName
  /** Absolute path of the data file. */
  path: string
  /** The upstream function, e.g. `compute_gae_advantage_return`. */
  function: string
  source: { repo: string; commit: string; path: string }
  verl_commit?: string
  trl_commit?: string
  dtype: string
  policy_loss_name?: string
  num_cases: number
  cases: ConformanceCase<Inputs, Params, Outputs>[]
}

export interface FixtureIndexEntry {
  name: string
  file: string
  function: string
  num_cases: number
  num_error_cases: number
}

export interface FixtureIndex {
  verl_commit: string
  trl_commit: string
  files: FixtureIndexEntry[]
}

/** The package's data directory. */
export const fixturesDirectory: URL = new URL('../data/', import.meta.url)

export class ConformanceFixtureError extends Error {
  override name = 'ConformanceFixtureError'
}

function directoryUrl(directory: string | URL | undefined): URL {
  if (directory === undefined) return fixturesDirectory
  const url = typeof directory === 'string' ? pathToFileURL(directory) : directory
  return url.href.endsWith('/') ? url : new URL(`${url.href}/`)
}

function readJson(url: URL, what: string): unknown {
  const path = fileURLToPath(url)
  if (!existsSync(path)) {
    throw new ConformanceFixtureError(`${what} not found: ${path} (regenerate data/ with packages/conformance-fixtures/scripts/import-fixtures.mjs)`)
  }
  try {
    return JSON.parse(readFileSync(path, 'utf8'))
  } catch (error) {
    throw new ConformanceFixtureError(`${what} ${path} is not valid JSON: ${(error as Error).message}`)
  }
}

/** data/index.json: every fixture file with its case counts. */
export function loadFixtureIndex(options: { directory?: string | URL } = {}): FixtureIndex {
  const url = new URL('index.json', directoryUrl(options.directory))
  const index = readJson(url, 'conformance fixture index') as FixtureIndex
  if (!Array.isArray(index.files) || index.files.length === 0)
    throw new ConformanceFixtureError(`conformance fixture index ${fileURLToPath(url)} lists no files`)
  return index
}

/**
 * The fixture `name` (e.g. `verl/compute_gae_advantage_return`, `trl/dpo_losses`), checked against the
 * index: the file must exist, name the indexed function and hold exactly the indexed number of cases
 * (and of error cases), each with an id, inputs, params and exactly one of outputs and error. Throws a
 * `ConformanceFixtureError` naming the file otherwise; never returns an empty fixture.
 * The type parameters describe `inputs`, `params` and `outputs`; they are not checked at run time.
 */
export function loadConformanceFixture<Inputs = Record<string, unknown>, Params = Record<string, unknown>, Outputs = Record<string, unknown>>(
  name: FixtureName,
  options: { directory?: string | URL } = {},
): ConformanceFixture<Inputs, Params, Outputs> {
  const directory = directoryUrl(options.directory)
  const index = loadFixtureIndex({ directory })
  const entry = index.files.find((file) => file.name === name)
  const url = new URL(`${name}.json`, directory)
  const path = fileURLToPath(url)
  if (entry === undefined)
    throw new ConformanceFixtureError(`conformance fixture ${name} (${path}) is not in the index ${fileURLToPath(new URL('index.json', directory))}`)
  const fixture = readJson(url, `conformance fixture ${name}`) as Omit<ConformanceFixture<Inputs, Params, Outputs>, 'name' | 'path'>
  const problem = (message: string) => new ConformanceFixtureError(`conformance fixture ${name} (${path}): ${message}`)
  if (!Array.isArray(fixture.cases)) throw problem('no cases array')
  if (fixture.function !== entry.function) throw problem(`function ${fixture.function}, the index says ${entry.function}`)
  if (fixture.cases.length !== entry.num_cases || fixture.num_cases !== entry.num_cases) {
    throw problem(`${fixture.cases.length} cases (num_cases ${fixture.num_cases}), the index says ${entry.num_cases}`)
  }
  if (entry.num_cases === 0) throw problem('the index lists no cases')
  fixture.cases.forEach((testCase, position) => {
    if (typeof testCase.id !== 'string' || typeof testCase.inputs !== 'object' || typeof testCase.params !== 'object') {
      throw problem(`case ${position} lacks an id, inputs or params`)
    }
    if ((testCase.outputs === undefined) === (testCase.error === undefined)) throw problem(`case ${testCase.id} needs exactly one of outputs and error`)
  })
  const errors = fixture.cases.filter((testCase) => testCase.error !== undefined).length
  if (errors !== entry.num_error_cases) throw problem(`${errors} error cases, the index says ${entry.num_error_cases}`)
  return { name, path, ...fixture }
}
