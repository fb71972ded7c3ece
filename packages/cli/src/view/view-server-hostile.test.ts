import { appendFile, mkdir, mkdtemp, realpath, rm, symlink, writeFile } from 'node:fs/promises'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { jsonLines, openEventClient, rawRequest, trajectoryRecord, type EventClient } from '../test/view-support.js'
import { runId } from './run-directories.js'
import { startViewServer, type ViewServer, type ViewServerOptions } from './view-server.js'

let directory: string
let run: string
let page: string
/** Text of a file outside the run directories and the page: no answer may ever hold it. */
const secret = 'TOP-SECRET-6f1d'
const open: { servers: ViewServer[]; clients: EventClient[] } = { servers: [], clients: [] }
const script = '<script>alert("pwned")</script><img src=x onerror=alert(1)>'

beforeAll(async () => {
  directory = await realpath(await mkdtemp(join(tmpdir(), 'ludic-view-hostile-')))
  await writeFile(join(directory, 'secret.txt'), `${secret}\n`)
  await writeFile(join(directory, 'secret.jsonl'), `{"step":1,"${secret}":1}\n`)
  run = join(directory, 'runs', 'hostile')
  await mkdir(run, { recursive: true })
  await writeFile(join(run, 'metrics.jsonl'), jsonLines([{ step: 1, loss: 1 }]))
  // A 5 MiB line, invalid JSON, model text with markup, a valid episode, then a last line cut short by a crash.
  const huge = JSON.stringify(trajectoryRecord(1, { response: 'y'.repeat(5 << 20) }))
  await writeFile(
    join(run, 'trajectories.jsonl'),
    `${huge}\n{"format": "ludic.trajectory.v1", "step": 1, <script>\n${jsonLines([trajectoryRecord(1, { response: script }), trajectoryRecord(2)])}{"format":"ludic.traj`,
  )
  await symlink(join(directory, 'secret.txt'), join(run, 'report.md')) // a report linked out of the run: not read
  const linkedRun = join(directory, 'runs', 'linked-out')
  await mkdir(linkedRun)
  await symlink(join(directory, 'secret.jsonl'), join(linkedRun, 'metrics.jsonl'))
  page = join(directory, 'page')
  await mkdir(join(page, 'assets'), { recursive: true })
  await writeFile(join(page, 'index.html'), '<!doctype html><title>ludic view</title>\n')
  await symlink(join(directory, 'secret.txt'), join(page, 'assets', 'leak.js'))
})
afterEach(async () => {
  for (const client of open.clients.splice(0)) client.close()
  for (const server of open.servers.splice(0)) await server.close()
})
afterAll(async () => {
  await rm(directory, { recursive: true, force: true })
})

async function start(options: Partial<ViewServerOptions> = {}): Promise<ViewServer> {
  const server = await startViewServer({ sources: [{ argument: 'runs', path: join(directory, 'runs') }], port: 0, staticDirectory: page, ...options })
  open.servers.push(server)
  return server
}

