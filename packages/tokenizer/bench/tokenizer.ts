/**
 * `tokenizer` benchmark: encoding speed (MB/s of UTF-8 and tokens/s) of `@ludic/tokenizer`,
 * side by side in one process with `@huggingface/tokenizers` (pure JavaScript) and `tokenizers`
 * (Hugging Face's Rust tokenizer for Node), on the same documents, for Qwen3, Llama 3, GPT-4o and
 * Llama 2. Ours is measured warm (the word cache kept across rounds, as in a long run; the other
 * two keep their caches too) and cold (cache emptied before every round).
 *
 *   npx tsx packages/tokenizer/bench/tokenizer.ts [--quick]
 *
 * Writes `<repository root>/bench-results/tokenizer.{json,md}`. Each round encodes every document
 * once with each implementation, interleaved; figures are medians of the rounds after warm-up.
 * Compare ratios measured in the same run, not absolute figures across machines.
 */
import { spawnSync } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const thisFile = fileURLToPath(import.meta.url)
const repositoryRoot = resolve(dirname(thisFile), '../../..')
const sourceCondition = '--conditions=@ludic/source'

// The package source imports `@ludic/core`, which resolves to its build unless the `@ludic/source`
// export condition is on: run again with it, so the benchmark needs no build.
if (!process.execArgv.includes(sourceCondition)) {
  const child = spawnSync(process.execPath, [sourceCondition, ...process.execArgv, thisFile, ...process.argv.slice(2)], { stdio: 'inherit' })
  process.exit(child.status ?? 1)
}

const { Tokenizer: JavaScriptTokenizer } = await import('@huggingface/tokenizers')
const native = (await import('tokenizers')).default
const { Tokenizer } = await import('../src/index.js')
const { largeDocuments } = await import('../test/conformance-corpus.js')
const { referenceFiles, referenceTokenizerNames } = await import('../test/reference-tokenizers.js')

const quick = process.argv.includes('--quick')
const warmupRounds = quick ? 1 : 2
const measuredRounds = quick ? 3 : 7

type Implementation = 'ours (warm cache)' | 'ours (cold cache)' | '@huggingface/tokenizers' | 'tokenizers (Rust, native)'
const implementations: Implementation[] = ['ours (warm cache)', 'ours (cold cache)', '@huggingface/tokenizers', 'tokenizers (Rust, native)']

interface Measurement {
  tokenizer: string
  implementation: Implementation
  megabytesPerSecond: number
  tokensPerSecond: number
  medianMilliseconds: number
  loadMilliseconds: number
}

const documents = largeDocuments()
const texts = documents.map((document) => document.text)
const totalBytes = texts.reduce((sum, text) => sum + Buffer.byteLength(text, 'utf8'), 0)

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

const machine = {
  cpu: cpus()[0]?.model ?? 'unknown',
  cores: availableParallelism(),
  memoryGigabytes: Math.round(totalmem() / 2 ** 30),
  node: process.version,
  platform: `${process.platform} ${process.arch}`,
  loadAverage: loadavg().map((value) => Number(value.toFixed(2))),
}
console.log(
  `machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGigabytes} GiB, Node ${machine.node}, ${machine.platform}, load ${machine.loadAverage.join(' ')}`,
)
console.log(`documents: ${documents.map((document) => `${document.category} (${(Buffer.byteLength(document.text) / 1000).toFixed(0)} KB)`).join(', ')}`)
console.log(`rounds: ${warmupRounds} warm-up + ${measuredRounds} measured, interleaved\n`)

