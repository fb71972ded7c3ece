/** Runs at most `limit` tasks at once; the others wait in order of arrival. */
export interface ConcurrencyLimit {
  /** Runs `task` when a slot is free; a `signal` that aborts while it waits rejects with its reason and frees its place. */
  run<T>(task: () => Promise<T>, signal?: AbortSignal): Promise<T>
  /** Tasks running now. */
  readonly active: number
  /** Tasks waiting for a slot. */
  readonly waiting: number
}

export function createConcurrencyLimit(limit: number): ConcurrencyLimit {
  let active = 0
  const queue: (() => void)[] = []
  // A finishing task hands its slot straight to the next waiting one, so a task arriving in between
  // cannot take it too.
  const release = () => {
    const next = queue.shift()
    if (next === undefined) active--
    else next()
  }
  return {
    get active() {
      return active
    },
    get waiting() {
      return queue.length
    },
    async run<T>(task: () => Promise<T>, signal?: AbortSignal): Promise<T> {
      signal?.throwIfAborted()
      if (active >= limit) {
        await new Promise<void>((resolve, reject) => {
          const onAbort = () => {
            queue.splice(queue.indexOf(start), 1)
            reject(signal!.reason)
          }
          const start = () => {
            signal?.removeEventListener('abort', onAbort)
            resolve()
          }
          queue.push(start)
          signal?.addEventListener('abort', onAbort, { once: true })
        })
      } else active++
      try {
        return await task()
      } finally {
        release()
      }
    },
  }
}
