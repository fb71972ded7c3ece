import { spawn } from 'node:child_process'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:net'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from './cli.js'
import { exitCodeHelp, exitCodeMarkdown, exitCodes, exitCodeTable, type ExitCode } from './errors.js'
import { captureIo, saveTinyModel, useBackendAndDirectory } from './test/support.js'

const temporaryDirectory = useBackendAndDirectory('ludic-cli-exit-codes-')
const faultyPlugin = fileURLToPath(new URL('./test/fixtures/faulty-game-plugin.js', import.meta.url))
const bin = fileURLToPath(new URL('../bin/ludic.js', import.meta.url))
let model: string

beforeAll(async () => {
  model = await saveTinyModel(join(temporaryDirectory(), 'tiny'))
  // A model folder whose config.json is cut short, and a run directory (no config.json) named as a model.
  const broken = join(temporaryDirectory(), 'broken-model')
  await mkdir(broken, { recursive: true })
  await writeFile(join(broken, 'config.json'), '{"model_type": "llama", "hidden_si')
  await writeFile(join(broken, 'tokenizer.json'), await readFile(join(model, 'tokenizer.json')))
  await mkdir(join(temporaryDirectory(), 'runs', 'not-a-model'), { recursive: true })
})

/** A config file in the temporary directory; its path. */
async function config(name: string, lines: readonly string[]): Promise<string> {
  const path = join(temporaryDirectory(), name)
  await writeFile(path, `${lines.join('\n')}\n`)
  return path
}

/** Runs `ludic` with `argv` in the temporary directory: its exit code and what it printed on stderr. */
async function run(argv: readonly string[], options: { abortWhenListening?: boolean } = {}) {
  const { io, controller, stderr } = captureIo({ cwd: temporaryDirectory() })
  if (options.abortWhenListening === true) io.onListening = () => controller.abort()
  const code = await runCli(argv, io)
  return { code, stderr: stderr() }
}

/** A port something else listens on (127.0.0.1), until `close`. */
async function busyPort(): Promise<{ port: number; server: Server }> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { port: (server.address() as { port: number }).port, server }
}

/** A port nothing listens on (127.0.0.1): a connection to it is refused. */
async function closedPort(): Promise<number> {
  const { port, server } = await busyPort()
  await new Promise((resolve) => server.close(resolve))
  return port
}

