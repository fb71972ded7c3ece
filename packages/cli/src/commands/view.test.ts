import { mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../cli.js'
import { exitCodes } from '../errors.js'
import { captureIo } from '../test/support.js'
import { jsonLines, rawRequest } from '../test/view-support.js'
import { isLoopbackHost } from './view.js'

let directory: string
beforeAll(async () => {
  directory = await realpath(await mkdtemp(join(tmpdir(), 'ludic-cli-view-')))
  await mkdir(join(directory, 'runs', 'kuhn'), { recursive: true })
  await writeFile(join(directory, 'runs', 'kuhn', 'metrics.jsonl'), jsonLines([{ step: 1, loss: 0.5 }]))
  await writeFile(join(directory, 'notes.txt'), 'not a directory\n')
})
afterAll(async () => {
  await rm(directory, { recursive: true, force: true })
})

/** Runs `ludic …argv` (a `view`) until it listens, then `check(url)`, then Ctrl+C: the exit code and what it printed. */
async function viewUntilChecked(argv: readonly string[], check: (url: string) => Promise<void>) {
  const { io, controller, stdout, stderr } = captureIo({ cwd: directory })
  let checked: Promise<void> = Promise.resolve()
  io.onListening = (url) => {
    checked = check(url).finally(() => controller.abort())
  }
  const code = await runCli(argv, io)
  await checked
  return { code, stdout: stdout(), stderr: stderr() }
}

describe('ludic view', () => {
  it('prints its help with the options and examples', async () => {
    const { io, stdout } = captureIo()
    expect(await runCli(['view', '--help'], io)).toBe(exitCodes.ok)
    for (const text of [
      '<runs...>',
      '--port <n>',
      '--host <address>',
      '--allow-remote',
      '--allowed-host <name>',
      '--no-open',
      'Examples:',
      'ludic view runs/',
    ]) {
      expect(stdout()).toContain(text)
    }
    const all = captureIo()
    expect(await runCli(['--help'], all.io)).toBe(exitCodes.ok)
    expect(all.stdout()).toMatch(/\n {2}view \[options\] <runs\.\.\.>/)
  })

  it('serves the runs on loopback until Ctrl+C (exit 130), printing the URL', async () => {
    const { code, stdout, stderr } = await viewUntilChecked(['view', 'runs', '--port', '0', '--no-open'], async (url) => {
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/)
      const answer = await rawRequest(url, '/api/runs')
      expect(answer.status).toBe(200)
      expect(JSON.parse(answer.body).runs).toMatchObject([{ name: 'kuhn', step: 1 }])
    })
    expect(code).toBe(exitCodes.interrupted)
    expect(stdout).toMatch(/^viewing 1 run at http:\/\/127\.0\.0\.1:\d+\/\n$/)
    expect(stderr).toContain('Ctrl+C stops the server')
    const json = await viewUntilChecked(['--json', 'view', 'runs/kuhn', '--port', '0'], async () => {})
    expect(json.code).toBe(exitCodes.interrupted)
    expect(JSON.parse(json.stdout)).toEqual({ url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/$/), port: expect.any(Number), runs: 1 })
  })

  it('is input not found (3) for a missing directory or a file, naming the argument; usage (2) for a bad flag, a remote host or a busy port', async () => {
    const missing = captureIo({ cwd: directory })
    expect(await runCli(['view', 'runs', './no-such-runs', '--port', '0'], missing.io)).toBe(exitCodes.notFound)
    expect(missing.stderr()).toContain(`ludic: run directory './no-such-runs' not found (${join(directory, 'no-such-runs')})`)
    const file = captureIo({ cwd: directory })
    expect(await runCli(['view', 'notes.txt', '--port', '0'], file.io)).toBe(exitCodes.notFound)
    expect(file.stderr()).toContain("run directory 'notes.txt'")
    expect(file.stderr()).toContain('is not a directory')
    for (const argv of [['view'], ['view', 'runs', '--port', 'x'], ['view', 'runs', '--port', '-1'], ['view', 'runs', '--port', '70000']]) {
      const bad = captureIo({ cwd: directory })
      expect(await runCli(argv, bad.io), argv.join(' ')).toBe(exitCodes.usage)
      expect(bad.stderr()).not.toBe('')
    }
    const tooHigh = captureIo({ cwd: directory })
    expect(await runCli(['view', 'runs', '--port', '70000'], tooHigh.io)).toBe(exitCodes.usage)
    expect(tooHigh.stderr()).toContain("option '--port <n>' argument '70000' is invalid. --port must be an integer ≥ 0 and ≤ 65535")
    const remote = captureIo({ cwd: directory })
    expect(await runCli(['view', 'runs', '--host', '0.0.0.0', '--port', '0'], remote.io)).toBe(exitCodes.usage)
    expect(remote.stderr()).toContain('--host 0.0.0.0 is not a loopback address')
    expect(remote.stderr()).toContain('--allow-remote')
    const busy = createServer()
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve))
    try {
      const port = (busy.address() as { port: number }).port
      const taken = captureIo({ cwd: directory })
      expect(await runCli(['view', 'runs', '--port', String(port)], taken.io)).toBe(exitCodes.usage)
      expect(taken.stderr()).toContain(`cannot listen on 127.0.0.1:${port}: the port is in use`)
    } finally {
      await new Promise((resolve) => busy.close(resolve))
    }
  })

  it('tells loopback hosts from the others', () => {
    for (const host of ['127.0.0.1', '127.1.2.3', 'localhost', 'view.localhost', '::1', '[::1]']) expect(isLoopbackHost(host), host).toBe(true)
    for (const host of ['0.0.0.0', '::', '192.168.1.2', 'example.com', '128.0.0.1']) expect(isLoopbackHost(host), host).toBe(false)
  })
})
