import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { type BrowserContext, chromium, type Page } from 'playwright-core'
import { afterAll, beforeAll, beforeEach, describe, expect, it, onTestFailed } from 'vitest'
import { runCli } from '../cli.js'
import { exitCodes } from '../errors.js'
import { captureIo, tinyOverrides, useBackendAndDirectory } from '../test/support.js'
import { defaultStaticDirectory } from '../view/view-server.js'

// `ludic view` in a real browser: Debian's Chromium (`.ci/run` installs it and sets LUDIC_CHROMIUM), driven by
// playwright-core (no browser download), against the command over run directories this file makes: a tiny real
// self-play run (`ludic train`: metrics, trajectories, checkpoints) and a hostile one written by hand (HTML and script
// in model text, invalid JSON, a line over 1 MiB, a line that is not the schema). Screenshots of each view go to
// LUDIC_SCREENSHOTS when set. Every wait is bounded (a hang fails the test instead of stalling CI).

const chromiumPath = process.env.LUDIC_CHROMIUM
const screenshots = process.env.LUDIC_SCREENSHOTS
/** Bound of each wait for the page: it catches a hang; it is not a speed check. */
const wait = { timeout: 60_000 }

/** A small self-play run of Kuhn Poker, two steps (a curve, not a point), a checkpoint every step (so `--resume` can add a third while the page is open). */
const kuhnConfig = [
  `model: ${JSON.stringify({ preset: 'tiny', seed: 2, overrides: tinyOverrides })}`,
  'tokenizer: { train: { vocabSize: 280, episodes: 8 } }',
  'environments:',
  '  - game: kuhn-poker-v1',
  'prompt: kuhn-terse',
  'chatTemplate: "{{ messages[-1][\'content\'] }}\\n>"',
  'evaluation: { every: 1, episodes: 4, opponents: [random] }',
  'batch: { episodesPerStep: 4, miniBatchSize: 8, ppoEpochs: 1, maxTokens: 4 }',
  'checkpointEvery: 1',
  'steps: 2',
  'runDirectory: runs/kuhn',
  '',
].join('\n')

const hostileText = '<script>alert(1)</script><img src=x onerror="window.__ludicInjected = true">'

/** A run directory written by hand: one good episode whose model text is HTML, and three lines the server must skip. */
async function writeHostileRun(directory: string): Promise<void> {
  await mkdir(directory, { recursive: true })
  await writeFile(
    join(directory, 'metrics.jsonl'),
    `${[1, 2].map((step) => JSON.stringify({ step, 'reward/roleplay-v1/character': step / 4, loss: 1 / step })).join('\n')}\n`,
  )
  const tokens = ['Ahoy ', '<script>', 'alert(1)', '</script>', '<img src=x onerror="window.__ludicInjected = true">']
  const record = {
    format: 'ludic.trajectory.v1',
    step: 2,
    policyVersion: 1,
    trainer: 'cpo',
    episode: {
      id: 'hostile-1',
      environmentId: 'roleplay-v1',
      seed: 7,
      groupId: 'group-1',
      roles: ['character'],
      returns: { character: 0.5 },
      done: true,
      truncated: false,
      external: false,
    },
    turns: [
      {
        index: 0,
        role: 'character',
        observation: `<b>bold?</b> ${hostileText}`,
        action: hostileText,
        rewards: { character: 0.5 },
        invalidAction: false,
        trained: true,
        prompt: `Stay in character. ${hostileText}`,
        response: `Ahoy ${hostileText}`,
        tokens,
        tokenIds: [11, 12, 13, 14, 15],
        logprobs: [-0.1, -2.5, -0.4, -0.2, null],
        advantages: [0.4, -0.8, 0.1, 0, 0.6],
      },
    ],
    render: `board ${hostileText}`,
    judgement: {
      scorer: 'group-judge',
      score: 0.5,
      rank: 2,
      groupEpisodeIds: ['hostile-0', 'hostile-1', 'hostile-2'],
      groupScores: [0.9, 0.5, 0.1],
      groupRanking: [1, 2, 3],
      rawText: [`Ranking: B > A > C. ${hostileText}`],
      agreement: 0.75,
    },
  }
  const lines = [
    JSON.stringify(record),
    '{"format": "ludic.trajectory.v1", "step": 2, cut short',
    JSON.stringify({ ...record, response: 'x'.repeat(1_100_000) }),
    JSON.stringify({ ...record, format: 'something else' }),
  ]
  await writeFile(join(directory, 'trajectories.jsonl'), `${lines.join('\n')}\n`)
}

