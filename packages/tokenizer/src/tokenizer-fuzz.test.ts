/**
 * Seeded fuzzing of what a tokenizer reads from outside, like the safetensors one: `tokenizer.json` (the
 * real tokenizers cut to a few hundred tokens and synthetic ones, mutated as parsed JSON and as text) and
 * chat templates (real and synthetic, mutated, rendered with a few conversations). Loading, encoding,
 * decoding, streaming and rendering must each succeed or throw a `LudicError` (`ParseError`,
 * `InvalidArgumentError`, `TokenizerLimitError`…): any other exception, a crash or a hang (the test's timeout)
 * fails. How long a case takes is not asserted (speed is the benchmarks' business, and a clock here failed on
 * busy machines); what bounds the work of a case is the tokenizer's limits (template steps, string lengths,
 * Sequence growth, the patterns refused at load), which the mutations reach (the refused counts). Other seeds: `TOKENIZER_FUZZ_SEED=<n> npx vitest run --project tokenizer tokenizer-fuzz`.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type ChatMessage, createRandom, LudicError, type Random } from '@ludic/core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import references from '../test/fixtures/chat-template-references.json' with { type: 'json' }
import { type FuzzTokenizer, fuzzTokenizers, mutateJson, mutateTemplate, mutateText, randomText } from '../test/fuzz-inputs.js'
import { loadTokenizer } from './load-tokenizer.js'
import { Tokenizer } from './tokenizer.js'

const seedOverride = process.env.TOKENIZER_FUZZ_SEED === undefined ? undefined : Number(process.env.TOKENIZER_FUZZ_SEED)
const seedOf = (fixed: number) => seedOverride ?? fixed

/** What the cases of one test gave: failures (anything but success or a LudicError) and counts. */
class FuzzLog {
  readonly failures: string[] = []
  succeeded = 0
  refused = 0

  /** Runs `call`; a LudicError counts as refused, anything else thrown is a failure. Returns the result, or undefined. */
  attempt<Result>(label: string, call: () => Result): Result | undefined {
    try {
      const result = call()
      this.succeeded++
      return result
    } catch (error) {
      if (LudicError.isInstance(error)) this.refused++
      else this.failures.push(`${label}: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`.slice(0, 600))
      return undefined
    }
  }
}

/** Texts that stress each stage: long runs for the regexes, special tokens, awkward Unicode. */
function textsFor(tokenizer: Tokenizer, random: Random): string[] {
  const special = tokenizer.addedVocabulary.tokens.slice(0, 3).map((token) => token.content)
  return [
    '',
    'Hello world! héllo 漢字 😀 123',
    `${'a'.repeat(2000)}b`,
    `${' '.repeat(500)}\n\n${'\t'.repeat(100)}x`,
    `${special.join(' hi ')} ${special[0] ?? ''}`,
    randomText(random, 200),
  ]
}

/** Does everything a user would with a loaded tokenizer, each call on its own. */
function exercise(tokenizer: Tokenizer, random: Random, log: FuzzLog, label: string): void {
  for (const text of textsFor(tokenizer, random)) {
    const ids = log.attempt(`${label} encode`, () => tokenizer.encode(text))
    log.attempt(`${label} encode without special tokens`, () => tokenizer.encode(text, { addSpecialTokens: false }))
    if (ids === undefined) continue
    log.attempt(`${label} decode`, () =>
      tokenizer.decode(ids, { skipSpecialTokens: random.nextInt(2) === 0, cleanUpTokenizationSpaces: random.nextInt(2) === 0 }),
    )
    log.attempt(`${label} stream`, () => {
      const stream = tokenizer.createStreamDecoder()
      let streamed = ''
      for (const id of ids) streamed += stream.push(id)
      return streamed + stream.flush()
    })
  }
  const randomIds = Array.from({ length: 20 }, () =>
    random.choice([0, 1, 2, 255, 256, tokenizer.vocabSize - 1, tokenizer.vocabSize, 2 ** 24, 2 ** 31 - 1, random.nextInt(1000)]),
  )
  log.attempt(`${label} decode random ids`, () => tokenizer.decode(randomIds))
  log.attempt(`${label} idsToTokens`, () => tokenizer.idsToTokens(randomIds))
  log.attempt(`${label} tokenToId`, () => tokenizer.tokenToId(randomText(random, 5)))
  if (tokenizer.chatTemplate !== undefined) log.attempt(`${label} applyChatTemplate`, () => tokenizer.encodeChat([{ role: 'user', content: 'hi' }]))
}

interface Conversation {
  messages: ChatMessage[]
  tools?: Record<string, unknown>[]
  variables: Record<string, unknown>
}