const measurements: Measurement[] = []
for (const name of referenceTokenizerNames) {
  const files = referenceFiles(name)
  const timeLoad = <T>(load: () => T): [T, number] => {
    const start = performance.now()
    const value = load()
    return [value, performance.now() - start]
  }
  const [ours, oursLoad] = timeLoad(() => Tokenizer.fromJSON(JSON.parse(files.tokenizerText), files.config))
  const [javascript, javascriptLoad] = timeLoad(() => new JavaScriptTokenizer(JSON.parse(files.tokenizerText) as Record<string, unknown>, files.config))
  const [rust, rustLoad] = timeLoad(() => native.Tokenizer.fromString(files.tokenizerText))
  const loads: Record<Implementation, number> = {
    'ours (warm cache)': oursLoad,
    'ours (cold cache)': oursLoad,
    '@huggingface/tokenizers': javascriptLoad,
    'tokenizers (Rust, native)': rustLoad,
  }

  // The same ids from all three, or the comparison means nothing.
  let tokenCount = 0
  for (const text of texts) {
    const ids = Array.from(ours.encode(text))
    const javascriptIds = javascript.encode(text).ids
    const rustIds = (await rust.encode(text)).getIds()
    if (JSON.stringify(ids) !== JSON.stringify(javascriptIds) || JSON.stringify(ids) !== JSON.stringify(rustIds)) {
      throw new Error(`${name}: the three implementations disagree on a document`)
    }
    tokenCount += ids.length
  }

  const encodeAll: Record<Implementation, () => Promise<void>> = {
    'ours (warm cache)': async () => {
      for (const text of texts) ours.encode(text)
    },
    'ours (cold cache)': async () => {
      ours.clearCache()
      for (const text of texts) ours.encode(text)
    },
    '@huggingface/tokenizers': async () => {
      for (const text of texts) javascript.encode(text)
    },
    'tokenizers (Rust, native)': async () => {
      for (const text of texts) await rust.encode(text)
    },
  }
  const times: Record<Implementation, number[]> = {
    'ours (warm cache)': [],
    'ours (cold cache)': [],
    '@huggingface/tokenizers': [],
    'tokenizers (Rust, native)': [],
  }
  for (let round = 0; round < warmupRounds + measuredRounds; round++) {
    for (const implementation of implementations) {
      const start = performance.now()
      await encodeAll[implementation]()
      if (round >= warmupRounds) times[implementation].push(performance.now() - start)
    }
  }
  for (const implementation of implementations) {
    const milliseconds = median(times[implementation])
    const measurement: Measurement = {
      tokenizer: name,
      implementation,
      megabytesPerSecond: totalBytes / 1e6 / (milliseconds / 1000),
      tokensPerSecond: tokenCount / (milliseconds / 1000),
      medianMilliseconds: milliseconds,
      loadMilliseconds: loads[implementation],
    }
    measurements.push(measurement)
    console.log(
      `${name.padEnd(7)} ${implementation.padEnd(26)} ${measurement.megabytesPerSecond.toFixed(2).padStart(7)} MB/s ${(measurement.tokensPerSecond / 1e6).toFixed(2).padStart(6)} M tokens/s  (load ${measurement.loadMilliseconds.toFixed(0)} ms)`,
    )
  }
  console.log()
}

const speedOf = (tokenizer: string, implementation: Implementation): number =>
  measurements.find((measurement) => measurement.tokenizer === tokenizer && measurement.implementation === implementation)!.megabytesPerSecond
const ratios = referenceTokenizerNames.map((name) => ({
  tokenizer: name,
  warmOverJavaScript: speedOf(name, 'ours (warm cache)') / speedOf(name, '@huggingface/tokenizers'),
  warmOverRust: speedOf(name, 'ours (warm cache)') / speedOf(name, 'tokenizers (Rust, native)'),
  coldOverJavaScript: speedOf(name, 'ours (cold cache)') / speedOf(name, '@huggingface/tokenizers'),
  coldOverRust: speedOf(name, 'ours (cold cache)') / speedOf(name, 'tokenizers (Rust, native)'),
}))
for (const ratio of ratios) {
  console.log(
    `${ratio.tokenizer.padEnd(7)} ours/@huggingface/tokenizers ${ratio.warmOverJavaScript.toFixed(1)}× warm, ${ratio.coldOverJavaScript.toFixed(1)}× cold; ours/tokenizers (Rust) ${ratio.warmOverRust.toFixed(1)}× warm, ${ratio.coldOverRust.toFixed(1)}× cold`,
  )
}

const outputDirectory = join(repositoryRoot, 'bench-results')
mkdirSync(outputDirectory, { recursive: true })
const result = {
  benchmark: 'tokenizer',
  date: new Date().toISOString(),
  machine,
  documents: documents.map((document) => ({ name: document.category, bytes: Buffer.byteLength(document.text, 'utf8') })),
  rounds: { warmup: warmupRounds, measured: measuredRounds },
  measurements,
  ratios,
}
writeFileSync(join(outputDirectory, 'tokenizer.json'), `${JSON.stringify(result, null, 2)}\n`)
const table = [
  '# tokenizer benchmark',
  '',
  `${result.date} · ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGigabytes} GiB · Node ${machine.node} · ${machine.platform} · load ${machine.loadAverage.join(' ')}`,
  '',
  `Encoding ${(totalBytes / 1000).toFixed(0)} KB (${documents.length} seeded documents), medians of ${measuredRounds} interleaved rounds after ${warmupRounds} warm-up.`,
  '',
  '| tokenizer | implementation | MB/s | M tokens/s | load (ms) |',
  '| --- | --- | ---: | ---: | ---: |',
  ...measurements.map(
    (measurement) =>
      `| ${measurement.tokenizer} | ${measurement.implementation} | ${measurement.megabytesPerSecond.toFixed(2)} | ${(measurement.tokensPerSecond / 1e6).toFixed(2)} | ${measurement.loadMilliseconds.toFixed(0)} |`,
  ),
  '',
  '| tokenizer | ours / @huggingface/tokenizers (warm, cold) | ours / tokenizers Rust (warm, cold) |',
  '| --- | ---: | ---: |',
  ...ratios.map(
    (ratio) =>
      `| ${ratio.tokenizer} | ${ratio.warmOverJavaScript.toFixed(1)}×, ${ratio.coldOverJavaScript.toFixed(1)}× | ${ratio.warmOverRust.toFixed(1)}×, ${ratio.coldOverRust.toFixed(1)}× |`,
  ),
  '',
]
writeFileSync(join(outputDirectory, 'tokenizer.md'), table.join('\n'))
console.log(`\nwritten: bench-results/tokenizer.json, bench-results/tokenizer.md`)
