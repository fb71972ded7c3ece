#!/usr/bin/env node
// `npm run bench -- <suite> [--option value …]`: builds @ludic/bench and what it needs, runs the suite through
// its API (`runBenchSuite`), prints the report's Markdown and writes bench-results/<suite>.{json,md,svg,png}.
// Options follow the suite's schema (`--quick`, `--presets tiny,small`, `--backends wasm`…; see packages/bench).
import { spawnSync } from 'node:child_process'

const build = spawnSync('npx', ['turbo', 'run', 'build', '--filter=@ludic/bench...', '--output-logs=errors-only'], { stdio: 'inherit' })
if (build.status !== 0) process.exit(build.status ?? 1)

const { benchOptionsFromArguments, benchReportMarkdown, benchSuiteNames, benchSuites, runBenchSuite, writeBenchReport } = await import('@ludic/bench')
const [suite, ...rest] = process.argv.slice(2)
if (suite === undefined || !benchSuiteNames.includes(suite)) {
  console.error(
    `usage: npm run bench -- <suite> [--option value …]\n${benchSuiteNames.map((name) => `  ${name.padEnd(11)} ${benchSuites[name].description}`).join('\n')}`,
  )
  process.exit(suite === undefined ? 0 : 2)
}
const controller = new AbortController()
process.once('SIGINT', () => controller.abort())
try {
  const report = await runBenchSuite(suite, benchOptionsFromArguments(suite, rest), {
    signal: controller.signal,
    log: (line) => console.error(line),
    onProgress: (done, total, label) => console.error(`[${done}/${total}]${label === undefined ? '' : ` ${label}`}`),
  })
  console.log(`\n${benchReportMarkdown(report)}`)
  const files = await writeBenchReport(report, 'bench-results', { png: true })
  console.log(`wrote ${Object.values(files).join(', ')}`)
} catch (error) {
  console.error(error instanceof Error ? error.message : String(error))
  process.exit(1)
}