// Every row of the exit-code table, with the situations that give it, each through `runCli`.
const rows: Record<ExitCode, { situation: string; check: () => Promise<void> }[]> = {
  0: [
    { situation: '--help', check: async () => expect((await run(['--help'])).code).toBe(exitCodes.ok) },
    {
      situation: 'tokenizer train',
      check: async () => {
        await writeFile(join(temporaryDirectory(), 'corpus.txt'), 'hello there\ngeneral kenobi\n')
        const result = await run(['tokenizer', 'train', '--input', 'corpus.txt', '--vocab-size', '260', '--out', 'bpe'])
        expect(result.code, result.stderr).toBe(exitCodes.ok)
      },
    },
  ],
  1: [
    {
      situation: 'a runtime error: a game whose reset throws',
      check: async () => {
        const result = await run(['eval', model, '--plugin', faultyPlugin, '--games', 'faulty-v1', '--opponents', 'random', '--episodes', '1', '--out', 'eval'])
        expect(result.code).toBe(exitCodes.failed)
        expect(result.stderr).toContain('the faulty game cannot start')
      },
    },
  ],
  2: [
    { situation: 'an unknown flag', check: async () => expect((await run(['train', 'x.yaml', '--stepz', '2'])).code).toBe(exitCodes.usage) },
    {
      situation: 'an invalid config file',
      check: async () => expect((await run(['train', await config('wrong.yaml', ['model: { preset: huge }'])])).code).toBe(exitCodes.usage),
    },
    {
      situation: 'a config file that is not YAML',
      check: async () => expect((await run(['train', await config('not-yaml.yaml', ['model: { preset: tiny'])])).code).toBe(exitCodes.usage),
    },
    {
      situation: 'a --set value that is not YAML',
      check: async () => {
        const result = await run(['train', await config('fine.yaml', ['model: { preset: tiny }']), '--set', 'evaluation.opponents=[random'])
        expect(result.code).toBe(exitCodes.usage)
        expect(result.stderr).toContain("Invalid argument 'overrides[0]'")
      },
    },
    {
      situation: 'a wrong option of a bench suite (--set), every wrong field listed',
      check: async () => {
        const result = await run(['bench', 'kuhn', '--set', 'episodez=3'])
        expect(result.code).toBe(exitCodes.usage)
        expect(result.stderr).toContain("invalid the options of bench suite 'kuhn': 1 wrong field")
      },
    },
    {
      situation: 'serve on a port in use, with a hint about --port',
      check: async () => {
        const { port, server } = await busyPort()
        try {
          const result = await run(['serve', model, '--port', String(port)])
          expect(result.code).toBe(exitCodes.usage)
          expect(result.stderr).toContain(`cannot listen on 127.0.0.1:${port}: the port is in use`)
          expect(result.stderr).toContain('--port')
        } finally {
          await new Promise((resolve) => server.close(resolve))
        }
      },
    },
  ],
  3: [
    { situation: 'a missing config file', check: async () => expect((await run(['train', 'missing.yaml'])).code).toBe(exitCodes.notFound) },
    { situation: 'a missing run directory to view', check: async () => expect((await run(['view', 'no-such-runs'])).code).toBe(exitCodes.notFound) },
    {
      situation: 'a missing model.path in a config, as the same path on the command line',
      check: async () => {
        const path = await config('missing-model.yaml', ['kind: sft', 'model: { path: ./no-such-model }', 'data: data.jsonl', 'steps: 1'])
        await writeFile(join(temporaryDirectory(), 'data.jsonl'), '{"prompt": "a", "response": "b"}\n')
        const inConfig = await run(['train', path])
        expect(inConfig.code, inConfig.stderr).toBe(exitCodes.notFound)
        expect(inConfig.stderr).toContain('no-such-model')
        expect((await run(['serve', './no-such-model'])).code).toBe(exitCodes.notFound)
        expect((await run(['eval', './no-such-model'])).code).toBe(exitCodes.notFound)
      },
    },
    {
      situation: 'a folder that is not a model folder (no config.json), named without internal parameter names',
      check: async () => {
        for (const command of ['eval', 'serve']) {
          const result = await run([command, 'runs/not-a-model', '--port', '0'].slice(0, command === 'serve' ? 4 : 2))
          expect(result.code).toBe(exitCodes.notFound)
          expect(result.stderr).toContain('runs/not-a-model is not a model folder: it has no config.json')
          expect(result.stderr).not.toContain('pathOrObject')
        }
      },
    },
    {
      situation: 'a model folder whose config.json is cut short, on the command line and in a config',
      check: async () => {
        const result = await run(['eval', 'broken-model'])
        expect(result.code).toBe(exitCodes.notFound)
        expect(result.stderr).toContain(join(temporaryDirectory(), 'broken-model', 'config.json'))
        const path = await config('broken-model.yaml', ['kind: sft', 'model: { path: ./broken-model }', 'data: data.jsonl', 'steps: 1'])
        await writeFile(join(temporaryDirectory(), 'data.jsonl'), '{"prompt": "a", "response": "b"}\n')
        expect((await run(['train', path])).code).toBe(exitCodes.notFound)
      },
    },
    {
      situation: 'a data file that is not JSON Lines',
      check: async () => {
        await writeFile(join(temporaryDirectory(), 'bad-data.jsonl'), '{"prompt": "a", "response": \n')
        const path = await config('bad-data.yaml', [
          'kind: sft',
          'model: { preset: tiny }',
          'tokenizer: { train: { vocabSize: 262 } }',
          'data: bad-data.jsonl',
          'steps: 1',
        ])
        const result = await run(['train', path])
        expect(result.code).toBe(exitCodes.notFound)
        expect(result.stderr).toContain('bad-data.jsonl')
      },
    },
  ],
  4: [
    {
      situation: 'the Hub cannot be reached',
      check: async () => {
        const saved = { HF_ENDPOINT: process.env.HF_ENDPOINT, HF_HUB_CACHE: process.env.HF_HUB_CACHE, HF_HUB_OFFLINE: process.env.HF_HUB_OFFLINE }
        process.env.HF_ENDPOINT = `http://127.0.0.1:${await closedPort()}`
        process.env.HF_HUB_CACHE = join(temporaryDirectory(), 'hub-cache')
        delete process.env.HF_HUB_OFFLINE
        try {
          expect((await run(['download', 'ludic-test/unreachable'])).code).toBe(exitCodes.network)
        } finally {
          for (const [name, value] of Object.entries(saved)) {
            if (value === undefined) delete process.env[name]
            else process.env[name] = value
          }
        }
      },
    },
  ],
  130: [
    {
      situation: 'serve stopped by its signal',
      check: async () => expect((await run(['serve', model, '--port', '0'], { abortWhenListening: true })).code).toBe(exitCodes.interrupted),
    },
    {
      situation: 'view stopped by its signal',
      check: async () => expect((await run(['view', 'runs', '--port', '0'], { abortWhenListening: true })).code).toBe(exitCodes.interrupted),
    },
  ],
}

describe('exit codes', () => {
  it('are one table: the help and the README show it, and every row has its situations below', async () => {
    expect(Object.keys(rows).map(Number)).toEqual(exitCodeTable.map((row) => row.code))
    const { io, stdout } = captureIo()
    await runCli(['--help'], io)
    expect(stdout()).toContain(exitCodeHelp)
    const readme = await readFile(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8')
    expect(readme).toContain(`## Exit codes\n\n${exitCodeMarkdown()}\n`)
  })

  for (const row of exitCodeTable) {
    describe(`${row.code}: ${row.meaning}`, () => {
      for (const { situation, check } of rows[row.code]) it(situation, check)
    })
  }
})

describe('the ludic command (bin), in a process of its own', () => {
  // The real launcher, built (npm test builds first): Ctrl+C and SIGTERM stop `ludic serve` with exit code 130.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    it(`exits 130 when ${signal} stops ludic serve`, async () => {
      const child = spawn(process.execPath, [bin, 'serve', model, '--port', '0', '--host', '127.0.0.1'], {
        env: { ...process.env, LUDIC_BACKEND: 'wasm' },
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      let output = ''
      child.stderr.on('data', (chunk: Buffer) => {
        output += chunk.toString()
      })
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
      try {
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`ludic serve did not start within 50 s:\n${output}`)), 50_000)
          child.stdout.on('data', (chunk: Buffer) => {
            if (chunk.toString().includes('serving ')) {
              clearTimeout(timer)
              resolve()
            }
          })
          child.once('exit', () => {
            clearTimeout(timer)
            reject(new Error(`ludic serve exited before listening:\n${output}`))
          })
        })
        child.kill(signal)
        expect(await exited, output).toBe(exitCodes.interrupted)
      } finally {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
      }
    })
  }
})

afterAll(() => {})
