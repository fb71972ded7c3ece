import { appendFile, mkdir, mkdtemp, realpath, rm, truncate, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { jsonLines, openEventClient, rawRequest, trajectoryRecord, type EventClient } from '../test/view-support.js'
import { runId } from './run-directories.js'
import { startViewServer, type ViewServer, type ViewServerOptions } from './view-server.js'

let directory: string
let runs: string
let page: string
const open: { servers: ViewServer[]; clients: EventClient[] } = { servers: [], clients: [] }

const metrics = (step: number, extra: Record<string, number | null> = {}) => ({ step, 'reward/kuhn-poker-v1/player0': step / 10, loss: 1 / step, ...extra })

beforeAll(async () => {
  directory = await realpath(await mkdtemp(join(tmpdir(), 'ludic-view-server-')))
  runs = join(directory, 'runs')
  // kuhn-a: training (metrics, episodes, its config); kuhn-b: finished (model/ written after its metrics).
  await mkdir(join(runs, 'kuhn-a'), { recursive: true })
  await writeFile(join(runs, 'kuhn-a', 'metrics.jsonl'), jsonLines([metrics(1), metrics(2, { kl: null })]))
  await writeFile(
    join(runs, 'kuhn-a', 'trajectories.jsonl'),
    jsonLines([
      trajectoryRecord(1),
      trajectoryRecord(1, { returns: { player0: -1, player1: 1 } }),
      trajectoryRecord(2, { environmentId: 'tictactoe-v0', returns: { player0: 0.5, player1: -0.5 } }),
      { format: 'ludic.trajectory.v1', step: 2, trainer: 'self-play', turns: [] }, // no episode: a schema failure
    ]),
  )
  await writeFile(join(runs, 'kuhn-a', 'run-config.json'), JSON.stringify({ steps: 100, seed: 3, runDirectory: join(runs, 'kuhn-a') }))
  await mkdir(join(runs, 'kuhn-b'), { recursive: true })
  await writeFile(join(runs, 'kuhn-b', 'metrics.jsonl'), jsonLines([metrics(1)]))
  await mkdir(join(runs, 'kuhn-b', 'model'))
  await writeFile(join(runs, 'kuhn-b', 'model', 'config.json'), '{}')
  await mkdir(join(runs, 'not-a-run'))
  // A placeholder of the built page (helper P builds the real one into dist/view/).
  page = join(directory, 'page')
  await mkdir(join(page, 'assets'), { recursive: true })
  await writeFile(join(page, 'index.html'), '<!doctype html><title>ludic view</title><script type="module" src="/assets/app.js"></script>\n')
  await writeFile(join(page, 'assets', 'app.js'), 'console.log("page")\n')
})
afterEach(async () => {
  for (const client of open.clients.splice(0)) client.close()
  for (const server of open.servers.splice(0)) await server.close()
})
afterAll(async () => {
  await rm(directory, { recursive: true, force: true })
})

async function start(options: Partial<ViewServerOptions> = {}): Promise<ViewServer> {
  const server = await startViewServer({ sources: [{ argument: 'runs', path: runs }], port: 0, staticDirectory: page, ...options })
  open.servers.push(server)
  return server
}

async function getJson<T = Record<string, unknown>>(server: ViewServer, path: string, status = 200): Promise<T> {
  const answer = await rawRequest(server.url, path)
  expect(answer.status, `${path}: ${answer.body}`).toBe(status)
  expect(answer.headers['content-type']).toBe('application/json; charset=utf-8')
  return JSON.parse(answer.body) as T
}

interface RunsAnswer {
  runs: { id: string; name: string; path: string; status: string; step: number | null; kind?: string; config?: unknown; updatedAt: string }[]
}

describe('ludic view: the API over run directories', () => {
  it('lists the runs under a parent directory: stable url-safe ids, status, last step, config', async () => {
    const server = await start()
    const { runs: listed } = await getJson<RunsAnswer>(server, '/api/runs')
    expect(listed.map((run) => run.name)).toEqual(['kuhn-a', 'kuhn-b']) // not-a-run has none of a run's files
    const [a, b] = listed
    expect(a!.id).toMatch(/^kuhn-a-[0-9a-f]{8}$/)
    expect(a!.id).toBe(runId(join(runs, 'kuhn-a'))) // the same on every start
    expect(a).toMatchObject({ path: join(runs, 'kuhn-a'), status: 'running', step: 2, kind: 'rl', config: { steps: 100, seed: 3 } })
    expect(Date.parse(a!.updatedAt)).not.toBeNaN()
    expect(b).toMatchObject({ status: 'finished', step: 1 })
    expect(b).not.toHaveProperty('config')
    // Once nothing changed for longer than the window, a run without a final model is `unknown`.
    const later = await start({ runningWindowMs: 1 })
    await new Promise((resolve) => setTimeout(resolve, 20)) // let the 1 ms window pass (an ordering, not a speed check)
    const { runs: again } = await getJson<RunsAnswer>(later, '/api/runs')
    expect(again.map((run) => run.status)).toEqual(['unknown', 'finished'])
  })

  it('serves metrics records after a step, with non-finite values as null; a bad query is a 400 naming the parameter', async () => {
    const server = await start()
    const id = runId(join(runs, 'kuhn-a'))
    const all = await getJson<{ records: unknown[]; skipped: unknown[] }>(server, `/api/runs/${id}/metrics`)
    expect(all).toEqual({ records: [metrics(1), metrics(2, { kl: null })], skipped: [], skippedCount: 0 })
    expect((await getJson<{ records: unknown[] }>(server, `/api/runs/${id}/metrics?after=1`)).records).toEqual([metrics(2, { kl: null })])
    const bad = await getJson<{ error: { code: string; message: string } }>(server, `/api/runs/${id}/metrics?after=two`, 400)
    expect(bad.error).toEqual({ code: 'bad_query', message: 'Query parameter "after": must be a whole number.' })
    expect((await getJson<{ error: { message: string } }>(server, `/api/runs/${id}/metrics?afterr=1`, 400)).error.message).toBe(
      'Query parameter "afterr": unknown.',
    )
    expect((await getJson<{ error: { code: string } }>(server, '/api/runs/no-such-run-00000000/metrics', 404)).error.code).toBe('not_found')
  })

  it('lists episodes with filters and pages, and serves one whole, validated; a line failing the schema is a 422 with the reason', async () => {
    const server = await start()
    const id = runId(join(runs, 'kuhn-a'))
    const list = await getJson<Record<string, unknown>>(server, `/api/runs/${id}/episodes`)
    expect(list).toMatchObject({
      total: 3,
      available: 3,
      steps: [1, 2],
      environments: ['kuhn-poker-v1', 'tictactoe-v0'],
      roles: ['player0', 'player1'],
      skippedCount: 1,
    })
    expect(list.episodes).toEqual([
      {
        index: 1,
        step: 1,
        environmentId: 'kuhn-poker-v1',
        roles: ['player0', 'player1'],
        returns: { player0: 1, player1: -1 },
        turnCount: 1,
        trainer: 'self-play',
      },
      {
        index: 2,
        step: 1,
        environmentId: 'kuhn-poker-v1',
        roles: ['player0', 'player1'],
        returns: { player0: -1, player1: 1 },
        turnCount: 1,
        trainer: 'self-play',
      },
      {
        index: 3,
        step: 2,
        environmentId: 'tictactoe-v0',
        roles: ['player0', 'player1'],
        returns: { player0: 0.5, player1: -0.5 },
        turnCount: 1,
        trainer: 'self-play',
      },
    ])
    expect((list.skipped as { line: number; reason: string }[])[0]).toEqual({
      line: 4,
      reason: expect.stringMatching(/^not a ludic\.trajectory\.v1 record: episode: /),
    })
    const indexes = async (query: string) =>
      (await getJson<{ total: number; episodes: { index: number }[] }>(server, `/api/runs/${id}/episodes?${query}`)).episodes.map((episode) => episode.index)
    expect(await indexes('step=1')).toEqual([1, 2])
    expect(await indexes('environment=tictactoe-v0')).toEqual([3])
    expect(await indexes('role=player0&minReward=0')).toEqual([1, 3])
    expect(await indexes('role=player1&minReward=0')).toEqual([2])
    expect(await indexes('maxReward=-0.9')).toEqual([1, 2]) // without a role: any role's return
    expect(await indexes('offset=1&limit=1')).toEqual([2])
    expect(await indexes('step=&environment=&role=&minReward=')).toEqual([1, 2, 3]) // an empty filter is no filter
    expect((await getJson<{ total: number }>(server, `/api/runs/${id}/episodes?offset=1&limit=1`)).total).toBe(3)
    for (const query of ['limit=201', 'limit=0', 'offset=-1', 'minReward=abc', 'step=1.5', 'step=1&step=2', 'colour=red']) {
      const answer = await getJson<{ error: { code: string; message: string } }>(server, `/api/runs/${id}/episodes?${query}`, 400)
      expect(answer.error.code, query).toBe('bad_query')
      expect(answer.error.message, query).toContain(`"${query.split('=')[0]}"`)
    }
    expect(await getJson(server, `/api/runs/${id}/episodes/3`)).toEqual(
      trajectoryRecord(2, { environmentId: 'tictactoe-v0', returns: { player0: 0.5, player1: -0.5 } }),
    )
    const invalid = await getJson<{ error: { code: string; message: string } }>(server, `/api/runs/${id}/episodes/4`, 422)
    expect(invalid.error.code).toBe('invalid_record')
    expect(invalid.error.message).toMatch(/^Line 4 of trajectories\.jsonl is not shown: not a ludic\.trajectory\.v1 record: episode: /)
    expect((await getJson<{ error: { code: string } }>(server, `/api/runs/${id}/episodes/99`, 404)).error.code).toBe('not_found')
    expect((await getJson<{ error: { code: string } }>(server, `/api/runs/${id}/episodes/0`, 400)).error.code).toBe('bad_request')
    const none = await getJson<Record<string, unknown>>(server, `/api/runs/${runId(join(runs, 'kuhn-b'))}/episodes`)
    expect(none).toMatchObject({ total: 0, episodes: [], skipped: [], steps: [] })
  })

  it('pushes new metrics, episodes and runs over /api/events as the files change, a resumed run as a reset, with heartbeats', async () => {
    const live = join(directory, 'live-runs')
    await mkdir(join(live, 'run-1'), { recursive: true })
    const path = join(live, 'run-1', 'metrics.jsonl')
    await writeFile(path, jsonLines([metrics(1)]))
    const server = await start({ sources: [{ argument: 'live-runs', path: live }], heartbeatMs: 100 })
    const id = runId(join(live, 'run-1'))
    const events = await openEventClient(server.url)
    open.clients.push(events)
    const first = await events.next<{ runs: { id: string; step: number }[] }>('runs')
    expect(first.runs).toMatchObject([{ id, step: 1 }])

    const newMetrics = events.next<{ run: string; records: unknown[] }>('metrics')
    await appendFile(path, jsonLines([metrics(2)]))
    expect(await newMetrics).toEqual({ run: id, records: [metrics(2)] })

    const newEpisodes = events.next<{ run: string; total: number }>('episodes')
    await appendFile(join(live, 'run-1', 'trajectories.jsonl'), jsonLines([trajectoryRecord(2)]))
    expect(await newEpisodes).toEqual({ run: id, total: 1 })

    const newRun = events.next<{ runs: { name: string }[] }>('runs', (data) => data.runs.length === 2)
    await mkdir(join(live, 'run-2'))
    await writeFile(join(live, 'run-2', 'metrics.jsonl'), jsonLines([metrics(1)]))
    expect((await newRun).runs.map((run) => run.name)).toEqual(['run-1', 'run-2'])

    // A run resumed from its checkpoint of step 1 cuts its log back and writes step 2 again.
    const reset = events.next<{ run: string; records: unknown[]; reset?: boolean }>('metrics', (data) => data.reset === true)
    await truncate(path, Buffer.byteLength(jsonLines([metrics(1)])))
    expect(await reset).toEqual({ run: id, records: [metrics(1)], reset: true })
    const rewritten = events.next<{ records: unknown[] }>('metrics')
    await appendFile(path, jsonLines([metrics(2, { loss: 0.25 })]))
    expect((await rewritten).records).toEqual([metrics(2, { loss: 0.25 })])
    expect((await getJson<{ records: unknown[] }>(server, `/api/runs/${id}/metrics`)).records).toEqual([metrics(1), metrics(2, { loss: 0.25 })])

    for (let tries = 0; tries < 200 && !events.comments.includes('heartbeat'); tries++) await new Promise((resolve) => setTimeout(resolve, 25))
    expect(events.comments).toContain('heartbeat')
    expect(server.stats()).toEqual({ eventClients: 1, slowClientsCut: 0 })
  })

  it('serves the report and the tables: CharacterArena ratings, bench evaluations, example evaluations, the last eval/ metrics', async () => {
    const run = join(directory, 'tables-run')
    await mkdir(join(run, 'eval'), { recursive: true })
    await writeFile(
      join(run, 'metrics.jsonl'),
      jsonLines([
        metrics(1, { 'eval/random/winRate': 0.5, 'eval/random/winRateLow': 0.3, 'eval/random/winRateHigh': 0.7, 'eval/nash/winRate': 0.4 }),
        metrics(2),
      ]),
    )
    await writeFile(join(run, 'arena.md'), '| Rank | Player |\n|---:|---|\n| 1 | end |\n')
    await writeFile(
      join(run, 'report.json'),
      JSON.stringify({
        arena: {
          standings: [
            { rank: 1, player: 'end', rating: 1050, interval: [1010, 1090], wins: 6, ties: 1, losses: 1, games: 8, winRate: 0.8125 },
            { rank: 2, player: '<b>start</b>', rating: 950, interval: [910, 990], wins: 1, ties: 1, losses: 6, games: 8, winRate: 0.1875 },
          ],
          winRateMatrix: {
            players: ['end', '<b>start</b>'],
            winRates: [
              [null, 0.8125],
              [0.1875, null],
            ],
            games: [
              [0, 8],
              [8, 0],
            ],
          },
          confidence: 0.95,
        },
      }),
    )
    await writeFile(join(run, 'eval', 'games.md'), '# games\n')
    await writeFile(
      join(run, 'eval', 'games.json'),
      JSON.stringify({
        suite: 'games',
        title: 'Games',
        tables: [{ title: 'Win rates', columns: ['opponent', 'win rate', 'low', 'high'], rows: [['random', 0.6, 0.5, 0.7]] }],
      }),
    )
    await writeFile(join(run, 'before.json'), JSON.stringify({ step: 0, winRate: 0.5 })) // not a report: no table
    const server = await start({ sources: [{ argument: 'tables-run', path: run }] })
    const files = await getJson<{ report: string; reportFiles: string[]; tables: { name: string; columns: string[]; rows: unknown[][]; source: string }[] }>(
      server,
      `/api/runs/${runId(run)}/files`,
    )
    expect(files.reportFiles).toEqual(['arena.md', 'eval/games.md'])
    expect(files.report).toBe('## arena.md\n\n| Rank | Player |\n|---:|---|\n| 1 | end |\n\n## eval/games.md\n\n# games\n')
    expect(files.tables.map((table) => [table.name, table.source])).toEqual([
      ['CharacterArena ratings', 'report.json'],
      ['CharacterArena win rate of the row against the column', 'report.json'],
      ['games: Win rates', 'eval/games.json'],
      ['Evaluation at step 1', 'metrics.jsonl'],
    ])
    expect(files.tables[0]).toMatchObject({
      columns: ['Rank', 'Player', 'Rating', 'Interval 95% low', 'Interval 95% high', 'Win rate', 'Wins', 'Ties', 'Losses', 'Games'],
      rows: [
        [1, 'end', 1050, 1010, 1090, 0.8125, 6, 1, 1, 8],
        [2, '<b>start</b>', 950, 910, 990, 0.1875, 1, 1, 6, 8],
      ],
    })
    expect(files.tables[1]!.rows).toEqual([
      ['end', null, 0.8125],
      ['<b>start</b>', 0.1875, null],
    ])
    expect(files.tables[3]).toMatchObject({
      columns: ['opponent', 'winRate', 'winRateLow', 'winRateHigh'],
      rows: [
        ['random', 0.5, 0.3, 0.7],
        ['nash', 0.4, null, null],
      ],
    })
    // A self-play example's report.json: its evaluations as rows.
    const example = join(directory, 'example-run')
    await mkdir(example)
    await writeFile(
      join(example, 'report.json'),
      JSON.stringify({
        options: { steps: 20, seed: 0 },
        evaluations: [
          { step: 0, exploitability: 0.43, heuristic: { winRate: 0.5 } },
          { step: 10, exploitability: 0.2, heuristic: { winRate: 0.6 } },
        ],
      }),
    )
    const exampleServer = await start({ sources: [{ argument: 'example-run', path: example }] })
    const exampleFiles = await getJson<{ tables: { name: string; columns: string[]; rows: unknown[][] }[] }>(exampleServer, `/api/runs/${runId(example)}/files`)
    expect(exampleFiles).toEqual({
      reportFiles: [],
      tables: [
        {
          name: 'Evaluations',
          columns: ['step', 'exploitability', 'heuristic/winRate'],
          rows: [
            [0, 0.43, 0.5],
            [10, 0.2, 0.6],
          ],
          source: 'report.json',
        },
      ],
    })
    expect((await getJson<RunsAnswer>(exampleServer, '/api/runs')).runs[0]).toMatchObject({ status: 'finished', config: { steps: 20, seed: 0 } })
  })

  it('serves the built page with its security headers, and a plain "page not built" page when there is none', async () => {
    const server = await start()
    const index = await rawRequest(server.url, '/')
    expect(index.status).toBe(200)
    expect(index.headers['content-type']).toBe('text/html; charset=utf-8')
    expect(index.body).toContain('<title>ludic view</title>')
    expect(index.headers['content-security-policy']).toBe("default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'")
    expect(index.headers['x-content-type-options']).toBe('nosniff')
    const script = await rawRequest(server.url, '/assets/app.js')
    expect([script.status, script.headers['content-type'], script.body]).toEqual([200, 'text/javascript; charset=utf-8', 'console.log("page")\n'])
    const head = await rawRequest(server.url, '/assets/app.js', { method: 'HEAD' })
    expect([head.status, head.headers['content-length'], head.body]).toEqual([200, '20', ''])
    expect((await rawRequest(server.url, '/assets/missing.js')).status).toBe(404)
    expect((await rawRequest(server.url, '/assets')).status).toBe(404) // a folder: no listing

    const bare = await start({ staticDirectory: join(directory, 'no-page-here') })
    const notBuilt = await rawRequest(bare.url, '/')
    expect(notBuilt.status).toBe(200)
    expect(notBuilt.body).toContain('ludic view: the page is not built')
    expect(notBuilt.headers['content-security-policy']).toContain("default-src 'self'")
    expect((await rawRequest(bare.url, '/api/runs')).status).toBe(200) // the API answers meanwhile
  })
})