/** `ludic view <directories> --port 0 --no-open`, in this process, until `close`. */
async function startView(directories: string[]): Promise<{ url: string; close: () => Promise<void> }> {
  const { io, controller, stderr } = captureIo()
  let listening: (url: string) => void = () => {}
  const url = new Promise<string>((resolve) => (listening = resolve))
  const running = runCli(['view', ...directories, '--port', '0', '--no-open'], { ...io, onListening: listening })
  const first = await Promise.race([url, running.then((code) => ({ code }))])
  if (typeof first !== 'string') throw new Error(`ludic view exited ${first.code} before listening: ${stderr()}`)
  return {
    url: first,
    close: async () => {
      controller.abort()
      expect(await running, stderr()).toBe(exitCodes.interrupted)
    },
  }
}

describe.runIf(chromiumPath !== undefined)('[opt-in] ludic view in Chromium (LUDIC_CHROMIUM)', () => {
  const temporaryDirectory = useBackendAndDirectory('ludic-cli-view-browser-')
  let view: { url: string; close: () => Promise<void> } | undefined
  let context: BrowserContext | undefined
  let page: Page
  let config: string
  /** Console errors, uncaught exceptions and failed requests of the page: none is allowed. */
  const problems: string[] = []

  const screenshot = async (name: string) => {
    if (screenshots !== undefined) await page.screenshot({ path: join(screenshots, `${name}.png`) })
  }

  beforeAll(async () => {
    const built = join(defaultStaticDirectory(), 'index.html')
    if (!existsSync(built)) throw new Error(`${built} is missing: build the page first (npm run build --workspace @ludic/cli; npm test does)`)
    const directory = temporaryDirectory()
    config = join(directory, 'kuhn.yaml')
    await writeFile(config, kuhnConfig)
    const train = captureIo()
    expect(await runCli(['--quiet', 'train', config], train.io), train.stderr()).toBe(exitCodes.ok)
    await writeHostileRun(join(directory, 'runs', 'hostile'))
    if (screenshots !== undefined) await mkdir(screenshots, { recursive: true })

    view = await startView([join(directory, 'runs')])
    context = await chromium.launchPersistentContext(await mkdtemp(join(directory, 'chromium-profile-')), {
      executablePath: chromiumPath!,
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
      viewport: { width: 1280, height: 800 },
    })
    page = context.pages()[0] ?? (await context.newPage())
    page.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning') problems.push(`console ${message.type()}: ${message.text()}`)
    })
    page.on('pageerror', (error) => problems.push(`uncaught: ${error.message}`))
    // A request the page cancels itself (a filter changed before the answer came) is not a failure.
    page.on('requestfailed', (request) => {
      const reason = request.failure()?.errorText ?? ''
      if (reason !== 'net::ERR_ABORTED') problems.push(`request failed: ${request.url()} ${reason}`)
    })
    page.on('dialog', (dialog) => {
      problems.push(`dialog: ${dialog.message()}`)
      void dialog.dismiss()
    })
  })

  // Each test starts with no problem noted, and a failure (a wait that ran out, say) prints what the page reported.
  beforeEach(() => {
    problems.length = 0
    onTestFailed(() => {
      if (problems.length > 0) console.error(`the page reported:\n${problems.join('\n')}`)
    })
  })

  afterAll(async () => {
    await context?.close()
    await view?.close()
  })

  /** A fresh load of the page on `tab`, with the run named `name` in focus. */
  const open = async (name: string, tab: 'runs' | 'episodes' | 'tables') => {
    await page.goto('about:blank')
    await page.goto(`${view!.url}#/${tab}`)
    await page.locator('[data-testid="run-item"]', { hasText: name }).getByRole('button').click(wait)
    await page.locator('[data-testid="live-step"]').waitFor(wait)
  }
  const rewardChart = () => page.locator('[data-testid="metric-chart"][data-metric^="reward/kuhn-poker-v1/"]').first()

  it('loads with no console error and draws the run’s reward curve', async () => {
    await open('kuhn', 'runs')
    expect(await page.getByTestId('run-item').allTextContents()).toEqual(
      expect.arrayContaining([expect.stringContaining('kuhn'), expect.stringContaining('hostile')]),
    )
    // The curve: a line mark drawn through the two steps ("M x,y L x,y"), inside the chart's SVG.
    const curve = rewardChart().locator('svg path[aria-roledescription="line mark"]')
    await curve.first().waitFor({ ...wait, state: 'attached' })
    const lines = await curve.evaluateAll((paths) => paths.map((path) => path.getAttribute('d') ?? ''))
    expect(lines.some((d) => /^M-?[\d.]+,-?[\d.]+L-?[\d.]+,-?[\d.]+/.test(d))).toBe(true)
    expect(await page.getByTestId('live-step').textContent()).toBe('step 2')
    await screenshot('runs')
    expect(problems).toEqual([])
  })

  it('opens an episode of the run and colours its response tokens by advantage', async () => {
    await open('kuhn', 'episodes')
    await page.getByTestId('episode-item').first().click(wait)
    await page.getByTestId('transcript').waitFor(wait)
    const tokens = page.locator('[data-testid="token"][data-advantage]')
    await tokens.first().waitFor(wait)
    const coloured = await tokens.evaluateAll((elements) =>
      elements.map((element) => ({
        advantage: Number(element.getAttribute('data-advantage')),
        background: element.ownerDocument.defaultView?.getComputedStyle(element).backgroundColor,
      })),
    )
    expect(coloured.length).toBeGreaterThan(0)
    for (const { advantage, background } of coloured) {
      expect(Number.isFinite(advantage)).toBe(true)
      expect(background).toMatch(/^rgba?\(/)
    }
    // A nonzero advantage shows (blue up, red down), never transparent.
    const nonzero = coloured.filter(({ advantage }) => advantage !== 0)
    expect(nonzero.length).toBeGreaterThan(0)
    for (const { background } of nonzero) expect(background).not.toBe('rgba(0, 0, 0, 0)')
    expect(await tokens.first().getAttribute('title')).toMatch(/^advantage [+-]?[\d.]+/)
    await page.getByTestId('legend').waitFor(wait)
    await screenshot('episode')
    expect(problems).toEqual([])
  })

  it('shows hostile model text as text, never as markup, and says which lines it skipped', async () => {
    await open('hostile', 'episodes')
    await page.getByTestId('episode-item').first().click(wait)
    await page.getByTestId('judgement').waitFor(wait)
    const transcript = page.getByTestId('transcript')
    await expect.poll(() => transcript.textContent(), wait).toContain('<script>alert(1)</script>')
    expect(await transcript.textContent()).toContain('<img src=x onerror="window.__ludicInjected = true">')
    expect(await page.getByTestId('judge-text').textContent()).toContain(hostileText)
    expect(await page.getByTestId('render').textContent()).toBe(`board ${hostileText}`)
    // No element came out of the model's text: no <img> or <script> in the page's body, nothing ran.
    expect(await page.locator('body img, body script').count()).toBe(0)
    expect(await page.evaluate(() => (globalThis as { __ludicInjected?: boolean }).__ludicInjected)).toBeUndefined()
    // The three bad lines, named with their line numbers.
    const skipped = await page.getByTestId('episodes-skipped').textContent()
    expect(skipped).toMatch(/^trajectories\.jsonl: 3 lines skipped: /)
    for (const line of [' at 2', ' at 3', ' at 4']) expect(skipped).toContain(line)
    await screenshot('hostile')
    expect(problems).toEqual([])
  })

  it('shows the run’s evaluation with its interval', async () => {
    await open('kuhn', 'tables')
    const table = page.getByTestId('run-table').first()
    await table.waitFor(wait)
    const row = await table.locator('tbody tr', { hasText: 'random' }).first().textContent()
    expect(row).toMatch(/\[[\d.]+, [\d.]+\]/) // the win rate with its Wilson interval
    await screenshot('tables')
    expect(problems).toEqual([])
  })

  it('updates without a reload when the run writes a new step', async () => {
    await open('kuhn', 'runs')
    await rewardChart()
      .locator('svg path[aria-roledescription="line mark"]')
      .first()
      .waitFor({ ...wait, state: 'attached' })
    expect(await page.getByTestId('live-step').textContent()).toBe('step 2')
    expect(await rewardChart().getAttribute('data-points')).toBe('2')
    const episodes = async () => Number(/^(\d+) episodes$/.exec((await page.getByTestId('live-episodes').textContent()) ?? '')?.[1] ?? Number.NaN)
    await expect.poll(episodes, wait).toBeGreaterThan(0)
    const episodesBefore = await episodes()
    const navigations: string[] = []
    page.on('framenavigated', (frame) => navigations.push(frame.url()))
    // One more step of the same run (resumed from its checkpoint) while the page stays open.
    const train = captureIo()
    expect(await runCli(['--quiet', 'train', config, '--resume', '--steps', '3'], train.io), train.stderr()).toBe(exitCodes.ok)
    const lines = (await readFile(join(temporaryDirectory(), 'runs', 'kuhn', 'metrics.jsonl'), 'utf8')).trim().split('\n')
    expect(lines).toHaveLength(3)
    await page.locator('[data-testid="live-step"]', { hasText: 'step 3' }).waitFor(wait)
    await expect.poll(() => rewardChart().getAttribute('data-points'), wait).toBe('3')
    await expect.poll(episodes, wait).toBeGreaterThan(episodesBefore)
    expect(navigations).toEqual([])
    await screenshot('live')
    expect(problems).toEqual([])
  })
})