describe('ludic view against hostile files and requests', () => {
  it('shows what it can of a hostile trajectories.jsonl and says what it skipped; model text stays a JSON string', async () => {
    const server = await start()
    const id = runId(run)
    const answer = await rawRequest(server.url, `/api/runs/${id}/episodes`)
    expect(answer.status).toBe(200)
    expect(answer.headers['content-type']).toBe('application/json; charset=utf-8')
    expect(answer.headers['content-security-policy']).toContain("default-src 'self'")
    expect(answer.headers['x-content-type-options']).toBe('nosniff')
    const list = JSON.parse(answer.body) as { total: number; episodes: { index: number }[]; skipped: { line: number; reason: string }[] }
    expect(list.episodes.map((episode) => episode.index)).toEqual([3, 4])
    expect(list.skipped).toEqual([
      { line: 1, reason: expect.stringMatching(/^longer than 1048576 bytes \(\d{7} bytes\): not read$/) },
      { line: 2, reason: 'invalid JSON' },
      { line: 5, reason: expect.stringContaining('incomplete last line') },
    ])
    const episode = await rawRequest(server.url, `/api/runs/${id}/episodes/3`)
    expect(episode.status).toBe(200)
    expect(episode.headers['content-type']).toBe('application/json; charset=utf-8')
    expect(episode.body).not.toContain('<script>') // `<` goes out as \u003c: no client reads markup in it
    expect(episode.body).toContain('\\u003cscript>')
    expect((JSON.parse(episode.body) as { turns: { response: string }[] }).turns[0]!.response).toBe(script)
    const skipped = await rawRequest(server.url, `/api/runs/${id}/episodes/1`)
    expect(skipped.status).toBe(422)
    expect(JSON.parse(skipped.body)).toEqual({
      error: { code: 'invalid_record', message: expect.stringMatching(/^Line 1 of trajectories\.jsonl is not shown: longer than 1048576 bytes/) },
    })
    expect(skipped.body.length).toBeLessThan(1000) // the line itself is never sent
  })

  it('never serves a file outside the runs and the page: .., encoded .., separators, absolute ids, symbolic links out', async () => {
    const server = await start()
    const id = runId(run)
    const paths: [string, number][] = [
      ['/assets/../../secret.txt', 400],
      ['/assets/%2e%2e/%2e%2e/secret.txt', 400],
      ['/assets/%2E%2E%2F%2E%2E%2Fsecret.txt', 400],
      ['/..%5c..%5csecret.txt', 400],
      ['/assets/leak.js%00.js', 400],
      ['/%2fetc%2fpasswd', 400],
      [`/api/runs/..%2F..%2F${id}/metrics`, 400],
      ['/api/runs/%2Fetc%2Fpasswd/metrics', 400],
      [`/api/runs/${encodeURIComponent(join(directory, 'secret.txt'))}/files`, 400],
      [`/api/runs/${encodeURIComponent(run)}/metrics`, 400],
      ['/api/runs/secret.txt/metrics', 404],
      [`/api/runs/${id}/../../secret.txt`, 400],
      ['/assets/leak.js', 404], // a link out of the page's folder
      ['/secret.txt', 404],
      ['/api/runs/%zz/metrics', 400],
      ['http://127.0.0.1/secret.txt', 400],
    ]
    for (const [path, status] of paths) {
      const answer = await rawRequest(server.url, path)
      expect(answer.status, path).toBe(status)
      expect(answer.body, path).not.toContain(secret)
      expect(answer.body, path).not.toContain(directory) // no path outside the runs in an error either
      expect(answer.headers['content-type'], path).toBe('application/json; charset=utf-8')
      expect(JSON.parse(answer.body), path).toEqual({ error: { code: expect.any(String), message: expect.any(String) } })
    }
    // Files linked out of a run directory are not read: the run's report, a run's metrics.
    const files = await rawRequest(server.url, `/api/runs/${id}/files`)
    expect(JSON.parse(files.body)).toEqual({ reportFiles: [], tables: [] })
    const linked = await rawRequest(server.url, `/api/runs/${runId(join(directory, 'runs', 'linked-out'))}/metrics`)
    expect(linked.status).toBe(200)
    expect(linked.body).not.toContain(secret)
    expect(JSON.parse(linked.body)).toEqual({
      records: [],
      skipped: [{ line: 0, reason: 'metrics.jsonl is a symbolic link out of the run directory: not read' }],
      skippedCount: 1,
    })
  })

  it('reads only (405 with Allow for POST, PUT, DELETE), and refuses a Host header it does not know (DNS rebinding)', async () => {
    const server = await start()
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']) {
      const answer = await rawRequest(server.url, '/api/runs', { method, headers: { 'content-type': 'application/json' }, body: '{}' })
      expect(answer.status, method).toBe(405)
      expect(answer.headers.allow).toBe('GET, HEAD')
      expect(JSON.parse(answer.body).error.code).toBe('method_not_allowed')
    }
    const rebound = await rawRequest(server.url, '/api/runs', { headers: { host: `evil.example:${server.port}` } })
    expect(rebound.status).toBe(403)
    expect(JSON.parse(rebound.body).error.code).toBe('host_not_allowed')
    expect(rebound.body).not.toContain('hostile')
    expect((await rawRequest(server.url, '/', { headers: { host: 'evil.example' } })).status).toBe(403)
    expect((await rawRequest(server.url, '/api/runs', { headers: { host: `localhost:${server.port}` } })).status).toBe(200)
    const named = await start({ allowedHosts: ['viewer.lan'] })
    expect((await rawRequest(named.url, '/api/runs', { headers: { host: 'viewer.lan' } })).status).toBe(200)
    expect((await rawRequest(named.url, '/api/runs', { headers: { host: 'other.lan' } })).status).toBe(403)
  })

  it('bounds event-stream clients (503 past the limit) and cuts one that stops reading', async () => {
    const live = join(directory, 'live')
    await mkdir(join(live, 'growing'), { recursive: true })
    const path = join(live, 'growing', 'metrics.jsonl')
    await writeFile(path, jsonLines([{ step: 1 }]))
    const server = await start({ sources: [{ argument: 'live', path: live }], maxEventClients: 2, maxStreamBufferBytes: 64 << 10 })
    const reader = await openEventClient(server.url)
    open.clients.push(reader)
    await reader.next('runs')
    // A client that reads its headers and then nothing more.
    const stalled = await new Promise<import('node:http').IncomingMessage>((resolve, reject) => {
      const { hostname, port } = new URL(server.url)
      request({ host: hostname, port, path: '/api/events' }, (response) => {
        response.pause()
        resolve(response)
      })
        .on('error', reject)
        .end()
    })
    expect(server.stats().eventClients).toBe(2)
    const third = await rawRequest(server.url, '/api/events')
    expect(third.status).toBe(503)
    expect(JSON.parse(third.body).error.code).toBe('too_many_clients')
    // Big metrics records (~200 KiB each) until the stalled client's socket buffers are full and it is cut.
    const fields = Object.fromEntries(Array.from({ length: 10_000 }, (_, index) => [`metric/${index}`, index + 0.5]))
    for (let step = 2; step < 202 && server.stats().slowClientsCut === 0; step++) {
      const pushed = reader.next<{ records: { step: number }[] }>('metrics', (data) => data.records.some((record) => record.step === step))
      await appendFile(path, jsonLines([{ step, ...fields }]))
      await pushed
    }
    expect(server.stats()).toEqual({ eventClients: 1, slowClientsCut: 1 })
    stalled.destroy()
    // The reader was never cut: it still gets what comes.
    const last = reader.next<{ records: { step: number }[] }>('metrics')
    await appendFile(path, jsonLines([{ step: 1000 }]))
    expect((await last).records).toEqual([{ step: 1000 }])
  })
})
