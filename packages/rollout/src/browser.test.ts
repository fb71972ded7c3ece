import { describe, expect, it } from 'vitest'
import * as browser from './browser.js'
import * as node from './index.js'

/** The entries' exports by name. */
const browserEntry: Record<string, unknown> = { ...browser }
const nodeEntry: Record<string, unknown> = { ...node }

describe('the browser entry', () => {
  it("has collection and its parts under the Node entry's names, and none of the parts that need threads or sockets", () => {
    for (const name of [
      'collect',
      'collectOptionsSchema',
      'runEpisodes',
      'randomLegalPlay',
      'withRandomOpenings',
      'historyTurn',
      'renderPrompt',
      'trajectoryToSamples',
      'createBatchingPolicy',
      'asyncCollectorOptionsSchema',
    ] as const) {
      expect(browserEntry[name], name).toBe(nodeEntry[name])
    }
    for (const name of ['createAsyncCollector', 'serveOpenAICompatible', 'createOpenAICompatiblePolicy']) {
      expect(name in browserEntry, name).toBe(false)
      expect(name in nodeEntry, name).toBe(true)
    }
  })
})
