import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { ConformanceFixtureError, fixtureNames, fixturesDirectory, loadConformanceFixture, loadFixtureIndex } from './index.js'

const data = fileURLToPath(fixturesDirectory)

describe('the fixtures in data/', () => {
  it('index and generated names agree, and every file loads with the indexed counts', () => {
    const index = loadFixtureIndex()
    expect(index.files.map((entry) => entry.name)).toEqual([...fixtureNames])
    expect(index.files.length).toBe(25)
    let total = 0
    for (const name of fixtureNames) {
      const fixture = loadConformanceFixture(name)
      const entry = index.files.find((file) => file.name === name)!
      expect(fixture.cases.length, name).toBe(entry.num_cases)
      expect(fixture.cases.length, name).toBeGreaterThan(0)
      expect(fixture.source.commit, name).toBe(name.startsWith('verl/') ? index.verl_commit : index.trl_commit)
      total += fixture.cases.length
    }
    expect(total).toBe(929)
  })

  it('keeps only numbers and identifiers: no prose fields', () => {
    for (const name of fixtureNames) {
      const raw = JSON.parse(readFileSync(join(data, `${name}.json`), 'utf8')) as Record<string, unknown>
      expect(
        Object.keys(raw).filter((key) => key === 'semantics' || key === 'conventions' || key.endsWith('_schema')),
        name,
      ).toEqual([])
    }
  })
})

describe('loadConformanceFixture fails loudly', () => {
  let directory: string | undefined
  afterEach(() => {
    if (directory !== undefined) rmSync(directory, { recursive: true, force: true, maxRetries: 5 })
    directory = undefined
  })

  function copyOfData(): string {
    directory = mkdtempSync(join(tmpdir(), 'ludic-fixtures-'))
    mkdirSync(join(directory, 'verl'))
    copyFileSync(join(data, 'index.json'), join(directory, 'index.json'))
    copyFileSync(join(data, 'verl/agg_loss.json'), join(directory, 'verl/agg_loss.json'))
    return directory
  }

  it('loads from another directory when everything is there', () => {
    const fixture = loadConformanceFixture('verl/agg_loss', { directory: copyOfData() })
    expect(fixture.cases.length).toBe(24)
    expect(fixture.path).toBe(join(directory!, 'verl/agg_loss.json'))
  })

  it('throws, naming the file, when a fixture file is missing', () => {
    const root = copyOfData()
    expect(() => loadConformanceFixture('verl/kl_penalty', { directory: root })).toThrow(ConformanceFixtureError)
    expect(() => loadConformanceFixture('verl/kl_penalty', { directory: root })).toThrow(`not found: ${join(root, 'verl/kl_penalty.json')}`)
  })

  it('throws when the index is missing', () => {
    const root = copyOfData()
    rmSync(join(root, 'index.json'))
    expect(() => loadConformanceFixture('verl/agg_loss', { directory: root })).toThrow(`conformance fixture index not found: ${join(root, 'index.json')}`)
  })

  it('throws when the case count disagrees with the index', () => {
    const root = copyOfData()
    const path = join(root, 'verl/agg_loss.json')
    const fixture = JSON.parse(readFileSync(path, 'utf8')) as { cases: unknown[] }
    fixture.cases.pop()
    writeFileSync(path, JSON.stringify(fixture))
    expect(() => loadConformanceFixture('verl/agg_loss', { directory: root })).toThrow(
      `conformance fixture verl/agg_loss (${path}): 23 cases (num_cases 24), the index says 24`,
    )
  })

  it('throws when the file is empty of cases or the index lists another count', () => {
    const root = copyOfData()
    const indexPath = join(root, 'index.json')
    const index = JSON.parse(readFileSync(indexPath, 'utf8')) as { files: { name: string; num_cases: number }[] }
    index.files.find((entry) => entry.name === 'verl/agg_loss')!.num_cases = 25
    writeFileSync(indexPath, JSON.stringify(index))
    expect(() => loadConformanceFixture('verl/agg_loss', { directory: root })).toThrow(/24 cases \(num_cases 24\), the index says 25/)
    const path = join(root, 'verl/agg_loss.json')
    writeFileSync(path, JSON.stringify({ function: 'agg_loss', num_cases: 0, cases: [] }))
    expect(() => loadConformanceFixture('verl/agg_loss', { directory: root })).toThrow(/0 cases/)
  })

  it('throws when a case has neither outputs nor error, or the error count is off', () => {
    const root = copyOfData()
    const path = join(root, 'verl/agg_loss.json')
    const fixture = JSON.parse(readFileSync(path, 'utf8')) as { cases: { id: string; outputs?: unknown; error?: unknown }[] }
    const withOutputs = fixture.cases.find((testCase) => testCase.outputs !== undefined)!
    delete withOutputs.outputs
    writeFileSync(path, JSON.stringify(fixture))
    expect(() => loadConformanceFixture('verl/agg_loss', { directory: root })).toThrow(`case ${withOutputs.id} needs exactly one of outputs and error`)
    withOutputs.error = { type: 'ValueError', message: 'made up' }
    writeFileSync(path, JSON.stringify(fixture))
    expect(() => loadConformanceFixture('verl/agg_loss', { directory: root })).toThrow(/error cases, the index says/)
  })

  it('throws for a name that is not in the index', () => {
    expect(() => loadConformanceFixture('verl/no_such_function' as never)).toThrow(/verl\/no_such_function .* is not in the index/)
  })
})
