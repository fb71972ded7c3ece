import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type TrajectoryRecord, trajectoryFormat, trajectoryRecordSchema } from './trajectory-log.js'
import { boundedTrajectoryLine, createTrajectoryFile, sampledEpisodes } from './trajectory-writer.js'

let directory: string
beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'ludic-trajectory-writer-'))
})
afterAll(async () => {
  await rm(directory, { recursive: true, force: true })
})

const turn = (index: number, text: string, tokens: number) => ({
  index,
  role: 'player0',
  observation: `observation ${index}: ${text}`,
  legalActions: ['a', 'b'],
  action: 'a',
  rewards: { player0: 0 },
  invalidAction: false,
  trained: true,
  prompt: `prompt ${index}: ${text}`,
  response: 'a',
  tokens: Array.from({ length: tokens }, () => 'a'),
  tokenIds: Array.from({ length: tokens }, () => 97),
  logprobs: Array.from({ length: tokens }, () => -0.125),
  advantages: Array.from({ length: tokens }, () => 0.5),
})

const recordOf = (turns: TrajectoryRecord['turns'], step = 1): TrajectoryRecord => ({
  format: trajectoryFormat,
  step,
  policyVersion: step - 1,
  trainer: 'self-play',
  episode: {
    id: `episode-${step}`,
    environmentId: 'pick-v1',
    seed: 1,
    groupId: 'group',
    roles: ['player0'],
    returns: { player0: 1 },
    done: true,
    truncated: false,
    external: false,
  },
  turns,
})

const bytes = (line: string) => Buffer.byteLength(line, 'utf8')
const parsed = (line: string) => trajectoryRecordSchema.parse(JSON.parse(line))

describe('boundedTrajectoryLine', () => {
  it('leaves a line within the limit as it is', () => {
    const record = recordOf([turn(0, 'short', 3)])
    expect(boundedTrajectoryLine(record, 4096)).toBe(JSON.stringify(record))
  })

  it('cuts the long texts to the longest length that fits, naming them, and keeps the tokens', () => {
    const long = 'é'.repeat(20_000) // two bytes each in UTF-8
    const line = boundedTrajectoryLine(recordOf([turn(0, long, 8), turn(1, 'short', 8)]), 16_384)!
    expect(bytes(line)).toBeLessThanOrEqual(16_384)
    expect(bytes(line)).toBeGreaterThan(16_384 - 64) // no more was cut than needed
    const record = parsed(line)
    expect(record.truncatedFields).toEqual(['turns[0].prompt', 'turns[0].observation'])
    expect(record.turns[0]!.prompt!.endsWith('…')).toBe(true)
    expect(record.turns[1]!.prompt).toBe('prompt 1: short')
    expect(record.turns.map((each) => each.tokenIds!.length)).toEqual([8, 8])
  })

  it('drops the per-token arrays of the last turns when cut texts are not enough, then the last turns', () => {
    const manyTokens = Array.from({ length: 6 }, (_, index) => turn(index, 'x'.repeat(100), 400))
    const line = boundedTrajectoryLine(recordOf(manyTokens), 16_384)!
    expect(bytes(line)).toBeLessThanOrEqual(16_384)
    const record = parsed(line)
    expect(record.turns).toHaveLength(6)
    const bare = record.turns.filter((each) => each.tokenIds === undefined).map((each) => each.index)
    expect(bare.length).toBeGreaterThan(0)
    expect(bare).toEqual(Array.from({ length: bare.length }, (_, index) => 6 - bare.length + index)) // the last ones
    expect(record.truncatedFields).toEqual(bare.flatMap((index) => [`turns[${index}].tokens`, `turns[${index}].legalActions`]))
    expect(record.turns[0]!.advantages).toHaveLength(400)

    const manyTurns = Array.from({ length: 400 }, (_, index) => turn(index, 'y'.repeat(200), 1))
    const cut = boundedTrajectoryLine(recordOf(manyTurns), 8192)!
    expect(bytes(cut)).toBeLessThanOrEqual(8192)
    const kept = parsed(cut)
    expect(kept.turns.length).toBeLessThan(400)
    expect(kept.truncatedFields).toContain(`turns[${kept.turns.length}:]`)
  })

  it('counts the bytes as UTF-8 writes them (3-byte CJK, 4-byte emoji): a line exactly at the limit kept whole, one byte over cut', () => {
    const record = recordOf([turn(0, '中文 😀 é'.repeat(300), 2)])
    const whole = JSON.stringify(record)
    expect(boundedTrajectoryLine(record, bytes(whole))).toBe(whole)
    const cut = boundedTrajectoryLine(record, bytes(whole) - 1)!
    expect(cut).not.toBe(whole)
    expect(bytes(cut)).toBeLessThanOrEqual(bytes(whole) - 1)
    expect(parsed(cut).truncatedFields).toContain('turns[0].prompt')
  })

  it('gives nothing when even the bare episode is longer than the limit', () => {
    const record = recordOf([turn(0, 'short', 1)])
    record.episode.roles = Array.from({ length: 1000 }, (_, index) => `role-${index}`)
    expect(boundedTrajectoryLine(record, 4096)).toBeUndefined()
  })
})

