import { execFile } from 'node:child_process'
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import type { StepMetrics } from '../metrics-log.js'
import { readEventFile } from '../test/tensorboard-reader.js'
import { crc32c, maskedCrc32c } from './crc32c.js'
import { createJsonlLogger } from './jsonl-logger.js'
import { createRunLoggers } from './run-loggers.js'
import { createTensorBoardLogger } from './tensorboard-logger.js'

const fixture = join(import.meta.dirname, 'fixtures', 'tensorboard-resume')
const scratch = await mkdtemp(join(tmpdir(), 'ludic-tensorboard-'))
afterAll(() => rm(scratch, { recursive: true, force: true, maxRetries: 5 }))

const config = { kind: 'rl', steps: 4, optimizer: { learningRate: 0.001 }, environments: [{ game: 'kuhn-poker' }] }
// Values that float32 rounds (0.1, 1e-7, 12345.678), a NaN (null in metrics.jsonl, left out of TensorBoard), a negative.
const firstProcess: StepMetrics[] = [
  { step: 1, loss: 0.1, reward: -3.25, learningRate: 1e-7 },
  { step: 2, loss: Number.NaN, reward: 0.5, learningRate: 2e-7 },
  { step: 3, loss: 0.3, reward: 12345.678, learningRate: 3e-7 },
]
// Resumed from the checkpoint of step 2: step 3 is taken again (other values) and replaces the first one.
const secondProcess: StepMetrics[] = [
  { step: 3, loss: 0.25, reward: 1, learningRate: 3e-7 },
  { step: 4, loss: 0.125, reward: 2, learningRate: 4e-7 },
]

/** The fixture's run: two processes (the second resumed at step 2) with fixed clocks, through the fan-out. */
async function writeRun(directory: string): Promise<void> {
  const process = async (start: number, steps: readonly StepMetrics[], resumed?: { step: number; history: StepMetrics[] }) => {
    let now = start
    const loggers = createRunLoggers({
      loggers: [createJsonlLogger(), createTensorBoardLogger({ clock: () => now++, hostname: 'fixture' })],
      directory,
      trainer: 'rl',
      config,
      notify: () => {},
    })
    if (resumed !== undefined) await loggers.start(resumed)
    for (const metrics of steps) {
      await loggers.log(metrics)
      await loggers.text('episodes/sample', metrics.step, `    episode of step ${metrics.step}: **not bold**, <b>not html</b>`)
    }
    await loggers.close()
  }
  await process(1_700_000_000, firstProcess)
  await process(1_700_000_100, secondProcess, { step: 2, history: firstProcess.slice(0, 2) })
}