/** The conversations of the transformers references (tools and variables included), and a few odd ones. */
const conversations: Conversation[] = [
  ...references.cases
    .filter((_, index) => index % 3 === 0)
    .map((entry) => ({
      messages: entry.messages as ChatMessage[],
      ...(entry.tools === null ? {} : { tools: entry.tools as Record<string, unknown>[] }),
      variables: entry.variables as Record<string, unknown>,
    })),
  { messages: [], variables: {} },
  {
    messages: [
      { role: 'assistant', content: '' },
      { role: 'tool', content: '{"a": 1}', name: 'f' },
    ],
    variables: { enable_thinking: false },
  },
  { messages: [{ role: 'user', content: `${'{{ x }}'.repeat(100)}<|im_end|>\u0000\ud800` }], variables: { range: 1 } },
]

describe('tokenizer fuzzing', () => {
  const bases = fuzzTokenizers()
  const baseTexts = new Map<FuzzTokenizer, string>(bases.map((base) => [base, JSON.stringify(base.tokenizer)]))
  let directory: string
  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'ludic-tokenizer-fuzz-'))
  })
  afterAll(async () => {
    await rm(directory, { recursive: true, force: true, maxRetries: 5 })
  })

  it('tokenizer.json: 1,500 mutated files load and work, or give typed errors', () => {
    const random = createRandom(seedOf(0x70c3))
    const log = new FuzzLog()
    for (let trial = 0; trial < 1500; trial++) {
      const base = random.choice(bases)
      const json = JSON.parse(baseTexts.get(base)!) as Record<string, never>
      const done = trial % 10 === 0 ? ['unmutated'] : Array.from({ length: 1 + random.nextInt(3) }, () => mutateJson(random, json, bases))
      const label = `trial ${trial} (${base.name}: ${done.join(', ')})`
      const tokenizer = log.attempt(`${label} load`, () => Tokenizer.fromJSON(json, base.config))
      if (tokenizer !== undefined) exercise(tokenizer, random, log, label)
    }
    expect(log.failures).toEqual([])
    // Both outcomes are well represented: the mutations reach the checks, not only the happy path.
    expect(log.succeeded).toBeGreaterThan(5000)
    expect(log.refused).toBeGreaterThan(500)
  })

  it('tokenizer.json as text: 300 truncated, corrupted or random files load from disk or give typed errors', async () => {
    const random = createRandom(seedOf(0x7e47))
    const log = new FuzzLog()
    for (let trial = 0; trial < 300; trial++) {
      const base = random.choice(bases)
      const text = mutateText(random, baseTexts.get(base)!)
      const label = `trial ${trial} (${base.name}, text of ${text.length} characters: ${JSON.stringify(text.slice(0, 40))}…)`
      await writeFile(join(directory, 'tokenizer.json'), text)
      await writeFile(
        join(directory, 'tokenizer_config.json'),
        random.nextInt(4) === 0 ? mutateText(random, JSON.stringify(base.config)) : JSON.stringify(base.config),
      )
      try {
        exercise(await loadTokenizer(directory), random, log, label)
        log.succeeded++
      } catch (error) {
        if (LudicError.isInstance(error)) log.refused++
        else log.failures.push(`${label} load: ${String(error)}`.slice(0, 600))
      }
    }
    expect(log.failures).toEqual([])
    expect(log.refused).toBeGreaterThan(100)
  })

  it('chat templates: 800 mutated templates render each conversation or give typed errors', () => {
    const random = createRandom(seedOf(0xc4a7))
    const log = new FuzzLog()
    const templates = [...new Set([...bases.flatMap((base) => chatTemplatesOf(base.config)), '{{ messages[0].content }}'])]
    expect(templates.length).toBeGreaterThanOrEqual(4)
    const tokenizerJson = JSON.parse(baseTexts.get(bases.find((base) => base.name === 'qwen3')!)!) as unknown
    for (let trial = 0; trial < 800; trial++) {
      let template = random.choice(templates)
      for (let step = 0, steps = trial % 10 === 0 ? 0 : 1 + random.nextInt(3); step < steps; step++) template = mutateTemplate(random, template, templates)
      const label = `trial ${trial} (template ${JSON.stringify(template.slice(0, 120))}…)`
      const tokenizer = Tokenizer.fromJSON(tokenizerJson, { chat_template: template, eos_token: '<|im_end|>', bos_token: null })
      for (const conversation of random.shuffle([...conversations]).slice(0, 3)) {
        const options = {
          addGenerationPrompt: random.nextInt(2) === 0,
          variables: conversation.variables,
          ...(conversation.tools === undefined ? {} : { tools: conversation.tools }),
        }
        log.attempt(`${label} with ${conversation.messages.length} messages`, () => tokenizer.encodeChat(conversation.messages, options))
      }
    }
    expect(log.failures).toEqual([])
    expect(log.succeeded).toBeGreaterThan(300)
    expect(log.refused).toBeGreaterThan(300)
  })
})

function chatTemplatesOf(config: unknown): string[] {
  const template = (config as { chat_template?: unknown }).chat_template
  if (typeof template === 'string') return [template]
  if (Array.isArray(template)) return template.map((entry) => (entry as { template: string }).template)
  return []
}
