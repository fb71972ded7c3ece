import { describe, expect, it } from 'vitest'
import * as browser from './browser.js'
import * as node from './index.js'

describe('the browser entry', () => {
  it("has collection and its parts under the Node entry's names, and none of the parts that need threads or sockets", () => {
    for (const name of [
      'collect',
      'collectOptionsSchema',
      'runEpisodes',
      'randomLegalPlay',
      'historyTurn',
      'renderPrompt',
      'trajectoryToSamples',
      'createBatchingPolicy',
      'asyncCollectorOptionsSchema',
    ] as const) {
      expect(browser[name], name).toBe(node[name])
    }
    for (const name of ['createAsyncCollector', 'serveOpenAICompatible', 'createOpenAICompatiblePolicy']) {
      expect(name in browser, name).toBe(false)
      expect(name in node, name).toBe(true)
    }
  })
})
