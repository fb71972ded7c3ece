/**
 * Lets timers, I/O and other pending callbacks run before long synchronous work goes on: a macrotask
 * (`setImmediate` where it exists, else `setTimeout(0)`), not a microtask, which would let nothing else through.
 * Loops that hold the thread for long (training updates, scoring passes) await it between their units of work, so
 * that signals, progress output and concurrent work on the same thread (disaggregated rollouts' HTTP traffic) go on.
 */
export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => (typeof setImmediate === 'function' ? setImmediate(resolve) : setTimeout(resolve, 0)))
}
