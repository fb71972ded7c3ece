import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { InvalidArgumentError } from '@ludic/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  evaluationMetrics,
  loggedEvaluations,
  makeRunDirectory,
  markdownPage,
  markdownTable,
  runReport,
  writeReportFiles,
  type LoggedMetrics,
} from './run-report.js'

let directory: string
beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'ludic-run-report-'))
})
afterAll(async () => {
  await rm(directory, { recursive: true, force: true, maxRetries: 5 })
})

describe('makeRunDirectory', () => {
  it('makes runs/<timestamp> in the example folder, or the directory given', async () => {
    const made = await makeRunDirectory(pathToFileURL(`${directory}/`))
    expect(made).toMatch(/[/\\]runs[/\\]\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d$/)
    expect(made.startsWith(directory)).toBe(true)
    const given = join(directory, 'given', 'nested')
    expect(await makeRunDirectory(directory, given)).toBe(given)
    expect(await readdir(given)).toEqual([])
  })
})

describe('writeReportFiles', () => {
  it('writes JSON indented, JSON lines, text as it is and lines of text, in the order given', async () => {
    const target = join(directory, 'files')
    await makeRunDirectory(directory, target)
    await writeReportFiles(target, {
      'report.json': { step: 1, figures: [0.5] },
      'judgements.jsonl': [{ a: 1 }, { b: 2 }],
      'chart.svg': '<svg/>\n',
      'table.md': ['| a |', '|---|', '| 1 |'],
    })
    expect(await readFile(join(target, 'report.json'), 'utf8')).toBe('{\n  "step": 1,\n  "figures": [\n    0.5\n  ]\n}\n')
    expect(await readFile(join(target, 'judgements.jsonl'), 'utf8')).toBe('{"a":1}\n{"b":2}\n')
    expect(await readFile(join(target, 'chart.svg'), 'utf8')).toBe('<svg/>\n')
    expect(await readFile(join(target, 'table.md'), 'utf8')).toBe('| a |\n|---|\n| 1 |\n')
  })

  it('refuses a value that is not text before writing anything, naming the file', async () => {
    const target = join(directory, 'refused')
    await makeRunDirectory(directory, target)
    const writing = writeReportFiles(target, { 'report.json': {}, 'table.md': 42 })
    await expect(writing).rejects.toThrow(InvalidArgumentError)
    await expect(writeReportFiles(target, { 'table.md': [1, 2] })).rejects.toThrow(/files\['table\.md'\]/)
    expect(await readdir(target)).toEqual([])
  })
})

describe('markdownTable', () => {
  it('writes the header, the rule and the rows, escaping a | in a cell', () => {
    expect(
      markdownTable(
        ['seed', 'accuracy'],
        [
          ['0', '91.0%'],
          ['mean', 'a|b'],
        ],
      ),
    ).toEqual(['| seed | accuracy |', '|---|---|', '| 0 | 91.0% |', '| mean | a\\|b |'])
    expect(markdownTable(['only'], [])).toEqual(['| only |', '|---|'])
  })

  it('refuses a row with another number of cells than the header, naming it', () => {
    expect(() => markdownTable(['a', 'b'], [['1', '2'], ['3']])).toThrow(/rows\[1\]/)
  })
})

describe('evaluations in the trainer’s history', () => {
  const evaluation = { step: 5, exploitability: 0.2, heuristic: { winRate: 0.5, dealRate: 0.25 }, random: { winRate: 0.75, dealRate: 0 } }

  it('flattens an evaluation into the hook’s metrics and rebuilds it from the logged eval/* metrics', () => {
    const metrics = evaluationMetrics(evaluation)
    expect(metrics).toEqual({ exploitability: 0.2, 'heuristic/winRate': 0.5, 'heuristic/dealRate': 0.25, 'random/winRate': 0.75, 'random/dealRate': 0 })
    const history: LoggedMetrics[] = [
      { step: 4, loss: 1 },
      { step: 5, loss: 1, ...Object.fromEntries(Object.entries(metrics).map(([name, value]) => [`eval/${name}`, value])) },
    ]
    expect(loggedEvaluations(history)).toEqual([evaluation])
    expect(JSON.stringify(loggedEvaluations(history)[0])).toBe(JSON.stringify(evaluation)) // the same key order
  })
})

describe('runReport and markdownPage', () => {
  it('orders the report backend, options without functions, the fields, seconds, runDirectory', () => {
    const report = runReport({ backend: 'cpu', options: { steps: 3, log: () => {} }, started: performance.now(), runDirectory: 'runs/x' }, { results: [1] })
    expect(Object.keys(report)).toEqual(['backend', 'options', 'results', 'seconds', 'runDirectory'])
    expect(report).toMatchObject({ backend: 'cpu', options: { steps: 3 }, results: [1], runDirectory: 'runs/x' })
    expect(report.seconds).toBeGreaterThanOrEqual(0)
  })

  it('writes a page as a title, a paragraph and the body', () => {
    expect(markdownPage('Title', 'Some words.', '| a |\n|---|')).toBe('# Title\n\nSome words.\n\n| a |\n|---|\n')
  })
})
