/**
 * The playground's training in Chromium against the same training in Node, side by side on this machine, one run:
 * `npm run bench --workspace playground [-- --steps 8] [--full] [--backends webgl,webgpu]`.
 *
 * - step speed: the same session (Kuhn Poker, the example's recipe and seed) warmed up, then `--steps` self-play steps
 *   on WebAssembly in Node and in the page (Web Worker); the median step time of steps 2… (the first builds the
 *   trainer) and their ratio (Node time / browser time: ≥ 1 means the tab is as fast);
 * - `--backends`: the same steps on the page's other backends (WebGL, WebGPU: software, SwiftShader here), as they are;
 * - `--full`: the whole recipe (warm-up, 100 steps, evaluations every 10) in both, time to exploitability ≤ 0.10 and
 *   total time.
 * Writes `runs/browser-vs-node.json` and `.md` beside this folder's README. Needs the page built and LUDIC_CHROMIUM
 * (or /usr/bin/chromium).
 */
import { mkdir, writeFile } from 'node:fs/promises'
import { availableParallelism, cpus } from 'node:os'
import { parseArgs } from 'node:util'
import { initTensors } from '@ludic/tensors'
import { chromium, type Page } from 'playwright-core'
import type { Evaluation } from '../src/session.js'
import { PlaygroundSession } from '../src/session.js'
import { chromiumArguments, serveBuild } from '../src/serve-build.js'

const { values } = parseArgs({
  options: {
    steps: { type: 'string', default: '8' },
    full: { type: 'boolean', default: false },
    backends: { type: 'string', default: 'webgl,webgpu' },
    seed: { type: 'string', default: '0' },
  },
})
const steps = Number(values.steps)
const seed = Number(values.seed)
const otherBackends = values.backends.split(',').filter(Boolean)
const executablePath = process.env.LUDIC_CHROMIUM ?? '/usr/bin/chromium'

const median = (numbers: readonly number[]) => {
  const sorted = [...numbers].sort((a, b) => a - b)
  return sorted.length === 0 ? Number.NaN : (sorted[Math.floor((sorted.length - 1) / 2)]! + sorted[Math.ceil((sorted.length - 1) / 2)]!) / 2
}

interface Run {
  where: string
  backend: string
  stepSeconds: number[]
  evaluations: (Evaluation & { seconds: number })[]
  seconds: number
}

/** The recipe in Node: warm-up, `count` steps, evaluations as the page makes them. */
async function nodeRun(count: number, evaluateEvery: number): Promise<Run> {
  const runtime = await initTensors({ backend: 'wasm', verbose: false })
  const started = performance.now()
  const session = PlaygroundSession.create({ game: 'kuhn', seed, steps: Math.max(count, 1), evaluateEvery })
  const evaluations: Run['evaluations'] = []
  const evaluate = async () => evaluations.push({ ...(await session.evaluate()), seconds: (performance.now() - started) / 1000 })
  await session.warmUp()
  await evaluate()
  const stepSeconds: number[] = []
  for (let step = 1; step <= count; step++) {
    stepSeconds.push((await session.trainStep()).seconds)
    if ((evaluateEvery > 0 && step % evaluateEvery === 0) || step === count) await evaluate()
  }
  session.dispose()
  return { where: 'node', backend: runtime.backend, stepSeconds, evaluations, seconds: (performance.now() - started) / 1000 }
}

/** The same in the page (a Web Worker), on `backend`. */
async function browserRun(page: Page, url: string, backend: string, count: number, evaluateEvery: number): Promise<Run> {
  await page.goto('about:blank')
  await page.goto(`${url}/?game=kuhn&backend=${backend}&seed=${seed}&steps=${count}&evaluateEvery=${evaluateEvery}&autostart=1`)
  const started = performance.now()
  for (;;) {
    const state = await page.evaluate(() => (window as unknown as { playground: { state: { phase: string; errors: string[] } } }).playground.state)
    if (state.phase === 'done') break
    if (state.phase === 'error' || state.errors.length > 0) throw new Error(`the page failed on ${backend}: ${state.errors.join('; ')}`)
    if (performance.now() - started > 3_600_000) throw new Error(`no end after an hour on ${backend}`)
    await new Promise((resolve) => setTimeout(resolve, 1000))
  }
  const state = await page.evaluate(
    () =>
      (
        window as unknown as {
          playground: { state: { backend: string; reports: { seconds: number }[]; evaluations: Evaluation[]; evaluationSeconds: number[] } }
        }
      ).playground.state,
  )
  return {
    where: 'chromium',
    backend: state.backend,
    stepSeconds: state.reports.map((report) => report.seconds),
    evaluations: state.evaluations.map((evaluation, index) => ({ ...evaluation, seconds: state.evaluationSeconds[index]! })),
    seconds: (performance.now() - started) / 1000,
  }
}

