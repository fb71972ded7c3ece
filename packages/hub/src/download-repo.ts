import { readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { InvalidArgumentError, parseArgument, parseInput, ParseError } from '@ludic/core'
import { z } from 'zod'
import {
  commitHashPattern,
  isMarkedMissing,
  linkSnapshotFile,
  markMissing,
  readRef,
  repoStorageFolder,
  snapshotFolder,
  snapshotHasFile,
  tagCacheDir,
  writeRef,
} from './cache-layout.js'
import { downloadBlob, fetchFileMetadata, type FileMetadata } from './file-download.js'
import { type FileSelection, filePresets, parseShardIndex, singleWeightsFile, weightsIndexFile } from './file-selection.js'
import { HubError } from './hub-error.js'
import { defaultCacheDir, defaultEndpointUrl, defaultOffline, defaultToken } from './hub-environment.js'
import { type HubRequestContext, hubRequest, parseJson, readBody, responseError, startDeadline } from './hub-http.js'
import { isValidRevision, parseRepoArgument, repoFilePathProblem } from './repo-id.js'

/** Progress of one file of a download; `bytesDone` grows to `bytesTotal`. */
export interface DownloadProgress {
  repoId: string
  file: string
  bytesDone: number
  bytesTotal: number
  /** Position of the file among those to download (from 0), and their count: known files only (shards join once the index is read). */
  fileIndex: number
  fileCount: number
}

/** Another process is downloading `file` (it holds `lockPath`): this call waits for it. */
export interface DownloadWait {
  repoId: string
  file: string
  lockPath: string
}

export const downloadRepoOptionsSchema = z
  .object({
    /** Branch, tag or commit hash. Default: the `@revision` of the repository id, else `'main'`. */
    revision: z.string().min(1).optional(),
    /**
     * Which files: `'model'` (config.json, model.safetensors or model.safetensors.index.json and its shards, and when
     * present generation_config.json, tokenizer.json, tokenizer_config.json, special_tokens_map.json), `'tokenizer'`
     * (tokenizer.json, and when present tokenizer_config.json and special_tokens_map.json), or a list of file paths,
     * each of which must exist. Default: `'model'`.
     */
    files: z.union([z.enum(['model', 'tokenizer']), z.array(z.string()).min(1).max(10_000)]).default('model'),
    /** The cache folder. Default: `HF_HUB_CACHE`, else `$HF_HOME/hub`, else `~/.cache/huggingface/hub` (Python's). */
    cacheDir: z.string().min(1).optional(),
    /** Access token for private and gated repositories, or `false` to send none. Default: `HF_TOKEN`, else the file `$HF_HOME/token` (`hf auth login`). */
    token: z.union([z.string().min(1), z.literal(false)]).optional(),
    /** Use the cache only, never the network. Default: `HF_HUB_OFFLINE` is `1`/`true`/`yes`/`on`. */
    offline: z.boolean().optional(),
    /** The Hub's address. Default: `HF_ENDPOINT`, else `https://huggingface.co`. */
    endpoint: z.url({ protocol: /^https?$/ }).optional(),
    /**
     * Ask the Hub for the revision's current commit even when the cache holds a complete snapshot of the commit
     * `refs/<revision>` names. Default: `false` (a cached snapshot is used with no network at all; a branch that
     * moved on the Hub is picked up with `refresh: true`).
     */
    refresh: z.boolean().default(false),
    /** Stops the download; the partial file is kept and the next call resumes it. */
    signal: z.instanceof(AbortSignal, { message: 'must be an AbortSignal' }).optional(),
    /** Called as bytes arrive (and once per file with `bytesDone === bytesTotal` when it is done or already cached). */
    onProgress: z.custom<(event: DownloadProgress) => void>((value) => typeof value === 'function', 'must be a function (event) => void').optional(),
    /** The `fetch` to use (tests pass one that answers from fixtures or throws). Default: `globalThis.fetch`. */
    fetch: z.custom<typeof fetch>((value) => typeof value === 'function', 'must be a fetch function').optional(),
    /** Longest silence of the Hub (waiting for an answer or for the next bytes of one) before the request fails. Default: 30,000 ms. */
    timeoutMs: z.number().int().positive().max(3_600_000).default(30_000),
    /**
     * Longest time one file may take, all its attempts within the call and any wait for another process that
     * downloads the same file included (and the repository listing, read the same way): a server that sends a byte
     * now and then, never silent for `timeoutMs`, is cut there. The partial file is kept and the next call resumes it. Default: 3,600,000 ms (one hour); at most
     * 2,147,483,647 (about 24.8 days, the longest timer Node has).
     */
    fileTimeoutMs: z.number().int().positive().max(2_147_483_647).default(3_600_000),
    /**
     * Called when another process (Ludic, or Python's `huggingface_hub`) is downloading a file this call needs: the
     * call waits for it (it holds the file's lock, `lockPath`), then uses its blob or resumes its partial file.
     */
    onWait: z.custom<(event: DownloadWait) => void>((value) => typeof value === 'function', 'must be a function (event) => void').optional(),
    /** Times a cut, stalled, refused or 429/5xx transfer is resumed within the call (pausing 0.5 s, 1 s, 2 s… when one brought no bytes). Default: 3. */
    retries: z.number().int().nonnegative().max(100).default(3),
    /** Most shard files an index may list. Default: 4096. */
    maxShards: z.number().int().positive().default(4096),
    /** Largest single file. Default: 50 GB (the Hub's limit for plain HTTP downloads). */
    maxFileBytes: z.number().int().positive().default(50_000_000_000),
    /** Largest sum of the files to download (and of an index's `metadata.total_size`). Default: 2 TiB. */
    maxTotalBytes: z
      .number()
      .int()
      .positive()
      .default(2 ** 41),
    /** Largest JSON read into memory (the Hub's repository listing, the shard index). Default: 64 MiB. */
    maxJsonBytes: z
      .number()
      .int()
      .positive()
      .default(64 * 2 ** 20),
  })
  .strict()
export type DownloadRepoOptions = z.input<typeof downloadRepoOptionsSchema>

/**
 * The options of `downloadRepo` but `files`: what `loadModel`, `loadTokenizer` and the CLI pass through as their
 * `hub` option (they choose the files themselves).
 */
export const hubOptionsSchema = downloadRepoOptionsSchema.omit({ files: true })
export type HubOptions = z.input<typeof hubOptionsSchema>
type ParsedOptions = z.output<typeof downloadRepoOptionsSchema>

const repoInfoSchema = z.looseObject({
  sha: z.string().regex(commitHashPattern, 'must be a 40-digit commit hash'),
  siblings: z.array(z.looseObject({ rfilename: z.string() })).max(1_000_000),
})

/** The cache folder, endpoint, token and offline switch a call uses, with where the offline switch came from. */
interface Settings {
  cacheDir: string
  endpoint: string
  token: string | undefined
  offline: boolean
  offlineSource: string
}

function settingsOf(options: ParsedOptions): Settings {
  const offline = options.offline ?? defaultOffline()
  return {
    cacheDir: options.cacheDir ?? defaultCacheDir(),
    endpoint: options.endpoint?.replace(/\/+$/, '') ?? defaultEndpointUrl(),
    token: options.token === false ? undefined : (options.token ?? defaultToken()),
    offline,
    offlineSource: options.offline === undefined ? 'HF_HUB_OFFLINE is set' : 'the offline option is true',
  }
}

function selectionOf(files: ParsedOptions['files']): FileSelection {
  if (typeof files === 'string') return filePresets[files]
  files.forEach((file, index) => {
    const problem = repoFilePathProblem(file)
    if (problem !== undefined)
      throw new InvalidArgumentError({ argument: `options.files[${index}]`, value: file, message: `${problem}; a file path inside the repository is expected` })
  })
  return { required: [...new Set(files)], optional: [], weights: false }
}

/** What a cached snapshot lacks: `missing` files are needed and absent, `unknown` optional ones are absent without a record that the Hub lacks them. */
async function cachedSnapshotGaps(
  storage: string,
  commit: string,
  selection: FileSelection,
  options: ParsedOptions,
): Promise<{ missing: string[]; unknown: string[] }> {
  const missing: string[] = []
  const unknown: string[] = []
  for (const file of selection.required) if (!(await snapshotHasFile(storage, commit, file))) missing.push(file)
  for (const file of selection.optional) {
    if (!(await snapshotHasFile(storage, commit, file)) && !(await isMarkedMissing(storage, commit, file))) unknown.push(file)
  }
  if (selection.weights && !(await snapshotHasFile(storage, commit, singleWeightsFile))) {
    if (await snapshotHasFile(storage, commit, weightsIndexFile)) {
      const shards = await readCachedIndex(join(snapshotFolder(storage, commit), weightsIndexFile), options)
      for (const shard of shards) if (!(await snapshotHasFile(storage, commit, shard))) missing.push(shard)
    } else missing.push(`${singleWeightsFile} (or ${weightsIndexFile} and its shards)`)
  }
  return { missing, unknown }
}

async function readCachedIndex(path: string, options: ParsedOptions): Promise<string[]> {
  const size = (await stat(path)).size
  if (size > options.maxJsonBytes) throw new ParseError({ source: path, message: `is ${size} bytes, more than maxJsonBytes (${options.maxJsonBytes})` })
  return parseShardIndex(await readFile(path, 'utf8'), path, options)
}

/**
 * Downloads the files a causal language model needs (or the `files` asked for) from the Hugging Face Hub into
 * the cache Python's `huggingface_hub` uses, and returns the snapshot folder
 * `<cache>/models--owner--name/snapshots/<commit>`, which holds them under their repository names.
 *
 * When `refs/<revision>` (or the commit given as revision) names a snapshot that already holds every needed
 * file, it is returned without any network access, whoever filled the cache (Ludic or Python); so it is when
 * only optional files are unsettled and the Hub cannot be reached. Offline (`HF_HUB_OFFLINE`), the cache is
 * the only way; what it lacks is a `HubError` with reason `offline`.
 * Otherwise the Hub lists the revision (`/api/models/<id>/revision/<revision>`: its commit and files), then each
 * missing file is fetched (`HEAD` then `GET resolve/<commit>/<file>`) into `blobs/` through a resumable
 * `.incomplete` file, checked, and linked into the snapshot; `refs/<revision>` is written as Python writes it.
 * A gated, private or missing repository, revision or file is a `HubError` that says which and what to do.
 */
export async function downloadRepo(repoId: string, options: DownloadRepoOptions = {}): Promise<string> {
  const reference = parseRepoArgument(repoId, 'repoId')
  const parsed = parseArgument(downloadRepoOptionsSchema, options, 'options')
  if (parsed.revision !== undefined && reference.revision !== undefined && parsed.revision !== reference.revision) {
    throw new InvalidArgumentError({
      argument: 'options.revision',
      value: parsed.revision,
      message: `differs from the revision in the repository id ('${reference.revision}')`,
    })
  }
  const revision = parsed.revision ?? reference.revision ?? 'main'
  if (!isValidRevision(revision)) {
    throw new InvalidArgumentError({
      argument: 'options.revision',
      value: revision,
      message: "is not a branch, tag or commit (no empty, '.' or '..' segment, no control character)",
    })
  }
  const selection = selectionOf(parsed.files)
  const settings = settingsOf(parsed)
  const id = reference.repoId
  const storage = repoStorageFolder(settings.cacheDir, id)
  parsed.signal?.throwIfAborted()

  const cachedCommit = commitHashPattern.test(revision) ? revision : await readRef(storage, revision)
  // A cached snapshot with every needed file, whose optional files are not all settled, still serves when the Hub cannot be reached.
  let fallback: string | undefined
  if (cachedCommit !== undefined && (!parsed.refresh || settings.offline)) {
    const gaps = await cachedSnapshotGaps(storage, cachedCommit, selection, parsed)
    if (gaps.missing.length === 0 && (settings.offline || gaps.unknown.length === 0)) return snapshotFolder(storage, cachedCommit)
    if (gaps.missing.length === 0) fallback = snapshotFolder(storage, cachedCommit)
    if (settings.offline) {
      throw new HubError({
        reason: 'offline',
        repoId: id,
        revision,
        message: `${settings.offlineSource}, and the cached snapshot of ${id} at '${revision}' (${snapshotFolder(storage, cachedCommit)}) lacks ${gaps.missing.join(', ')}. Download it once with network access (or unset HF_HUB_OFFLINE).`,
      })
    }
  } else if (settings.offline) {
    throw new HubError({
      reason: 'offline',
      repoId: id,
      revision,
      message: `${settings.offlineSource}, and the cache ${settings.cacheDir} holds no snapshot of ${id} at '${revision}' (no ${join(storage, 'refs', revision)}). Download it once with network access (or unset HF_HUB_OFFLINE), or set HF_HUB_CACHE to the cache that holds it.`,
    })
  }

  const context: HubRequestContext = {
    repoId: id,
    revision,
    endpoint: settings.endpoint,
    token: settings.token,
    fetch: parsed.fetch ?? globalThis.fetch,
    signal: parsed.signal,
    timeoutMs: parsed.timeoutMs,
  }
  let listing: { commit: string; files: Set<string> }
  try {
    listing = await fetchRepoListing(context, parsed)
  } catch (error) {
    if (fallback !== undefined && HubError.isInstance(error) && error.reason === 'network') return fallback
    throw error
  }
  const { commit, files: listed } = listing
  await tagCacheDir(settings.cacheDir)
  await writeRef(storage, revision, commit)

  const wanted: string[] = []
  for (const file of selection.required) {
    if (!listed.has(file))
      throw new HubError({ reason: 'missing', repoId: id, revision, file, message: `File '${file}' not found in repository ${id} at revision '${revision}'.` })
    wanted.push(file)
  }
  for (const file of selection.optional) {
    if (listed.has(file)) wanted.push(file)
    else await markMissing(storage, commit, file)
  }
  const weightsFile = selection.weights ? chooseWeights(listed, id, revision) : undefined
  if (weightsFile !== undefined) wanted.push(weightsFile)

  const download = new RepoDownload(context, storage, commit, parsed)
  await download.fetchAll(wanted)
  if (weightsFile === weightsIndexFile) {
    const shards = await readCachedIndex(join(snapshotFolder(storage, commit), weightsIndexFile), parsed)
    const absent = shards.filter((shard) => !listed.has(shard))
    if (absent.length > 0) {
      throw new HubError({
        reason: 'missing',
        repoId: id,
        revision,
        file: absent[0]!,
        message: `${weightsIndexFile} of ${id} at '${revision}' lists shards the repository lacks: ${absent.slice(0, 5).join(', ')}${absent.length > 5 ? ` and ${absent.length - 5} more` : ''}.`,
      })
    }
    await download.fetchAll(shards)
  }
  return snapshotFolder(storage, commit)
}

/** `model.safetensors` if the repository has it, else its index; a `missing` `HubError` naming the weights it has otherwise. */
function chooseWeights(listed: ReadonlySet<string>, repoId: string, revision: string): string {
  if (listed.has(singleWeightsFile)) return singleWeightsFile
  if (listed.has(weightsIndexFile)) return weightsIndexFile
  const others = [...listed].filter((file) => /\.(bin|pt|pth|gguf|onnx|h5|msgpack|safetensors)$/.test(file)).slice(0, 5)
  throw new HubError({
    reason: 'missing',
    repoId,
    revision,
    file: singleWeightsFile,
    message: `Repository ${repoId} at '${revision}' has no ${singleWeightsFile} or ${weightsIndexFile}; Ludic loads safetensors checkpoints only${others.length === 0 ? '' : ` (it has ${others.join(', ')})`}.`,
  })
}

/** `GET /api/models/<id>/revision/<revision>`: the commit the revision points to and the repository's files. */
async function fetchRepoListing(repoContext: HubRequestContext, options: ParsedOptions): Promise<{ commit: string; files: Set<string> }> {
  // Bounded as a file is: a listing dripped a byte at a time must not hold the call forever.
  const deadline = startDeadline(options.fileTimeoutMs)
  const context: HubRequestContext = { ...repoContext, deadline }
  try {
    const url = `${context.endpoint}/api/models/${context.repoId}/revision/${encodeURIComponent(context.revision)}`
    const { response, timeout } = await hubRequest(context, url, { method: 'GET' }, `list ${context.repoId}`)
    if (!response.ok) {
      timeout.dispose()
      await response.body?.cancel()
      throw responseError(context, response)
    }
    const body = await readBody(context, response, timeout, url, options.maxJsonBytes)
    const info = parseInput(repoInfoSchema, parseJson(body.toString('utf8'), url), { source: url })
    return { commit: info.sha, files: new Set(info.siblings.map((sibling) => sibling.rfilename)) }
  } finally {
    deadline.dispose()
  }
}

/** The files of one snapshot being fetched, with the progress count and the total-size bound across them. */
class RepoDownload {
  private fileCount = 0
  private fileIndex = 0
  private totalBytes = 0

  constructor(
    private readonly context: HubRequestContext,
    private readonly storage: string,
    private readonly commit: string,
    private readonly options: ParsedOptions,
  ) {}

  private report(file: string, bytesDone: number, bytesTotal: number): void {
    this.options.onProgress?.({ repoId: this.context.repoId, file, bytesDone, bytesTotal, fileIndex: this.fileIndex, fileCount: this.fileCount })
  }

  /** Fetches the metadata of every file the snapshot lacks (bounding their total size) and then their bytes, one file after the other. */
  async fetchAll(files: readonly string[]): Promise<void> {
    const missing: string[] = []
    for (const file of files) {
      if (await snapshotHasFile(this.storage, this.commit, file)) {
        const { size } = await stat(join(snapshotFolder(this.storage, this.commit), file))
        this.fileCount++
        this.report(file, size, size)
        this.fileIndex++
      } else missing.push(file)
    }
    this.fileCount += missing.length
    const metadata: FileMetadata[] = []
    for (const file of missing) {
      this.options.signal?.throwIfAborted()
      const info = await fetchFileMetadata(this.context, this.commit, file, this.options.maxFileBytes)
      this.totalBytes += info.size
      if (this.totalBytes > this.options.maxTotalBytes) {
        throw new ParseError({
          source: `${this.context.endpoint}/${this.context.repoId}`,
          path: [file],
          message: `the files to download add up to more than maxTotalBytes (${this.options.maxTotalBytes})`,
        })
      }
      metadata.push(info)
    }
    for (const info of metadata) {
      this.options.signal?.throwIfAborted()
      const downloaded = await downloadBlob(this.context, this.storage, info, {
        retries: this.options.retries,
        fileTimeoutMs: this.options.fileTimeoutMs,
        onBytes: (bytesDone) => this.report(info.file, bytesDone, info.size),
        onWait: (lockPath) => this.options.onWait?.({ repoId: this.context.repoId, file: info.file, lockPath }),
      })
      await linkSnapshotFile(this.storage, this.commit, info.file, info.etag)
      if (!downloaded) this.report(info.file, info.size, info.size)
      this.fileIndex++
    }
  }
}
