import { spawn } from 'node:child_process'
import { isIP } from 'node:net'
import { type CommandContext, commandContext, log } from '../context.js'
import { CliError, exitCodes } from '../errors.js'
import { listenProblem } from '../listen-problem.js'
import { discoverRuns, resolveRunSources } from '../view/run-directories.js'
import { startViewServer, type ViewServer, type ViewServerOptions } from '../view/view-server.js'

export interface ViewOptions {
  /** Default 6007; 0 picks a free port. */
  port?: number
  /** Default `127.0.0.1`. Another address needs `allowRemote`. */
  host?: string
  /**
   * Listen on an address other machines reach (`--host 0.0.0.0`): the page has no password, so whoever reaches the
   * port reads the runs (model text, configs). Default false: a non-loopback `host` is refused.
   */
  allowRemote?: boolean
  /** Host header names accepted besides IP addresses and localhost. */
  allowedHosts?: readonly string[]
  /** Open the page in the default browser (only on an interactive terminal). Default true. */
  open?: boolean
  /** The server's other settings (limits, the page's folder). */
  server?: Omit<ViewServerOptions, 'sources' | 'port' | 'host' | 'allowedHosts'>
}

/** A running `ludic view`: its server and the runs found when it started. */
export interface RunningView {
  server: ViewServer
  runs: number
}

/** Whether `host` is a loopback address or name (the only ones listened on without `allowRemote`). */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase()
  if (bare === 'localhost' || bare.endsWith('.localhost') || bare === '::1') return true
  return isIP(bare) === 4 && bare.startsWith('127.')
}

/**
 * `ludic view <runs…>`: serves a web page over run directories (or directories holding them), live while a run
 * trains: its metrics, its episodes from `trajectories.jsonl`, its reports and tables (see `startViewServer`).
 * A missing directory is a `CliError` naming it (exit code 3); a non-loopback `host` without `allowRemote` a usage
 * error (2). Returns once listening; `close()` stops it.
 */
export async function view(runArguments: readonly string[], options: ViewOptions = {}, partialContext: Partial<CommandContext> = {}): Promise<RunningView> {
  const context = commandContext(partialContext)
  if (runArguments.length === 0) throw new CliError('ludic view needs at least one run directory (or the directory holding your runs)', exitCodes.usage)
  const host = options.host ?? '127.0.0.1'
  const port = options.port ?? 6007
  if (!isLoopbackHost(host) && options.allowRemote !== true)
    throw new CliError(
      `--host ${host} is not a loopback address: the page has no password, so anyone who reaches it reads the runs; add --allow-remote if that is what you want`,
      exitCodes.usage,
    )
  const sources = await resolveRunSources(runArguments, context.cwd)
  const found = await discoverRuns(sources)
  if (found.length === 0)
    log(context, `no runs yet under ${sources.map((source) => source.argument).join(', ')}: they appear on the page once they write metrics.jsonl`)
  const server = await startViewServer({
    ...options.server,
    sources,
    host,
    port,
    ...(options.allowedHosts === undefined ? {} : { allowedHosts: [...options.allowedHosts] }),
    onError: (error) => log(context, `view: ${error instanceof Error ? error.message : String(error)}`),
  }).catch((error: unknown) => {
    throw listenProblem(error, host, port) ?? error
  })
  if (options.open !== false && context.stdout.isTTY === true && !context.json) openBrowser(server.url)
  return { server, runs: found.length }
}

/** Opens `url` in the default browser, best effort (the URL is printed anyway): `open`, `start` or `xdg-open`. */
function openBrowser(url: string): void {
  const [command, ...commandArguments] =
    process.platform === 'darwin' ? ['open', url] : process.platform === 'win32' ? ['cmd', '/c', 'start', '""', url] : ['xdg-open', url]
  try {
    const child = spawn(command!, commandArguments, { stdio: 'ignore', detached: true })
    child.on('error', () => {}) // no browser here: the printed URL is enough
    child.unref()
  } catch {
    // as above
  }
}
