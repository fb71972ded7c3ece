// The control block a matmul arena shares with its helper threads (`matmul-workers.ts`, Node only), apart so that
// the arena (`simd-matmul.ts`, browser-safe) needs no worker module.

/** Int32 slots of the control block (64 bytes at the start of the shared memory). */
export const controlSlots = {
  /** `generation << 8 | next unclaimed chunk` (`closedChunk` once the job is done); generation (23 bits) changes with every job posted. */
  next: 0,
  /** Chunks finished in the current generation. */
  done: 1,
  /** 1: the helpers leave the memory (the arena is done with them). */
  release: 2,
  /** Chunks of the current product. */
  chunks: 3,
  /** Output rows per chunk (a multiple of 4). */
  rowsPerChunk: 4,
  /** The kernel's nine arguments (`w, x, y, rows, columns, batch, wStride, xStride, yStride`, bytes), rows = all blocked rows. */
  arguments: 5,
  /** 1: the product runs `matmulPacked` (weights in `packWeights`' layout), 0: `matmul`. */
  packed: 14,
  /**
   * The job: 0 a product (its nine arguments above), 1 a decode step's attention rows (`attendRows`), 2 a prefill's
   * attention parts (`attendParts`); for 1 and 2 the arguments are the parameter block's int index and the rows (parts),
   * a chunk `rowsPerChunk` of them.
   */
  kind: 15,
  /** Set by a helper whose chunk threw (the chunk is counted done all the same); the caller throws. */
  failed: 16,
} as const
/** Bytes of the control block (a multiple of 16: the arena's allocations follow it). */
export const controlBytes = 80
/** The chunk index that closes a job once it is done: above any count, so a late helper claims nothing. */
export const closedChunk = 255
/** Most chunks a product is cut into (the chunk index has 8 bits). */
export const maximumChunks = 64

/** Helpers lent to one arena. */
export interface MatmulHelpers {
  /** How many joined. */
  readonly count: number
  /** Tells them to leave the memory and returns them to the pool. */
  release(): void
}
