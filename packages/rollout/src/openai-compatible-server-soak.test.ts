import { describe, expect, it } from 'vitest'
import { badRequests, runSoak } from './test/soak.js'

// The soak test of bench/soak.ts (2 minutes there), for 10 seconds: a server process with a tiny model on the
// WebAssembly backend (built packages: `npm test` builds first), 20 clients, a tenth sending bad requests.
describe('serveOpenAICompatible soak (short)', () => {
  it('answers every good request in full under 20 clients, 2 of them sending bad requests, and stays healthy with flat tensors', async () => {
    const report = await runSoak({ durationMs: 10_000, clients: 20, badFraction: 0.1, warmupMs: 3_000, sampleEveryMs: 1_000, levelWindowMs: 3_000 })
    expect(report.serverExit).toBeUndefined()
    expect(report.good.failures).toEqual([])
    expect(report.good.ok).toBe(report.good.sent)
    expect(report.good.ok).toBeGreaterThan(20)
    expect(report.unexpected).toEqual([])
    expect(Object.keys(report.bad).length).toBeGreaterThanOrEqual(Math.min(6, Object.keys(badRequests).length))
    expect(report.health).toEqual({ status: 200, body: { status: 'ok' } })
    expect(report.idleTensors.after).toBe(report.idleTensors.before)
    expect((report.stats.answers as Record<string, number>)['500'] ?? 0).toBe(0)
    // 20 % is the 2-minute run's bound; 10 seconds leave the RSS less settled.
    expect(Math.abs(report.rss.change)).toBeLessThan(0.5)
  })
})
