import { readdir } from 'node:fs/promises'
import { resolve } from 'node:path'
import { type DownloadProgress, type DownloadWait, downloadRepo } from '@ludic/hub'
import { createProgressBar, type ProgressBar } from '@ludic/report'
import { type CommandContext, commandContext, progressStream } from '../context.js'

export interface DownloadOptions {
  /** Branch, tag or commit. Default: `@revision` of the repo id, else `main`. */
  revision?: string
  /** The Hub cache. Default: `HF_HUB_CACHE`, else `$HF_HOME/hub`, else `~/.cache/huggingface/hub`. */
  cacheDir?: string
  /** Which files: file paths of the repository. Default: the model's (config, weights, tokenizer). */
  include?: readonly string[]
  /** Only the tokenizer's files. */
  tokenizerOnly?: boolean
  /** The Hub's address. Default: `HF_ENDPOINT`, else https://huggingface.co. */
  endpoint?: string
  /** Ask the Hub for the revision's current commit even when the cache has it. */
  refresh?: boolean
}

export interface DownloadSummary {
  repo: string
  /** The snapshot directory: `loadModel` and `loadTokenizer` (and `ludic serve`) take it. */
  directory: string
  files: string[]
  bytes: number
  seconds: number
}

/** Bytes as `12.3 MB`. */
export function formatBytes(bytes: number): string {
  if (bytes < 1000) return `${bytes} B`
  const units = ['kB', 'MB', 'GB', 'TB']
  let value = bytes / 1000
  let unit = 0
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000
    unit++
  }
  return `${value.toFixed(1)} ${units[unit]}`
}

/**
 * `ludic download <repo>`: `downloadRepo` of `@ludic/hub` into the Hugging Face cache (resumed when cut, shared with
 * Python's `huggingface_hub`), a byte progress bar per file on stderr; returns the snapshot directory.
 */
export async function download(repo: string, options: DownloadOptions = {}, partialContext: Partial<CommandContext> = {}): Promise<DownloadSummary> {
  const context = commandContext(partialContext)
  const started = performance.now()
  const stream = progressStream(context)
  let bar: { file: string; bar: ProgressBar } | undefined
  const bytes = new Map<string, number>()
  const onProgress = (event: DownloadProgress) => {
    bytes.set(event.file, event.bytesTotal)
    if (stream === false) return
    let current = bar
    if (current?.file !== event.file) {
      current?.bar.finish()
      const label = `${event.file} (${event.fileIndex + 1}/${event.fileCount})`
      current = { file: event.file, bar: createProgressBar(event.bytesTotal, { stream, label, formatValue: formatBytes }) }
      bar = current
    }
    current.bar.update(event.bytesDone)
  }
  // Another process (Ludic, or Python's huggingface_hub) is downloading the same file: say so, or the wait looks like a hang.
  const onWait = (event: DownloadWait) => {
    if (stream === false) return
    bar?.bar.finish()
    bar = undefined
    stream.write(`${event.file}: another process is downloading it; waiting for it (lock ${event.lockPath})\n`)
  }
  let directory: string
  try {
    directory = await downloadRepo(repo, {
      files: options.include !== undefined && options.include.length > 0 ? [...options.include] : options.tokenizerOnly === true ? 'tokenizer' : 'model',
      ...(options.revision === undefined ? {} : { revision: options.revision }),
      ...(options.cacheDir === undefined ? {} : { cacheDir: resolve(context.cwd, options.cacheDir) }),
      ...(options.endpoint === undefined ? {} : { endpoint: options.endpoint }),
      ...(options.refresh === undefined ? {} : { refresh: options.refresh }),
      signal: context.signal,
      onProgress,
      onWait,
    })
  } finally {
    bar?.bar.finish()
  }
  const files = (await readdir(directory, { recursive: true, withFileTypes: true }))
    .filter((entry) => !entry.isDirectory())
    .map((entry) => resolve(entry.parentPath, entry.name).slice(directory.length + 1))
    .sort()
  return {
    repo,
    directory,
    files,
    bytes: [...bytes.values()].reduce((total, size) => total + size, 0),
    seconds: Number(((performance.now() - started) / 1000).toFixed(2)),
  }
}