describe('createTensorBoardLogger', () => {
  it('CRC-32C: the standard check value, and TensorFlow’s mask', () => {
    expect(crc32c(new TextEncoder().encode('123456789'))).toBe(0xe3069283)
    // TensorBoard's masked_crc32c (tensorboard.compat.tensorflow_stub.pywrap_tensorflow) of the same bytes and of 8 zero bytes.
    expect(maskedCrc32c(new TextEncoder().encode('123456789'))).toBe(0xc78ab0e5)
    expect(maskedCrc32c(new Uint8Array(8))).toBe(0x07980329)
  })

  it('writes the committed fixture byte for byte, and Python’s EventAccumulator read it back equal to metrics.jsonl (resume included)', async () => {
    const directory = join(scratch, 'fixture')
    await writeRun(directory)
    const names = (await readdir(join(directory, 'tensorboard'))).sort()
    expect(names).toEqual(['events.out.tfevents.1700000000.fixture', 'events.out.tfevents.1700000100.fixture'])
    if (process.env.LUDIC_UPDATE_FIXTURES !== undefined) {
      await mkdir(join(fixture, 'tensorboard'), { recursive: true })
      for (const name of names) await copyFile(join(directory, 'tensorboard', name), join(fixture, 'tensorboard', name))
      await copyFile(join(directory, 'metrics.jsonl'), join(fixture, 'metrics.jsonl'))
      await writeFile(join(fixture, 'config.json'), `${JSON.stringify(config, null, 2)}\n`)
    }
    for (const name of names) expect(await readFile(join(directory, 'tensorboard', name)), name).toEqual(await readFile(join(fixture, 'tensorboard', name)))
    const metricsText = await readFile(join(directory, 'metrics.jsonl'), 'utf8')
    expect(metricsText).toBe(await readFile(join(fixture, 'metrics.jsonl'), 'utf8'))
    const readback = JSON.parse(await readFile(join(fixture, 'readback.json'), 'utf8')) as Readback
    expectReadbackEqualsMetrics(readback, metricsText)
    expect(readback.texts.config).toEqual([
      [0, expect.stringContaining('"learningRate": 0.001')],
      [3, expect.stringContaining('"learningRate": 0.001')],
    ])
    expect(readback.plugins).toEqual({ config: 'text', 'episodes/sample': 'text' })
  })

  it.runIf(process.env.LUDIC_TENSORBOARD_PYTHON !== undefined)(
    '[opt-in] a fresh run read by Python’s TensorBoard (LUDIC_TENSORBOARD_PYTHON: a python with tensorboard installed)',
    async () => {
      const directory = join(scratch, 'live')
      await writeRun(directory)
      // And a run through the configured loggers with the real clock and host name.
      let step = 0
      const loggers = createRunLoggers({ loggers: ['jsonl', 'tensorboard'], directory: join(scratch, 'live-clock'), trainer: 'rl', config, notify: () => {} })
      for (const values of [{ loss: 1.5 }, { loss: Math.PI }, { loss: -0 }]) await loggers.log({ step: ++step, ...values })
      await loggers.close()
      for (const run of [directory, join(scratch, 'live-clock')]) {
        const { stdout } = await promisify(execFile)(process.env.LUDIC_TENSORBOARD_PYTHON!, [join(fixture, 'read-events.py'), join(run, 'tensorboard')], {
          timeout: 120_000,
        })
        expectReadbackEqualsMetrics(JSON.parse(stdout) as Readback, await readFile(join(run, 'metrics.jsonl'), 'utf8'))
      }
    },
    180_000,
  )

  it('a step’s scalars, the config and texts in the file, readable without Python; a START at the first step each process writes', async () => {
    const directory = join(scratch, 'read')
    await writeRun(directory)
    const [first, second] = await Promise.all(
      ['events.out.tfevents.1700000000.fixture', 'events.out.tfevents.1700000100.fixture'].map(async (name) =>
        readEventFile(new Uint8Array(await readFile(join(directory, 'tensorboard', name)))),
      ),
    )
    expect(first![0]).toMatchObject({ fileVersion: 'brain.Event:2', step: 0, wallTime: 1_700_000_000 })
    expect(first![1]).toMatchObject({ sessionStatus: 1, step: 0 })
    expect(second![1]).toMatchObject({ sessionStatus: 1, step: 3 })
    expect(first!.find((event) => event.step === 2 && event.scalars.length > 0)!.scalars).toEqual([
      { tag: 'reward', value: 0.5 },
      { tag: 'learningRate', value: Math.fround(2e-7) },
    ])
    expect(first!.flatMap((event) => event.texts).map((text) => [text.tag, text.pluginName])).toEqual([
      ['config', 'text'],
      ['episodes/sample', 'text'],
      ['episodes/sample', 'text'],
      ['episodes/sample', 'text'],
    ])
  })

  it('refuses a relative directory without a run directory, and a second writer in the same second gets its own file', async () => {
    const logger = createTensorBoardLogger()
    await expect(logger.start({ directory: undefined, trainer: 'rl', config: {}, notify: () => {} })).rejects.toThrow(/relative to the run directory/)
    const directory = join(scratch, 'same-second')
    const loggers = [0, 1].map(() => createTensorBoardLogger({ clock: () => 1_700_000_000, hostname: 'a/b' }))
    for (const each of loggers) await each.start({ directory, trainer: 'rl', config: {}, notify: () => {} })
    for (const each of loggers) await each.close()
    expect((await readdir(join(directory, 'tensorboard'))).sort()).toEqual(['events.out.tfevents.1700000000.a_b', 'events.out.tfevents.1700000000.a_b.1'])
  })
})

interface Readback {
  scalars: Record<string, [number, number][]>
  texts: Record<string, [number, string][]>
  plugins: Record<string, string>
}

/** Every tag, step and value of metrics.jsonl (non-null) in the readback as float32 rounds it, and nothing else. */
function expectReadbackEqualsMetrics(readback: Readback, metricsText: string): void {
  const records = metricsText
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as Record<string, number | null>)
  const expected: Record<string, [number, number][]> = {}
  for (const record of records) {
    for (const [tag, value] of Object.entries(record)) {
      if (tag === 'step' || value === null) continue
      ;(expected[tag] ??= []).push([record.step!, Math.fround(value)])
    }
  }
  // metrics.jsonl writes −0 as 0 (JSON); the event file keeps the sign: equal numbers.
  const read = Object.fromEntries(Object.entries(readback.scalars).map(([tag, points]) => [tag, points.map(([step, value]) => [step, value + 0])]))
  expect(read).toEqual(expected)
}
