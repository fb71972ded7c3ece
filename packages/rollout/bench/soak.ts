// Soak test of the OpenAI-compatible server (issue 13's acceptance): a server process with a tiny model under
// 20 concurrent clients for 2 minutes, a tenth of them sending bad requests at random. Prints the figures and
// exits 1 unless every good request was answered 200, /health is 200, the idle tensor count is flat and the
// RSS at the end is within 20 % of its level after the warm-up.
//   npx turbo run build --filter=@ludic/rollout... && npx tsx packages/rollout/bench/soak.ts [--duration-s 120] [--clients 20] [--json]
import { parseArgs } from 'node:util'
import { runSoak } from '../src/test/soak.js'

const { values } = parseArgs({
  options: {
    'duration-s': { type: 'string', default: '120' },
    clients: { type: 'string', default: '20' },
    'bad-fraction': { type: 'string', default: '0.1' },
    'warmup-s': { type: 'string', default: '30' },
    json: { type: 'boolean', default: false },
  },
})
const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`
const report = await runSoak({
  durationMs: Number(values['duration-s']) * 1000,
  clients: Number(values.clients),
  badFraction: Number(values['bad-fraction']),
  warmupMs: Number(values['warmup-s']) * 1000,
  log: (line) => console.error(line),
})
if (values.json) console.log(JSON.stringify(report, null, 2))
else {
  console.log(`\nsoak: ${(report.durationMs / 1000).toFixed(0)} s, ${report.clients.good} good + ${report.clients.bad} bad clients`)
  console.log(
    `good requests: ${report.good.ok}/${report.good.sent} answered in full (${Object.entries(report.good.byKind)
      .map(([kind, count]) => `${kind} ${count}`)
      .join(', ')}); latency p50 ${report.good.latencyMs.p50} ms, p95 ${report.good.latencyMs.p95} ms, max ${report.good.latencyMs.max} ms`,
  )
  for (const failure of report.good.failures) console.log(`  failed: ${failure}`)
  console.log('bad requests:')
  for (const [kind, record] of Object.entries(report.bad)) {
    console.log(
      `  ${kind}: ${record.sent} sent → ${Object.entries(record.outcomes)
        .map(([outcome, count]) => `${outcome} ×${count}`)
        .join(', ')}`,
    )
  }
  for (const line of report.unexpected) console.log(`  unexpected: ${line}`)
  console.log(`server answers by status: ${JSON.stringify(report.stats.answers)}; /health ${report.health.status} ${JSON.stringify(report.health.body)}`)
  console.log(`tensors when idle: ${report.idleTensors.before} before, ${report.idleTensors.after} after`)
  console.log(
    `RSS (medians of 20 s of samples): ${mib(report.rss.afterWarmupBytes)} after the warm-up, ${mib(report.rss.endBytes)} at the end (${(report.rss.change * 100).toFixed(1)} %); max ${mib(report.rss.maxBytes)}`,
  )
  console.log(`event loop held ${report.eventLoopDelayMaxMs} ms at most in the server, ${report.clientEventLoopDelayMaxMs} ms in the clients`)
  console.log(report.passed ? 'PASSED' : `FAILED: ${report.problems.join('; ')}`)
}
process.exitCode = report.passed ? 0 : 1
