import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadModel } from '@ludic/model'
import { initTensors } from '@ludic/tensors'
import { loadTokenizer } from '@ludic/tokenizer'
import { strToU8, unzipSync, zipSync } from 'fflate'
import { type BrowserContext, chromium, type Page } from 'playwright-core'
import { afterAll, beforeAll, beforeEach, describe, expect, it, onTestFailed } from 'vitest'
import { buildDirectory, chromiumArguments, serveBuild } from './serve-build.js'
import { lastLogits, PlaygroundSession } from './session.js'

// The playground in a real browser: Debian's Chromium (`.ci/run` installs it and sets LUDIC_CHROMIUM), driven by
// playwright-core (no browser download), on the built page (`npm run build --workspace playground`; `npm test`
// builds it) served here with cross-origin isolation. Kuhn Poker self-play on WebAssembly for 20 steps, a TicTacToe
// game by clicks, a preference learnt with DPO, a downloaded model loaded in Node with the same logits, and the WebGPU
// and WebGL backends (software: SwiftShader) against WebAssembly. Screenshots go to LUDIC_SCREENSHOTS when set. Every
// wait is bounded: a hang fails the test instead of stalling CI.

const chromiumPath = process.env.LUDIC_CHROMIUM
const screenshots = process.env.LUDIC_SCREENSHOTS
/** Bounds of the waits: they catch a hang; they are not speed checks. */
const wait = { timeout: 60_000 }
const trainingWait = { timeout: 1_500_000, intervals: [1000] }

interface PageState {
  phase: string
  backend?: string
  step: number
  warmedUp?: { exploitability?: number }
  evaluations: { step: number; exploitability?: number; winRate: number }[]
  errors: string[]
}

