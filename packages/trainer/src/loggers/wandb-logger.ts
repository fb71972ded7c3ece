import { randomBytes } from 'node:crypto'
import { appendFile, mkdir, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { arch, hostname, platform } from 'node:os'
import { basename, isAbsolute, join, resolve } from 'node:path'
import { FileSystemError, InvalidArgumentError, LudicError } from '@ludic/core'
import { stringify as stringifyYaml } from 'yaml'
import type { StepMetrics } from '../metrics-log.js'
import type { RunLoggerV1, RunStartV1 } from './run-logger.js'
import type { WandbEnvironment, WandbLoggerConfig } from './wandb-config.js'

export { wandbLoggerConfigSchema, type WandbEnvironment, type WandbLoggerConfig } from './wandb-config.js'

/** A W&B logger's settings once the environment's defaults are applied. */
export interface ResolvedWandbSettings {
  mode: 'online' | 'offline'
  project: string
  entity: string | undefined
  name: string | undefined
  directory: string
}

export function resolveWandbSettings(config: WandbLoggerConfig, environment: WandbEnvironment = process.env): ResolvedWandbSettings {
  const variable = (name: string) => {
    const value = environment[name]
    return value === undefined || value === '' ? undefined : value
  }
  const modeVariable = variable('WANDB_MODE')
  const mode =
    config.mode ?? (modeVariable === 'online' || modeVariable === 'offline' ? modeVariable : variable('WANDB_API_KEY') !== undefined ? 'online' : 'offline')
  return {
    mode,
    project: config.project ?? variable('WANDB_PROJECT') ?? 'ludic',
    entity: config.entity ?? variable('WANDB_ENTITY'),
    name: config.name,
    directory: config.directory ?? 'wandb',
  }
}

/** The parts of `@wandb/sdk` (0.5) the logger uses. */
interface WandbSdk {
  init(options: {
    project?: string
    entity?: string
    name?: string
    config?: unknown
    settings?: { apiKey?: string; baseUrl: string; offline?: boolean; silent?: boolean }
  }): Promise<WandbSdkRun>
}
interface WandbSdkRun {
  readonly id: string
  log(data: Record<string, unknown>, step?: number, commit?: boolean): void
  finish(code?: number): Promise<void>
  url(): string
}

export interface WandbLoggerOptions extends WandbLoggerConfig {
  /** The environment W&B's variables are read from. Default: `process.env`. */
  environment?: WandbEnvironment
  /** The wall clock in milliseconds since the epoch. Default: `Date.now`. */
  clock?: () => number
  /** Loads `@wandb/sdk` (online mode). Default: `import('@wandb/sdk')`. */
  importSdk?: () => Promise<unknown>
  /** Finds `@wandb/sdk`, synchronously, when the logger is made. Default: `require.resolve` from this package. */
  resolveSdk?: () => string
  /** How long `online` waits for W&B to create the run. Default: 120 seconds. */
  initTimeoutSeconds?: number
}

/**
 * Weights & Biases. `online`: each process that writes the run is a W&B run (the JavaScript SDK cannot resume one: a
 * resumed run is a new W&B run named `<name> (from step <k>)`, its steps continuing from the checkpoint's), its config the
 * run's configuration, each step's metrics one history row at `_step` = the step. `offline`: the same, written as
 * W&B's run files (`files/wandb-history.jsonl`, `wandb-summary.json`, `config.yaml`, `wandb-metadata.json`) in
 * `<directory>/offline-run-<YYYYMMDD_HHMMSS>-<id>/`; no connection is made. A value that is not finite is left out of
 * the row (as `metrics.jsonl` writes it `null`). Texts (transcripts) are not sent: TensorBoard and `trajectories.jsonl`
 * keep them.
 *
 * Online mode needs `@wandb/sdk` installed beside `@ludic/trainer` and `WANDB_API_KEY`: without either the logger is
 * refused when it is made (an `InvalidArgumentError` on `options.mode` saying what to install or set).
 */
export function createWandbLogger(options: WandbLoggerOptions = {}): RunLoggerV1 {
  const { environment = process.env, clock = Date.now, initTimeoutSeconds = 120 } = options
  const settings = resolveWandbSettings(options, environment)
  const problem = settings.mode === 'online' ? wandbOnlineProblem(options, environment) : undefined
  if (problem !== undefined) throw new InvalidArgumentError({ argument: 'options.mode', value: 'online', message: problem })
  let session: WandbSession | undefined
  return {
    specificationVersion: 'v1',
    name: 'wandb',
    async start(run) {
      const name =
        (settings.name ?? (run.directory === undefined ? undefined : basename(resolve(run.directory)))) +
        (run.resumedAtStep === undefined ? '' : ` (from step ${run.resumedAtStep})`)
      session =
        settings.mode === 'online'
          ? await startOnline(run, settings, name, options, environment, initTimeoutSeconds)
          : await startOffline(run, settings, name, clock)
    },
    async log(metrics) {
      if (session === undefined) throw new LudicError('the W&B logger was used before start() or after close()')
      await session.log(finiteRow(metrics))
    },
    text() {},
    async close() {
      const closing = session
      session = undefined
      await closing?.close()
    },
  }
}

interface WandbSession {
  log(row: { step: number; values: Record<string, number> }): Promise<void>
  close(): Promise<void>
}

const finiteRow = (metrics: StepMetrics) => ({
  step: metrics.step,
  values: Object.fromEntries(Object.entries(metrics).filter(([name, value]) => name !== 'step' && typeof value === 'number' && Number.isFinite(value))),
})

/** Why online mode cannot work here (no `@wandb/sdk` beside Ludic, no `WANDB_API_KEY`), or undefined. */
export function wandbOnlineProblem(options: Pick<WandbLoggerOptions, 'resolveSdk'>, environment: WandbEnvironment = process.env): string | undefined {
  try {
    ;(options.resolveSdk ?? (() => createRequire(import.meta.url).resolve('@wandb/sdk')))()
  } catch {
    return "W&B's online mode needs its JavaScript SDK: install it beside Ludic (npm install @wandb/sdk), or log offline (mode: offline, or WANDB_MODE=offline)"
  }
  if ((environment.WANDB_API_KEY ?? '') === '')
    return "W&B's online mode needs an API key in WANDB_API_KEY (from https://wandb.ai/authorize), or log offline (mode: offline, or WANDB_MODE=offline)"
  return undefined
}

async function startOnline(
  run: RunStartV1,
  settings: ResolvedWandbSettings,
  name: string,
  options: WandbLoggerOptions,
  environment: WandbEnvironment,
  timeoutSeconds: number,
): Promise<WandbSession> {
  const baseUrl = environment.WANDB_BASE_URL || 'https://api.wandb.ai'
  const authorization = `Basic ${Buffer.from(`api:${environment.WANDB_API_KEY}`).toString('base64')}`
  await checkServer(baseUrl, authorization, timeoutSeconds)
  const loaded = (await (options.importSdk ?? (() => import('@wandb/sdk')))()) as { default?: WandbSdk } & Partial<WandbSdk>
  const sdk = (loaded.default ?? loaded) as WandbSdk
  // The SDK's init installs SIGINT (it exits the process), SIGTERM and beforeExit handlers; the trainer's own (Ctrl+C
  // stops after the step and checkpoints) must stay in charge, so those are taken off again.
  const signals: readonly string[] = ['SIGINT', 'SIGTERM', 'beforeExit']
  const listeners = (signal: string) => process.listeners(signal as 'beforeExit') as unknown[]
  const before = new Map(signals.map((signal) => [signal, new Set(listeners(signal))]))
  let timer: NodeJS.Timeout | undefined
  let wandbRun: WandbSdkRun
  try {
    wandbRun = await Promise.race([
      sdk.init({
        project: settings.project,
        ...(settings.entity === undefined ? {} : { entity: settings.entity }),
        name,
        config: run.config,
        settings: { apiKey: environment.WANDB_API_KEY!, baseUrl, silent: true },
      }),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new LudicError(`W&B did not create the run within ${timeoutSeconds} s (WANDB_BASE_URL: ${environment.WANDB_BASE_URL ?? 'https://api.wandb.ai'})`),
            ),
          timeoutSeconds * 1000,
        )
        timer.unref()
      }),
    ])
  } catch (error) {
    throw new LudicError(`W&B could not create the run: ${(error as Error).message}`, { cause: error })
  } finally {
    clearTimeout(timer)
    for (const signal of signals) {
      for (const listener of listeners(signal)) if (!before.get(signal)!.has(listener)) process.removeListener(signal, listener as never)
    }
  }
  return {
    async log({ step, values }) {
      wandbRun.log({ ...values }, step)
    },
    async close() {
      // The SDK retries a failing upload for many minutes: a run that has trained does not wait that long for it.
      let closeTimer: NodeJS.Timeout | undefined
      const late = new Promise<'late'>((resolve) => {
        closeTimer = setTimeout(() => resolve('late'), timeoutSeconds * 1000)
        closeTimer.unref()
      })
      const outcome = await Promise.race([wandbRun.finish(0).then(() => 'done' as const), late])
      clearTimeout(closeTimer)
      if (outcome === 'late') run.notify(`W&B did not confirm the end of the run within ${timeoutSeconds} s (${baseUrl}); its last rows may be missing there`)
    },
  }
}