describe('sampledEpisodes', () => {
  it('draws the same episodes for the same seed and step, others for another step, and all on request', () => {
    const first = sampledEpisodes(32, 4, 7, 3)
    expect(first).toHaveLength(4)
    expect(new Set(first).size).toBe(4)
    expect(first).toEqual([...first].sort((a, b) => a - b))
    expect(sampledEpisodes(32, 4, 7, 3)).toEqual(first)
    expect(sampledEpisodes(32, 4, 7, 4)).not.toEqual(first)
    expect(sampledEpisodes(32, 4, 8, 3)).not.toEqual(first)
    expect(sampledEpisodes(5, 'all', 7, 3)).toEqual([0, 1, 2, 3, 4])
    expect(sampledEpisodes(3, 4, 7, 3)).toEqual([0, 1, 2])
  })
})

describe('createTrajectoryFile', () => {
  const lineOf = (step: number) => JSON.stringify(recordOf([turn(0, 'text', 2)], step))
  const steps = async (path: string) =>
    (await readFile(path, 'utf8'))
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => (JSON.parse(line) as { step: number }).step)

  it("drops the lines of the first written step and later (another run's, a crash's cut line), then appends", async () => {
    const path = join(directory, 'first-write', 'trajectories.jsonl')
    const first = createTrajectoryFile(path)
    for (const step of [1, 2, 3]) await first.write(step, [lineOf(step), lineOf(step)])
    expect(await steps(path)).toEqual([1, 1, 2, 2, 3, 3])
    // A second process continues from step 2 (its checkpoint was step 1): steps 2 and 3 are not kept twice.
    const second = createTrajectoryFile(path)
    await second.write(2, [lineOf(2)])
    await second.write(3, [lineOf(3)])
    expect(await steps(path)).toEqual([1, 1, 2, 3])
    // A line cut short by a crash (no newline) goes, even of an earlier step.
    await writeFile(path, `${lineOf(1)}\n${lineOf(2).slice(0, 40)}`)
    await createTrajectoryFile(path).write(2, [lineOf(2)])
    expect(await steps(path)).toEqual([1, 2])
    await writeFile(path, `${lineOf(1)}\n${lineOf(2)}`) // whole, but its newline lost: it would glue to the next
    await createTrajectoryFile(path).write(3, [lineOf(3)])
    expect(await steps(path)).toEqual([1, 3])
  })

  it('keeps the steps through a checkpoint on resume, and leaves a missing file missing', async () => {
    const path = join(directory, 'resume', 'trajectories.jsonl')
    await createTrajectoryFile(path).keepThrough(3)
    await expect(readFile(path)).rejects.toMatchObject({ code: 'ENOENT' })
    const writer = createTrajectoryFile(path)
    for (const step of [1, 2, 3, 4]) await writer.write(step, [lineOf(step)])
    await createTrajectoryFile(path).keepThrough(2)
    expect(await steps(path)).toEqual([1, 2])
  })
})
