import { LudicError } from '@ludic/core'

/**
 * Why a download from the Hugging Face Hub failed:
 * - `gated`: the repository is gated and the token (or its absence) has not been granted access;
 * - `missing`: the repository, the revision or a file does not exist (or the repository is private and no
 *   token was sent: the Hub answers both alike);
 * - `unauthorized`: the Hub refused the token itself (`HF_TOKEN` is wrong or expired);
 * - `offline`: `HF_HUB_OFFLINE` (or the `offline` option) is set and the cache lacks what is needed;
 * - `network`: the Hub could not be reached, stalled, cut the transfer, answered 429/5xx or something that
 *   is not a Hub answer;
 * - `integrity`: a downloaded file's size or SHA-256 differs from what the Hub announced.
 */
export type HubErrorReason = 'gated' | 'missing' | 'unauthorized' | 'offline' | 'network' | 'integrity'

const marker = Symbol.for('ludic.error.HubError')

/**
 * A repository could not be fetched from (or found in the cache of) the Hugging Face Hub. `reason` says why,
 * `repoId` and `revision` which repository, `file` which file when one is at fault, `status` the HTTP status
 * when the Hub answered one.
 */
export class HubError extends LudicError {
  private readonly [marker] = true
  override readonly name = 'HubError'
  readonly reason: HubErrorReason
  readonly repoId: string
  readonly revision: string | undefined
  readonly file: string | undefined
  readonly status: number | undefined

  constructor(options: { reason: HubErrorReason; repoId: string; revision?: string; file?: string; status?: number; message: string; cause?: unknown }) {
    super(options.message, options)
    this.reason = options.reason
    this.repoId = options.repoId
    this.revision = options.revision
    this.file = options.file
    this.status = options.status
  }

  static override isInstance(error: unknown): error is HubError {
    return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[marker] === true
  }
}
