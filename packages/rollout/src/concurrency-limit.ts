/** Runs at most `limit` tasks at once; the others wait in order of arrival. */
export interface ConcurrencyLimit {
  run<T>(task: () => Promise<T>): Promise<T>
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
    async run<T>(task: () => Promise<T>): Promise<T> {
      if (active >= limit) await new Promise<void>((resolve) => queue.push(resolve))
      else active++
      try {
        return await task()
      } finally {
        release()
      }
    },
  }
}
