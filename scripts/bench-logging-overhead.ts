// `npx tsx scripts/bench-logging-overhead.ts [steps=20]` (after `npm run build`): the side-by-side overhead of trajectories.jsonl + loggers on the Kuhn run config (kuhn.yaml): two trainers with the same
// seed and the same warmed-up weights take their steps in lockstep (A, B, A, B … with the order swapped every step), so
// both do bit-identical training work; each step() is timed. A: loggers [jsonl], trajectories off. B: loggers [jsonl,
// tensorboard, wandb offline], trajectories on (default 4 episodes per step).
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createRlTrainer, createSftTrainer, loadTrainingRun } from '@ludic/trainer'
import { initTensors } from '@ludic/tensors'
import { environmentRegistry, namedPrompts, opponentRegistry } from '@ludic/cli'

const steps = Number(process.argv[2] ?? 20)
await initTensors({ backend: 'wasm', verbose: false })
// Two loads of the same file: same seed, same weights, and each trainer its own stateful parts (RAE's baselines).
const load = async () => {
  const run = await loadTrainingRun(fileURLToPath(new URL('../examples/selfplay-kuhn-poker/kuhn.yaml', import.meta.url)), {
    environments: environmentRegistry,
    prompts: namedPrompts,
    opponents: opponentRegistry,
  })
  if (run.kind !== 'rl') throw new Error(run.kind)
  if (run.warmUp) {
    const sft = createSftTrainer({ ...run.warmUp.config, model: run.config.model })
    for (let i = 0; i < run.warmUp.steps; i++) await sft.step()
  }
  return run
}
const runA = await load()
const runB = await load()
const base = mkdtempSync(join(tmpdir(), 'ludic-overhead-'))
const a = createRlTrainer({ ...runA.config, runDirectory: join(base, 'a'), loggers: ['jsonl'], trajectories: { enabled: false }, evaluateEvery: 0 })
const b = createRlTrainer({
  ...runB.config,
  runDirectory: join(base, 'b'),
  loggers: ['jsonl', 'tensorboard', { kind: 'wandb', mode: 'offline' }],
  evaluateEvery: 0,
})
const times = { a: [] as number[], b: [] as number[] }
for (let i = 0; i < steps; i++) {
  const order = i % 2 === 0 ? (['a', 'b'] as const) : (['b', 'a'] as const)
  for (const which of order) {
    const trainer = which === 'a' ? a : b
    const started = performance.now()
    const metrics = await trainer.step()
    times[which].push(performance.now() - started)
    if (which === 'b' && a.history[i] !== undefined && metrics.loss !== a.history[i]!.loss)
      console.error(`step ${i + 1}: losses differ`, metrics.loss, a.history[i]!.loss)
    if (which === 'a' && b.history[i] !== undefined && metrics.loss !== b.history[i]!.loss)
      console.error(`step ${i + 1}: losses differ`, metrics.loss, b.history[i]!.loss)
  }
}
await a.close()
await b.close()
const sum = (values: number[]) => values.reduce((t, v) => t + v, 0)
const median = (values: number[]) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)]!
const ratios = times.a.map((t, i) => times.b[i]! / t)
// Timing metrics aside, both runs' metrics.jsonl are equal (the same training): compare them in `base`.
console.log(
  JSON.stringify(
    { steps, base, meanA: sum(times.a) / steps, meanB: sum(times.b) / steps, ratioOfSums: sum(times.b) / sum(times.a), medianPairedRatio: median(ratios) },
    null,
    1,
  ),
)