/**
 * Asks the server who the key belongs to before the SDK starts, so that a refused key or an unreachable server is an
 * error that says which (the SDK reports both as "Unable to determine default entity").
 */
async function checkServer(baseUrl: string, authorization: string, timeoutSeconds: number): Promise<void> {
  let response: Response
  try {
    response = await fetch(`${baseUrl}/graphql`, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'query Viewer { viewer { id entity } }' }),
      signal: AbortSignal.timeout(timeoutSeconds * 1000),
    })
  } catch (error) {
    throw new LudicError(`cannot reach W&B at ${baseUrl} (WANDB_BASE_URL): ${(error as Error).message}`, { cause: error })
  }
  const body = (await response.json().catch(() => undefined)) as { data?: { viewer?: { entity?: string } | null } } | undefined
  if (response.status === 401 || response.status === 403 || (response.ok && !body?.data?.viewer?.entity))
    throw new LudicError(`W&B at ${baseUrl} did not accept WANDB_API_KEY (HTTP ${response.status}): check the key (https://wandb.ai/authorize)`)
  if (!response.ok) throw new LudicError(`W&B at ${baseUrl} answered HTTP ${response.status} to the key check`)
}

/** W&B's offline run folder, written as W&B's Python SDK lays one out (`files/`), rewritten each step as it changes. */
async function startOffline(run: RunStartV1, settings: ResolvedWandbSettings, name: string, clock: () => number): Promise<WandbSession> {
  if (!isAbsolute(settings.directory) && run.directory === undefined)
    throw new LudicError(`the W&B logger's offline directory '${settings.directory}' is relative to the run directory, and the run has none`)
  const started = clock()
  const id = randomId()
  const stamp = new Date(started).toISOString().replace(/[-:]/g, '').replace('T', '_').replace(/\..*$/, '')
  const folder = join(run.directory === undefined ? settings.directory : resolve(run.directory, settings.directory), `offline-run-${stamp}-${id}`, 'files')
  const writing = async (path: string, write: () => Promise<unknown>) => {
    try {
      await write()
    } catch (error) {
      throw FileSystemError.wrap(error, path, 'write')
    }
  }
  const file = (name: string) => join(folder, name)
  await writing(folder, () => mkdir(folder, { recursive: true }))
  const config: Record<string, unknown> = { wandb_version: 1 }
  for (const [key, value] of Object.entries(run.config)) if (value !== undefined) config[key] = { desc: null, value }
  await writing(file('config.yaml'), () => writeFile(file('config.yaml'), stringifyYaml(config)))
  const metadata = {
    startedAt: new Date(started).toISOString(),
    program: 'ludic',
    host: hostname(),
    os: `${platform()}-${arch()}`,
    runtime: `node ${process.version}`,
    ...(settings.entity === undefined ? {} : { entity: settings.entity }),
    project: settings.project,
    id,
    name,
    ...(run.resumedAtStep === undefined ? {} : { resumedAtStep: run.resumedAtStep }),
  }
  await writing(file('wandb-metadata.json'), () => writeFile(file('wandb-metadata.json'), `${JSON.stringify(metadata, null, 2)}\n`))
  const summary: Record<string, unknown> = {}
  return {
    async log({ step, values }) {
      const now = clock()
      const row = { ...values, _step: step, _runtime: (now - started) / 1000, _timestamp: now / 1000 }
      await writing(file('wandb-history.jsonl'), () => appendFile(file('wandb-history.jsonl'), `${JSON.stringify(row)}\n`))
      Object.assign(summary, row, { _wandb: { runtime: Math.round(row._runtime) } })
      await writing(file('wandb-summary.json'), () => writeFile(file('wandb-summary.json'), JSON.stringify(summary)))
    },
    async close() {},
  }
}

/** W&B's run ids: 8 characters of [a-z0-9]. */
function randomId(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789'
  return [...randomBytes(8)].map((byte) => alphabet[byte % alphabet.length]).join('')
}
