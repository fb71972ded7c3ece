import { join } from 'node:path'
import { createFakeHub, type FakeHub, filesFromDirectory } from '@ludic/hub/testing'
import { loadModel } from '@ludic/model'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../cli.js'
import { exitCodes } from '../errors.js'
import { captureIo, saveTinyModel, useBackendAndDirectory } from '../test/support.js'
import type { DownloadSummary } from './download.js'

const temporaryDirectory = useBackendAndDirectory('ludic-cli-download-')
let hub: FakeHub
const environment = { HF_ENDPOINT: process.env.HF_ENDPOINT, HF_HUB_CACHE: process.env.HF_HUB_CACHE }

beforeAll(async () => {
  const model = await saveTinyModel(join(temporaryDirectory(), 'tiny'))
  hub = await createFakeHub({ repos: [{ id: 'ludic-test/tiny', files: await filesFromDirectory(model) }] })
  process.env.HF_ENDPOINT = hub.endpoint
  process.env.HF_HUB_CACHE = join(temporaryDirectory(), 'cache')
})
afterAll(async () => {
  for (const [name, value] of Object.entries(environment)) {
    if (value === undefined) delete process.env[name]
    else process.env[name] = value
  }
  await hub?.close()
})

describe('ludic download', () => {
  it('downloads a repo into the Hub cache with a byte progress bar and prints the snapshot directory', async () => {
    const { io, stdout, stderr } = captureIo()
    expect(await runCli(['download', 'ludic-test/tiny', '--cache-dir', join(temporaryDirectory(), 'own-cache')], io)).toBe(exitCodes.ok)
    const directory = stdout().split('\n')[0]!
    expect(directory.startsWith(join(temporaryDirectory(), 'own-cache'))).toBe(true)
    expect(stdout()).toMatch(/\(5 files, \d+\.\d kB\)/)
    expect(stderr()).toMatch(/model\.safetensors \(\d\/\d\) \[#+\] [\d.]+ kB\/[\d.]+ kB/)
    const model = await loadModel(directory)
    expect(model.config.vocabSize).toBe(280)
    model.dispose()
    const json = captureIo()
    expect(await runCli(['--json', 'download', 'ludic-test/tiny', '--tokenizer-only'], json.io)).toBe(exitCodes.ok)
    expect((JSON.parse(json.stdout()) as DownloadSummary).files).toEqual(['tokenizer.json', 'tokenizer_config.json'])
  })

  it('serves a repo id: ludic serve downloads it first', async () => {
    const { io, controller, stdout } = captureIo()
    io.onListening = () => controller.abort()
    expect(await runCli(['serve', 'ludic-test/tiny', '--port', '0'], io)).toBe(exitCodes.interrupted)
    expect(stdout()).toContain('serving ludic-test/tiny at http://127.0.0.1:')
  })
  it('is not found (3) for a missing repo and a network error (4) when the Hub fails', async () => {
    const missing = captureIo()
    expect(await runCli(['download', 'ludic-test/none'], missing.io)).toBe(exitCodes.notFound)
    hub.injectFault({ kind: 'status', route: 'api', status: 503, times: 100 })
    const failing = captureIo()
    expect(await runCli(['download', 'ludic-test/tiny', '--refresh'], failing.io)).toBe(exitCodes.network)
    expect(failing.stderr()).toContain('ludic: ')
  })
})