describe.runIf(chromiumPath !== undefined)('[opt-in] the playground in Chromium (LUDIC_CHROMIUM)', () => {
  let site: { url: string; close(): Promise<void> } | undefined
  let context: BrowserContext | undefined
  let page: Page
  let directory: string
  const extra = new Map<string, Uint8Array>()
  /** Console errors, uncaught exceptions and failed requests of the page: none is allowed. */
  const problems: string[] = []

  const screenshot = async (name: string) => {
    if (screenshots !== undefined) await page.screenshot({ path: join(screenshots, `playground-${name}.png`), fullPage: true })
  }
  const pageState = () => page.evaluate(() => (window as unknown as { playground: { state: PageState } }).playground.state)
  const ask = <T>(request: unknown) =>
    page.evaluate(
      (message) => (window as unknown as { playground: { request(request: unknown): Promise<unknown> } }).playground.request(message),
      request,
    ) as Promise<T>
  const open = async (query: string) => {
    await page.goto('about:blank')
    await page.goto(`${site!.url}/?${query}`)
    await page.locator('#status').waitFor(wait)
  }
  const finished = async () => {
    await expect
      .poll(async () => {
        const state = await pageState()
        if (state.phase === 'error') throw new Error(`the page failed: ${state.errors.join('; ')}`)
        return state.phase
      }, trainingWait)
      .toBe('done')
  }

  beforeAll(async () => {
    if (!existsSync(join(buildDirectory, 'index.html'))) {
      throw new Error(`${buildDirectory}index.html is missing: build the page first (npm run build --workspace playground; npm test does)`)
    }
    directory = await mkdtemp(join(tmpdir(), 'ludic-playground-browser-'))
    if (screenshots !== undefined) await mkdir(screenshots, { recursive: true })
    site = await serveBuild(extra)
    context = await chromium.launchPersistentContext(join(directory, 'profile'), {
      executablePath: chromiumPath!,
      headless: true,
      acceptDownloads: true,
      args: chromiumArguments,
      viewport: { width: 1200, height: 900 },
    })
    page = context.pages()[0] ?? (await context.newPage())
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console ${message.type()}: ${message.text()}`)
    })
    page.on('pageerror', (error) => problems.push(`uncaught: ${error.message}`))
    page.on('requestfailed', (request) => problems.push(`request failed: ${request.url()} ${request.failure()?.errorText ?? ''}`))
    page.on('dialog', (dialog) => {
      problems.push(`dialog: ${dialog.message()}`)
      void dialog.dismiss()
    })
    await initTensors({ backend: 'wasm', verbose: false })
  })

  beforeEach(() => {
    problems.length = 0
    onTestFailed(() => {
      if (problems.length > 0) console.error(`the page reported:\n${problems.join('\n')}`)
    })
  })

  afterAll(async () => {
    await context?.close()
    await site?.close()
    if (directory !== undefined) await rm(directory, { recursive: true, force: true, maxRetries: 5 })
  })

  it('trains Kuhn Poker by self-play on WebAssembly for 20 steps: exact exploitability falls below the warmed-up value', async () => {
    await open('game=kuhn&backend=wasm&steps=20&evaluateEvery=10&evaluationEpisodes=50&autostart=1')
    await finished()
    const state = await pageState()
    expect(state.backend).toBe('wasm')
    expect(state.step).toBe(20)
    const warmedUp = state.warmedUp?.exploitability
    const last = state.evaluations.at(-1)!
    expect(last.step).toBe(20)
    expect(warmedUp).toBeTypeOf('number')
    expect(last.exploitability).toBeLessThan(warmedUp!)
    expect(await page.locator('#metric-exploitability').textContent()).toBe(last.exploitability!.toFixed(3))
    await screenshot('training')
    expect(problems).toEqual([])
  })

  it('plays a TicTacToe game by clicks to its end, then learns a preference marked in the page (DPO)', async () => {
    await open('game=tictactoe&backend=wasm&sftSteps=20&steps=1&episodesPerStep=8&miniBatchSize=16&evaluationEpisodes=8&minimaxEpisodes=2&autostart=1')
    await finished()
    await page.locator('#new-game-first').click(wait)
    // Each click is answered with the board after the move and the model's reply, drawn at once: wait for it.
    const filled = () => page.locator('.board button').evaluateAll((cells) => cells.filter((cell) => cell.textContent !== '').length)
    for (let move = 0; move < 5; move++) {
      if (((await page.locator('#game-result').textContent()) ?? '').startsWith('Game over')) break
      const before = await filled()
      await page.locator('.board button:enabled').first().click(wait)
      await expect.poll(filled, wait).toBeGreaterThan(before)
    }
    await expect.poll(() => page.locator('#game-result').textContent(), wait).toMatch(/^Game over/)
    await screenshot('playing')

    // The model's last decision: mark its least likely move better than the best alternative, then train.
    const moves = page.locator('#decision li')
    const probabilities = await moves.evaluateAll((items) => items.map((item) => Number((item as HTMLElement).dataset.probability)))
    const least = probabilities.indexOf(Math.min(...probabilities))
    await moves.nth(least).locator('button[data-verdict="better"]').click(wait)
    await expect.poll(() => page.locator('#preference-count').textContent(), wait).toMatch(/^1 preference/)
    await page.locator('#train-preferences').click(wait)
    const after = page.locator('.preference-after').first()
    await after.waitFor(wait)
    const [before, now] = await after.evaluate((row) => [Number((row as HTMLElement).dataset.before), Number((row as HTMLElement).dataset.after)])
    expect(now).toBeGreaterThan(before! + 0.05)
    await screenshot('preference')
    expect(problems).toEqual([])
  })

  it('downloads the model as a zip that Node loads with the same logits (1e-5), loads one made in Node likewise and keeps it for the next visit; WebGPU and WebGL give the losses and logits of WebAssembly (1e-4)', async () => {
    await open('game=kuhn&backend=wasm&sftSteps=10&steps=1&episodesPerStep=8&miniBatchSize=16&evaluationEpisodes=8&autostart=1')
    await finished()
    const [download] = await Promise.all([page.waitForEvent('download', wait), page.locator('#download').click(wait)])
    const zip = await readFile((await download.path())!)
    const files = unzipSync(new Uint8Array(zip))
    const modelDirectory = join(directory, 'model')
    await mkdir(modelDirectory, { recursive: true })
    for (const [name, content] of Object.entries(files)) await writeFile(join(modelDirectory, name), content)
    const prompt = '[Player 0] [bet]\n[fold], [call]\ncard Q\n>'
    const { logits: pageLogits } = await ask<{ logits: number[] }>({ kind: 'logits', prompt })
    const model = await loadModel(modelDirectory)
    const tokenizer = await loadTokenizer(modelDirectory)
    const ids = tokenizer.encode(prompt, { addSpecialTokens: false })
    const nodeLogits = await lastLogits(model, ids)
    model.dispose()
    expect(pageLogits).toHaveLength(nodeLogits.length)
    expect(Math.max(...pageLogits.map((value, index) => Math.abs(value - nodeLogits[index]!)))).toBeLessThanOrEqual(1e-5)

    // A model made in Node (files as saveModel and the tokenizer write them, no recipe) loads in the page, same logits.
    const nodeSession = PlaygroundSession.create({ game: 'kuhn', sftSteps: 3, seed: 5 })
    await nodeSession.warmUp()
    const { 'playground.json': _recipe, ...nodeFiles } = await nodeSession.files()
    extra.set(
      '/node-model.zip',
      zipSync(Object.fromEntries(Object.entries(nodeFiles).map(([name, file]) => [name, typeof file === 'string' ? strToU8(file) : file]))),
    )
    const nodeSessionLogits = await lastLogits(nodeSession.model, nodeSession.tokenizer.encode(prompt, { addSpecialTokens: false }))
    nodeSession.dispose()
    await open('game=kuhn&backend=wasm')
    await page.locator('#load-url').fill(`${site!.url}/node-model.zip`)
    await page.locator('#load-url-form button[type="submit"]').click(wait)
    await expect.poll(async () => (await pageState()).phase, wait).toBe('done')
    const { logits: loadedLogits } = await ask<{ logits: number[] }>({ kind: 'logits', prompt })
    expect(Math.max(...loadedLogits.map((value, index) => Math.abs(value - nodeSessionLogits[index]!)))).toBeLessThanOrEqual(1e-5)
    // Kept in the browser's private file system, it is there on the next visit.
    await page.locator('#keep').click(wait)
    await page
      .locator('#kept')
      .filter({ hasText: /^kept: / })
      .waitFor(wait)
    await open('game=kuhn&backend=wasm')
    await page.locator('#restore:enabled').click(wait)
    await expect.poll(async () => (await pageState()).phase, wait).toBe('done')
    const { logits: keptLogits } = await ask<{ logits: number[] }>({ kind: 'logits', prompt })
    expect(keptLogits).toEqual(loadedLogits)

    // The same weights on each backend: the mean NLL of a few moves and the logits after a prompt.
    extra.set('/test-model.zip', new Uint8Array(zip))
    const examples = [
      { prompt, response: '[call]<|end|>' },
      { prompt: '[Player 1] [check]\n[check], [bet]\ncard K\n>', response: '[bet]<|end|>' },
    ]
    const probes: Record<string, { loss: number; logits: number[]; backend: string }> = {}
    for (const backend of ['wasm', 'webgl', 'webgpu']) {
      // The check reads with await, so it runs on a backend whose synchronous reads are wrong here too (asyncReadsOnly).
      await open(`game=kuhn&backend=${backend}&asyncReadsOnly=1`)
      await page.locator('#load-url').fill(`${site!.url}/test-model.zip`)
      await page.locator('#load-url-form button[type="submit"]').click(wait)
      await expect.poll(async () => (await pageState()).phase, wait).toBe('done')
      probes[backend] = await ask({ kind: 'probe', examples })
      expect(probes[backend]!.backend).toBe(backend)
    }
    for (const backend of ['webgl', 'webgpu']) {
      expect(Math.abs(probes[backend]!.loss - probes.wasm!.loss)).toBeLessThanOrEqual(1e-4)
      expect(Math.max(...probes[backend]!.logits.map((value, index) => Math.abs(value - probes.wasm!.logits[index]!)))).toBeLessThanOrEqual(1e-4)
    }
    // Training reads synchronously, and here (headless Chromium on SwiftShader, in a worker) a synchronous read on WebGPU
    // loses the device: Start on WebGPU is refused with initTensors' BackendError saying so, rather than training on a
    // lost device (on a machine whose WebGPU reads synchronously, this would train instead).
    await open('game=kuhn&backend=webgpu&sftSteps=1&steps=1&episodesPerStep=4&miniBatchSize=4&evaluationEpisodes=4&autostart=1')
    await expect.poll(async () => (await pageState()).errors.join(' '), wait).toMatch(/reads tensors synchronously wrong in this browser.*use wasm or webgl/)
    expect(await page.locator('#status').textContent()).toMatch(/^Error: .*reads tensors synchronously wrong/)
    problems.length = 0 // the refusal is the page's answer here, printed as an error by design
    expect(problems).toEqual([])
  })
})