const timeToTarget = (run: Run) => run.evaluations.find((evaluation) => (evaluation.exploitability ?? 1) <= 0.1)
const site = await serveBuild()
const context = await chromium.launchPersistentContext('', { executablePath, headless: true, args: chromiumArguments })
const page = context.pages()[0] ?? (await context.newPage())
const browserVersion = context.browser()?.version() ?? (await page.evaluate(() => navigator.userAgent))
const lines: string[] = []
const result: Record<string, unknown> = {
  machine: { cores: availableParallelism(), cpu: cpus()[0]?.model, node: process.version, chromium: browserVersion },
  seed,
  steps,
}
try {
  console.error(`step speed: ${steps} steps, Node then Chromium (WebAssembly)`)
  const node = await nodeRun(steps, 0)
  const tab = await browserRun(page, site.url, 'wasm', steps, 0)
  const nodeStep = median(node.stepSeconds.slice(1))
  const tabStep = median(tab.stepSeconds.slice(1))
  result.speed = { node, browser: tab, nodeMedianStepSeconds: nodeStep, browserMedianStepSeconds: tabStep, ratio: nodeStep / tabStep }
  lines.push(
    '## A self-play step, Kuhn Poker (tiny model, 128 episodes, 2 PPO epochs), WebAssembly',
    '',
    '| where | backend | median s/step (steps 2…) | ratio (Node / here) |',
    '|---|---|---|---|',
    `| Node ${process.version} | ${node.backend} | ${nodeStep.toFixed(2)} | 1.00 |`,
    `| Chromium ${browserVersion} (Web Worker) | ${tab.backend} | ${tabStep.toFixed(2)} | ${(nodeStep / tabStep).toFixed(2)} |`,
  )
  const speedTableEnd = lines.length
  const otherLines: string[] = []
  if (values.full) {
    console.error('the full recipe: Node, then Chromium (WebAssembly)')
    const fullNode = await nodeRun(100, 10)
    const fullTab = await browserRun(page, site.url, 'wasm', 100, 10)
    result.full = { node: fullNode, browser: fullTab }
    const describe = (run: Run) => {
      const target = timeToTarget(run)
      return `${target === undefined ? 'not reached' : `${target.seconds.toFixed(0)} s (step ${target.step})`} | ${run.evaluations.at(-1)!.exploitability!.toFixed(3)} | ${run.seconds.toFixed(0)} s`
    }
    const ratio = (timeToTarget(fullTab)?.seconds ?? Number.NaN) / (timeToTarget(fullNode)?.seconds ?? Number.NaN)
    lines.push(
      '',
      '## The whole recipe (warm-up, 100 steps, evaluation every 10), WebAssembly',
      '',
      '| where | time to exploitability ≤ 0.10 | exploitability after 100 steps | total |',
      '|---|---|---|---|',
      `| Node | ${describe(fullNode)} |`,
      `| Chromium | ${describe(fullTab)} |`,
      '',
      `Time to target, Chromium / Node: ${ratio.toFixed(2)}×.`,
    )
  }
  for (const backend of otherBackends) {
    // Each in a browser of its own: a backend that crashes the page (software WebGL can) does not take the others along.
    console.error(`step speed on ${backend}`)
    const own = await chromium.launchPersistentContext('', { executablePath, headless: true, args: chromiumArguments })
    try {
      const ownPage = own.pages()[0] ?? (await own.newPage())
      const other = await browserRun(ownPage, site.url, backend, Math.min(steps, 4), 0)
      const otherStep = median(other.stepSeconds.slice(1))
      result[backend] = { run: other, medianStepSeconds: otherStep }
      otherLines.push(`| Chromium (Web Worker) | ${other.backend} (software) | ${otherStep.toFixed(2)} | ${(nodeStep / otherStep).toFixed(2)} |`)
    } catch (error) {
      result[backend] = { error: String(error) }
      otherLines.push(`| Chromium (Web Worker) | ${backend} | failed: ${String(error).replace(/\s+/g, ' ').slice(0, 400)} | |`)
    } finally {
      await own.close().catch(() => {})
    }
  }
  lines.splice(speedTableEnd, 0, ...otherLines)
} finally {
  await context.close()
  await site.close()
}
const report = `${lines.join('\n')}\n\nMachine: ${availableParallelism()} cores (${cpus()[0]?.model ?? 'unknown'}), seed ${seed}, ${new Date().toISOString()}.\n`
console.log(report)
const folder = new URL('../runs/', import.meta.url)
await mkdir(folder, { recursive: true })
await writeFile(new URL('browser-vs-node.json', folder), `${JSON.stringify(result, null, 2)}\n`)
await writeFile(new URL('browser-vs-node.md', folder), report)
