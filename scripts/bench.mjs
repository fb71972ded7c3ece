#!/usr/bin/env node
// `npm run bench -- <suite> [options]`: builds what the suite needs, then runs it. Results go to
// bench-results/<suite>.{json,md}. Suites move into @ludic/bench as it grows.
import { spawnSync } from 'node:child_process'

const suites = {
  kernels: { workspace: '@ludic/tensors', script: 'packages/tensors/bench/kernels.ts' },
  tokenizer: { workspace: '@ludic/tokenizer', script: 'packages/tokenizer/bench/tokenizer.ts' },
  'train-step': { workspace: '@ludic/model', script: 'packages/model/bench/train-step.ts' },
  decode: { workspace: '@ludic/model', script: 'packages/model/bench/decode.ts' },
  collection: { workspace: '@ludic/example-selfplay-kuhn-poker', script: 'examples/selfplay-kuhn-poker/bench/collection.ts' },
}
const [suite, ...rest] = process.argv.slice(2)
if (suite === undefined || !(suite in suites)) {
  console.error(`usage: npm run bench -- <suite> [options]\nsuites: ${Object.keys(suites).join(', ')}`)
  process.exit(suite === undefined ? 0 : 2)
}
const { workspace, script } = suites[suite]
const run = (command, args) => {
  const result = spawnSync(command, args, { stdio: 'inherit' })
  if (result.status !== 0) process.exit(result.status ?? 1)
}
run('npx', ['turbo', 'run', 'build', `--filter=${workspace}...`, '--output-logs=errors-only'])
run('npx', ['tsx', script, ...rest])
