import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadModel } from '@ludic/model'
import { afterAll, describe, expect, it } from 'vitest'
import { main } from './main.js'
import { rubricScore, warmUpDialogue } from './roleplay-setup.js'

const directories: string[] = []
afterAll(async () => {
  for (const directory of directories) await rm(directory, { recursive: true, force: true, maxRetries: 5 })
})

describe('roleplay-cpo', () => {
  it('the warm-up dialogue holds every kind of reply, and the rubric ranks the good ones first', () => {
    const examples = warmUpDialogue(0)
    const kinds = new Map<string, number>()
    for (const example of examples) kinds.set(example.kind, (kinds.get(example.kind) ?? 0) + 1)
    expect([...kinds.keys()].sort()).toEqual(['assistant', 'boundary', 'good', 'other-character', 'repeated', 'terse'])
    expect(kinds.get('good')).toBe(2 * kinds.get('terse')!)
  })

  it('runs CPO with tiny settings: report, metrics with the judge figures, chart, and the three saved models', async () => {
    const runDirectory = await mkdtemp(join(tmpdir(), 'ludic-roleplay-cpo-'))
    directories.push(runDirectory)
    const lines: string[] = []
    const report = await main({
      steps: 2,
      sftSteps: 1, // what is checked is the run's outputs, not the warm-up's effect: one step (each takes ~1.5 s)
      episodesPerStep: 4,
      groupSize: 3,
      miniBatchSize: 12,
      maxTokens: 8,
      evaluateEvery: 1,
      evaluationEpisodes: 6,
      vocabSize: 400,
      checkpointEvery: 1,
      runDirectory,
      backend: 'wasm',
      progress: false,
      log: (line) => lines.push(line),
    })
    expect(report.evaluations.map((evaluation) => evaluation.step)).toEqual([0, 1, 2])
    for (const evaluation of report.evaluations) {
      expect(evaluation.rubric).toBeGreaterThanOrEqual(0)
      expect(evaluation.rubric).toBeLessThanOrEqual(1)
      expect(Object.keys(evaluation.dimensions).sort()).toEqual(['answersUser', 'inCharacter', 'knowledgeBoundary', 'noRepetition'])
    }
    expect(report.judge).toBe('rubric')
    expect(report.tensorsLeftBeforeModelDispose).toBeGreaterThan(0)
    const metrics = (await readFile(join(runDirectory, 'metrics.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, number>)
    expect(metrics.map((record) => record.step)).toEqual([1, 2])
    for (const record of metrics) {
      expect(record['judge/groups']).toBe(4)
      expect(record['judge/calls']).toBe(8)
      expect(record['judge/failures']).toBe(0)
      // Only the character's replies are trained on: one sample per episode.
      expect(record.samples).toBe(12)
      expect(record['score/mean']).toBeCloseTo(0.5, 6)
    }
    const chart = await readFile(join(runDirectory, 'chart.svg'), 'utf8')
    expect(chart).toContain('rubric score')
    for (const name of ['start', 'middle', 'end']) {
      const model = await loadModel(report.models[name as 'start'])
      expect(model.config.vocabSize).toBeGreaterThan(256)
      model.dispose()
    }
    expect(lines.at(-2)).toMatch(/after 2 CPO steps: rubric [\d.]+ \(from [\d.]+\)/)
  })

  it('scores a conversation by the rubric: an in-character answer beats an assistant reply', () => {
    const trajectory = (reply: string) => ({
      id: 't',
      environmentId: 'roleplay-v1',
      seed: 0,
      groupId: 'g',
      roles: ['character', 'user'],
      turns: [
        { index: 0, role: 'user', observation: '', action: "What's your favourite thing here?", rewards: {}, invalidAction: false },
        {
          index: 1,
          role: 'character',
          observation:
            'You are Maren Holt (short plain sentences, sea and weather words, calls everyone "friend", says "aye"). You know nothing of electricity, telephones, radio, aeroplanes, the internet, satellites. Stay in character.',
          action: reply,
          rewards: {},
          invalidAction: false,
        },
      ],
      returns: {},
      done: true,
      truncated: false,
    })
    const good = rubricScore(trajectory('Favourite thing? Aye, friend, the tide at dawn when the sea goes quiet.'))
    const assistant = rubricScore(trajectory('As an AI assistant, I can help you with that question.'))
    expect(good.score).toBeGreaterThan(0.8)
    expect(assistant.dimensions.inCharacter).toBe(0)
    expect(good.score).toBeGreaterThan(assistant.score + 0.2)
  })
})
