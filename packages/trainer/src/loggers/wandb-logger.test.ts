import { createServer, type IncomingMessage } from 'node:http'
import { readdir, readFile, mkdtemp, rm } from 'node:fs/promises'
import { Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parse as parseYaml } from 'yaml'
import { afterAll, describe, expect, it, vi } from 'vitest'
import type { StepMetrics } from '../metrics-log.js'
import { createWandbLogger, resolveWandbSettings } from './wandb-logger.js'

const scratch = await mkdtemp(join(tmpdir(), 'ludic-wandb-'))
afterAll(() => rm(scratch, { recursive: true, force: true, maxRetries: 5 }))

const apiKey = 'k'.repeat(40)
const config = { kind: 'rl', steps: 3, optimizer: { learningRate: 0.001 } }
const steps: StepMetrics[] = [
  { step: 1, loss: 0.5, reward: -1 },
  { step: 2, loss: Number.NaN, reward: 0.25 }, // NaN: left out of the row
  { step: 3, loss: 0.125, reward: 1, 'eval/random/winRate': 0.75 },
]
const notify = () => {}

/** A W&B server on 127.0.0.1 that answers the JavaScript SDK (GraphQL viewer and upsertBucket, the file stream) and keeps every request. */
async function fakeWandb(options: { refuseKey?: boolean } = {}) {
  const requests: { method: string; url: string; authorization: string | undefined; body: unknown }[] = []
  const read = async (request: IncomingMessage) => {
    let text = ''
    for await (const chunk of request) text += chunk
    return text === '' ? undefined : (JSON.parse(text) as unknown)
  }
  const server = createServer(async (request, response) => {
    const body = await read(request)
    requests.push({ method: request.method!, url: request.url!, authorization: request.headers.authorization, body })
    response.setHeader('content-type', 'application/json')
    if (options.refuseKey === true) {
      response.statusCode = 401
      response.end(JSON.stringify({ errors: [{ message: 'user is not logged in' }] }))
      return
    }
    if (request.url === '/graphql') {
      const { query, variables } = body as { query: string; variables: Record<string, unknown> }
      if (query.includes('upsertBucket')) {
        const bucket = {
          id: 'bucket-1',
          name: variables.name,
          displayName: variables.displayName,
          project: { id: 'project-1', name: variables.project, entity: { id: 'entity-1', name: variables.entity } },
        }
        response.end(JSON.stringify({ data: { upsertBucket: { bucket, inserted: true } } }))
      } else response.end(JSON.stringify({ data: { viewer: { id: 'viewer-1', entity: 'fake-entity', flags: '{}', teams: { edges: [] } } } }))
      return
    }
    response.end('{}')
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  return { url: `http://127.0.0.1:${port}`, requests, close: () => new Promise<void>((resolve) => server.close(() => resolve())) }
}

describe('createWandbLogger', () => {
  it('resolves its mode: the option, else WANDB_MODE, else online with WANDB_API_KEY, else offline', () => {
    expect(resolveWandbSettings({}, {}).mode).toBe('offline')
    expect(resolveWandbSettings({}, { WANDB_API_KEY: apiKey }).mode).toBe('online')
    expect(resolveWandbSettings({}, { WANDB_API_KEY: apiKey, WANDB_MODE: 'offline' }).mode).toBe('offline')
    expect(resolveWandbSettings({ mode: 'offline' }, { WANDB_API_KEY: apiKey, WANDB_MODE: 'online' }).mode).toBe('offline')
    expect(resolveWandbSettings({}, { WANDB_PROJECT: 'p', WANDB_ENTITY: 'e' })).toMatchObject({ project: 'p', entity: 'e', directory: 'wandb' })
    expect(resolveWandbSettings({}, {}).project).toBe('ludic')
  })

  it('offline (the SDK installed, WANDB_MODE=offline): W&B’s run files with every finite metric, and no connection made', async () => {
    const server = await fakeWandb()
    const connect = vi.spyOn(Socket.prototype, 'connect')
    const fetchSpy = vi.spyOn(globalThis, 'fetch')
    try {
      const directory = join(scratch, 'offline-run')
      const logger = createWandbLogger({
        project: 'kuhn',
        environment: { WANDB_MODE: 'offline', WANDB_API_KEY: apiKey, WANDB_BASE_URL: server.url },
      })
      await logger.start({ directory, trainer: 'rl', config, notify })
      for (const metrics of steps) await logger.log(metrics)
      await logger.text('episodes/sample', 3, 'not sent')
      await logger.close()
      expect(server.requests).toEqual([])
      expect(connect).not.toHaveBeenCalled()
      expect(fetchSpy).not.toHaveBeenCalled()
      const [folder, ...others] = await readdir(join(directory, 'wandb'))
      expect(others).toEqual([])
      expect(folder).toMatch(/^offline-run-\d{8}_\d{6}-[a-z0-9]{8}$/)
      const files = join(directory, 'wandb', folder!, 'files')
      const history = (await readFile(join(files, 'wandb-history.jsonl'), 'utf8'))
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, number>)
      expect(history.map(({ _runtime, _timestamp, ...row }) => row)).toEqual([
        { _step: 1, loss: 0.5, reward: -1 },
        { _step: 2, reward: 0.25 },
        { _step: 3, loss: 0.125, reward: 1, 'eval/random/winRate': 0.75 },
      ])
      expect(JSON.parse(await readFile(join(files, 'wandb-summary.json'), 'utf8'))).toMatchObject({ _step: 3, loss: 0.125, reward: 1 })
      expect(parseYaml(await readFile(join(files, 'config.yaml'), 'utf8'))).toEqual({
        wandb_version: 1,
        kind: { desc: null, value: 'rl' },
        steps: { desc: null, value: 3 },
        optimizer: { desc: null, value: { learningRate: 0.001 } },
      })
      expect(JSON.parse(await readFile(join(files, 'wandb-metadata.json'), 'utf8'))).toMatchObject({ project: 'kuhn', name: 'offline-run', program: 'ludic' })
    } finally {
      connect.mockRestore()
      fetchSpy.mockRestore()
      await server.close()
    }
  })

  it('online: the SDK creates the run on a (fake, loopback) W&B server and streams every finite metric at its step; Ctrl+C stays the trainer’s', async () => {
    const server = await fakeWandb()
    try {
      const signals = ['SIGINT', 'SIGTERM', 'beforeExit'].map((signal) => process.listenerCount(signal))
      const logger = createWandbLogger({ mode: 'online', project: 'kuhn', name: 'run-a', environment: { WANDB_API_KEY: apiKey, WANDB_BASE_URL: server.url } })
      await logger.start({ directory: join(scratch, 'online-run'), trainer: 'rl', config, notify, resumedAtStep: 0 })
      expect(['SIGINT', 'SIGTERM', 'beforeExit'].map((signal) => process.listenerCount(signal))).toEqual(signals)
      for (const metrics of steps) await logger.log(metrics)
      await logger.close()
      const upsert = server.requests.find((request) => JSON.stringify(request.body).includes('upsertBucket'))!
      expect((upsert.body as { variables: Record<string, unknown> }).variables).toMatchObject({
        project: 'kuhn',
        entity: 'fake-entity',
        displayName: 'run-a (from step 0)',
        config: JSON.stringify(config),
      })
      expect(upsert.authorization).toBe(`Basic ${Buffer.from(`api:${apiKey}`).toString('base64')}`)
      const stream = server.requests.filter((request) => request.url.endsWith('/file_stream'))
      expect(stream.length).toBeGreaterThan(0)
      expect(stream[0]!.url).toMatch(/^\/files\/fake-entity\/kuhn\/[a-z0-9]{8}\/file_stream$/)
      const rows = stream.flatMap((request) =>
        ((request.body as { files?: Record<string, { content: string[] }> }).files?.['wandb-history.jsonl']?.content ?? []).map(
          (line) => JSON.parse(line) as Record<string, number>,
        ),
      )
      expect(rows.map(({ _runtime, _timestamp, ...row }) => row)).toEqual([
        { _step: 1, loss: 0.5, reward: -1 },
        { _step: 2, reward: 0.25 },
        { _step: 3, loss: 0.125, reward: 1, 'eval/random/winRate': 0.75 },
      ])
      expect(stream.at(-1)!.body).toEqual({ complete: true, exitcode: 0 })
    } finally {
      await server.close()
    }
  }, 60_000)

  it('online: a refused key or an unreachable server is an error of start() that says which (the SDK says “Unable to determine default entity” for both)', async () => {
    const server = await fakeWandb({ refuseKey: true })
    try {
      const refused = createWandbLogger({ mode: 'online', environment: { WANDB_API_KEY: apiKey, WANDB_BASE_URL: server.url } })
      await expect(refused.start({ directory: scratch, trainer: 'rl', config, notify })).rejects.toThrow(/did not accept WANDB_API_KEY \(HTTP 401\)/)
    } finally {
      await server.close()
    }
    // The server is closed now: nothing listens on its port.
    const unreachable = createWandbLogger({ mode: 'online', environment: { WANDB_API_KEY: apiKey, WANDB_BASE_URL: server.url } })
    await expect(unreachable.start({ directory: scratch, trainer: 'rl', config, notify })).rejects.toThrow(/cannot reach W&B at http:\/\/127\.0\.0\.1:\d+/)
  })

  it('online is refused when it is made without an API key, or without @wandb/sdk (saying what to install)', () => {
    expect(() => createWandbLogger({ mode: 'online', environment: {} })).toThrow(/WANDB_API_KEY/)
    expect(() =>
      createWandbLogger({
        mode: 'online',
        environment: { WANDB_API_KEY: apiKey },
        resolveSdk: () => {
          throw Object.assign(new Error("Cannot find module '@wandb/sdk'"), { code: 'MODULE_NOT_FOUND' })
        },
      }),
    ).toThrow(/npm install @wandb\/sdk/)
  })
})
