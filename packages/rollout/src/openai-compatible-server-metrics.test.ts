import type { GenerateOptions, GenerationRequest, PolicyV1 } from '@ludic/core'
import { createScriptedPolicy } from '@ludic/core/test'
import { afterEach, describe, expect, it } from 'vitest'
import { serveOpenAICompatible, type OpenAICompatibleServer, type ServeOptions } from './openai-compatible-server.js'
import type { PolicyWithMetrics } from './openai-server-metrics.js'
import { waitFor } from './test/episodes.js'

// vLLM's min_tokens / ignore_eos on the wire, and GET /metrics (Prometheus' text format, vLLM's names).
const servers: OpenAICompatibleServer[] = []
const gates: (() => void)[] = []
afterEach(async () => {
  gates.splice(0).forEach((open) => open())
  await Promise.all(servers.splice(0).map((server) => server.close()))
})

async function serve(policy: PolicyV1, options: ServeOptions = {}) {
  const server = await serveOpenAICompatible(policy, options)
  servers.push(server)
  return server
}

const origin = (server: OpenAICompatibleServer) => server.url.replace(/\/v1$/, '')
const post = (server: OpenAICompatibleServer, path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })
const chat = (content: string, extra: Record<string, unknown> = {}) => ({ model: 'echo', messages: [{ role: 'user', content }], ...extra })

/**
 * Echoes the last message word by word through `onText` (each word one token of the answer's ids); records every
 * request it gets. `gate`, when given, holds each call after its first word until the test opens it.
 */
function createRecordingEcho(options: { gated?: boolean; metrics?: () => Record<string, number> } = {}): PolicyWithMetrics & { requests: GenerationRequest[] } {
  const requests: GenerationRequest[] = []
  const policy = {
    specificationVersion: 'v1' as const,
    id: 'echo',
    requests,
    async generate(batch: readonly GenerationRequest[], generateOptions: GenerateOptions = {}) {
      requests.push(...batch)
      const words = batch.map((request) => `echo: ${request.prompt ?? request.messages!.at(-1)!.content}`.split(/(?<= )/))
      words.forEach((pieces, index) => generateOptions.onText?.(index, pieces[0]!))
      if (options.gated === true) await new Promise<void>((resolve) => gates.push(resolve))
      return words.map((pieces, index) => {
        pieces.slice(1).forEach((piece) => generateOptions.onText?.(index, piece))
        const request = batch[index]!
        const tokens = Math.min(pieces.length, request.maxTokens)
        return {
          text: pieces.slice(0, tokens).join(''),
          promptTokenIds: Int32Array.from({ length: 3 }, (_, position) => position),
          tokenIds: Int32Array.from({ length: tokens }, (_, position) => 10 + position),
          logprobs: new Float32Array(tokens),
          finishReason: tokens < pieces.length ? ('length' as const) : ('stop' as const),
        }
      })
    },
    ...(options.metrics === undefined ? {} : { metrics: options.metrics }),
  }
  return policy
}

/** One sample of the exposition text: its metric name, labels and value. */
interface Sample {
  name: string
  labels: Record<string, string>
  value: number
}

/** Parses Prometheus' text format 0.0.4 (what a scraper reads): `# HELP` / `# TYPE` lines and `name{labels} value` samples. */
function parseExposition(text: string): { samples: Sample[]; types: Map<string, string> } {
  const samples: Sample[] = []
  const types = new Map<string, string>()
  for (const line of text.split('\n')) {
    if (line === '') continue
    const type = /^# TYPE (\S+) (counter|gauge|histogram|summary|untyped)$/.exec(line)
    if (type !== null) {
      types.set(type[1]!, type[2]!)
      continue
    }
    if (line.startsWith('# HELP ')) continue
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (sample === null) throw new Error(`not an exposition line: ${JSON.stringify(line)}`)
    const labels: Record<string, string> = {}
    for (const [, key, value] of (sample[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[key!] = value!
    const value = sample[3] === '+Inf' ? Number.POSITIVE_INFINITY : Number(sample[3])
    if (Number.isNaN(value)) throw new Error(`not a sample value: ${JSON.stringify(line)}`)
    samples.push({ name: sample[1]!, labels, value })
  }
  return { samples, types }
}

async function scrape(server: OpenAICompatibleServer) {
  const response = await fetch(`${origin(server)}/metrics`)
  expect(response.status).toBe(200)
  expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8')
  const parsed = parseExposition(await response.text())
  const value = (name: string, labels: Record<string, string> = {}) =>
    parsed.samples.find((sample) => sample.name === name && Object.entries(labels).every(([key, wanted]) => sample.labels[key] === wanted))?.value
  return { ...parsed, value }
}

describe("vLLM's min_tokens and ignore_eos on serveOpenAICompatible", () => {
  it('hands them to the policy as minTokens / ignoreEos, on both endpoints, streamed or not; the defaults (0, false) are left out', async () => {
    const policy = createRecordingEcho()
    const server = await serve(policy)
    expect((await post(server, '/chat/completions', chat('a', { min_tokens: 3, ignore_eos: true, max_tokens: 5 }))).status).toBe(200)
    expect((await post(server, '/completions', { model: 'echo', prompt: 'b', min_tokens: 2, max_tokens: 2, stream: true })).status).toBe(200)
    expect((await post(server, '/chat/completions', chat('c', { min_tokens: 0, ignore_eos: false }))).status).toBe(200)
    expect((await post(server, '/chat/completions', chat('d', { min_tokens: 7, max_completion_tokens: 7, max_tokens: 1 }))).status).toBe(200)
    expect(policy.requests[0]).toMatchObject({ maxTokens: 5, minTokens: 3, ignoreEos: true })
    expect(policy.requests[1]).toMatchObject({ prompt: 'b', maxTokens: 2, minTokens: 2 })
    expect(policy.requests[1]).not.toHaveProperty('ignoreEos')
    expect(policy.requests[2]).not.toHaveProperty('minTokens')
    expect(policy.requests[2]).not.toHaveProperty('ignoreEos')
    expect(policy.requests[3]).toMatchObject({ maxTokens: 7, minTokens: 7 })
  })

  it('answers 400 naming the field: min_tokens above max_tokens (or the default), not an integer ≥ 0; ignore_eos not a boolean', async () => {
    const policy = createRecordingEcho()
    const server = await serve(policy, { defaultMaxTokens: 16 })
    const cases: [string, unknown, RegExp][] = [
      ['/chat/completions', chat('x', { min_tokens: 6, max_tokens: 5 }), /'min_tokens'.*less than or equal to max_tokens=5, got 6/],
      ['/chat/completions', chat('x', { min_tokens: 6, max_completion_tokens: 5 }), /max_completion_tokens=5, got 6/],
      [
        '/chat/completions',
        chat('x', { min_tokens: 17 }),
        /max_tokens=16 \(the server's default, as the request gives none: the defaultMaxTokens option\), got 17/,
      ],
      ['/completions', { model: 'echo', prompt: 'x', min_tokens: 9, max_tokens: 8 }, /max_tokens=8, got 9/],
      ['/completions', { model: 'echo', prompt: 'x', min_tokens: 17, max_tokens: 16 }, /max_tokens=16, got 17\.$/], // given, though equal to the default
      ['/completions', { model: 'echo', prompt: 'x', min_tokens: 2 ** 60 }, /'min_tokens'/],
      ['/chat/completions', chat('x', { min_tokens: -1 }), /'min_tokens'/],
      ['/chat/completions', chat('x', { min_tokens: 1.5 }), /'min_tokens'/],
      ['/completions', { model: 'echo', prompt: 'x', ignore_eos: 'yes' }, /'ignore_eos'/],
    ]
    for (const [path, body, message] of cases) {
      const response = await post(server, path, body)
      expect(response.status, JSON.stringify(body)).toBe(400)
      const answer = (await response.json()) as { error: { message: string; param: string; type: string } }
      expect(answer.error.message).toMatch(message)
      expect(answer.error).toMatchObject({
        type: 'invalid_request_error',
        param: Object.keys(body as object).find((key) => key === 'min_tokens' || key === 'ignore_eos'),
      })
    }
    expect(policy.requests).toEqual([])
  })

  it('answers 400 when the policy cannot honour them (a scripted policy refuses them by name)', async () => {
    const server = await serve(createScriptedPolicy({ id: 'echo', replies: () => 'fixed' }))
    const response = await post(server, '/chat/completions', chat('x', { min_tokens: 1 }))
    expect(response.status).toBe(400)
    expect(((await response.json()) as { error: { message: string } }).error.message).toMatch(/refused the request.*requests\[0\]\.minTokens/)
    expect((await post(server, '/chat/completions', chat('x', { ignore_eos: true }))).status).toBe(400)
    expect((await post(server, '/chat/completions', chat('x', { min_tokens: 0, ignore_eos: false }))).status).toBe(200)
  })
})

describe('GET /metrics', () => {
  it("counts requests in vLLM's names: tokens, successes by finish reason, latency histograms whose buckets add up; bad requests by status", async () => {
    const server = await serve(createRecordingEcho(), { apiKey: 'secret' })
    const auth = { authorization: 'Bearer secret' }
    const empty = await scrape(server) // open without the key, as vLLM's is
    expect(empty.value('vllm:prompt_tokens_total', { model_name: 'echo' })).toBe(0)
    expect(empty.value('vllm:e2e_request_latency_seconds_count')).toBe(0)
    expect(empty.types.get('vllm:time_to_first_token_seconds')).toBe('histogram')

    expect((await post(server, '/chat/completions', chat('one two three', { n: 2, seed: 1 }), auth)).status).toBe(200) // 2 × 4 tokens, stop
    expect((await post(server, '/completions', { model: 'echo', prompt: 'four five', max_tokens: 2 }, auth)).status).toBe(200) // 2 tokens, length
    const streamed = await post(server, '/chat/completions', chat('six', { stream: true }), auth) // 2 tokens, stop
    expect(await streamed.text()).toMatch(/data: \[DONE\]/)
    expect((await post(server, '/chat/completions', chat('x', { min_tokens: 3, max_tokens: 2 }), auth)).status).toBe(400)
    expect((await post(server, '/chat/completions', chat('x'))).status).toBe(401)

    const metrics = await scrape(server)
    const model = { model_name: 'echo' }
    expect(metrics.value('vllm:prompt_tokens_total', model)).toBe(3 + 3 + 3) // each prompt once: usage.prompt_tokens
    expect(metrics.value('vllm:generation_tokens_total', model)).toBe(8 + 2 + 2)
    expect(metrics.value('vllm:request_success_total', { ...model, finished_reason: 'stop' })).toBe(3)
    expect(metrics.value('vllm:request_success_total', { ...model, finished_reason: 'length' })).toBe(1)
    expect(metrics.value('ludic_http_responses_total', { code: '200' })).toBeGreaterThanOrEqual(4) // the scrapes are answers too
    expect(metrics.value('ludic_http_responses_total', { code: '400' })).toBe(1)
    expect(metrics.value('ludic_http_responses_total', { code: '401' })).toBe(1)
    expect(metrics.value('vllm:num_requests_running', model)).toBe(0)
    expect(metrics.value('vllm:num_requests_waiting', model)).toBe(0)
    expect(metrics.value('ludic_healthy')).toBe(1)
    for (const histogram of ['vllm:time_to_first_token_seconds', 'vllm:e2e_request_latency_seconds', 'vllm:request_generation_tokens']) {
      const buckets = metrics.samples.filter((sample) => sample.name === `${histogram}_bucket`)
      const counts = buckets.map((sample) => sample.value)
      expect(counts).toEqual([...counts].sort((a, b) => a - b)) // cumulative
      expect(buckets.at(-1)!.labels.le).toBe('+Inf')
      const count = metrics.value(`${histogram}_count`)
      expect(buckets.at(-1)!.value).toBe(count)
      expect(count).toBe(histogram === 'vllm:request_generation_tokens' ? 4 : 3) // per choice / per request
      expect(metrics.value(`${histogram}_sum`)).toBeGreaterThanOrEqual(0)
    }
    const generated = metrics.samples.filter((sample) => sample.name === 'vllm:request_generation_tokens_bucket')
    expect(generated.find((sample) => sample.labels.le === '1')!.value).toBe(0)
    expect(generated.find((sample) => sample.labels.le === '2')!.value).toBe(2)
    expect(generated.find((sample) => sample.labels.le === '5')!.value).toBe(4)
    expect(metrics.value('vllm:request_generation_tokens_sum')).toBe(12)
    // Without a policy metrics hook, the engine's gauges are absent (not 0).
    expect(metrics.samples.some((sample) => sample.name.startsWith('vllm:kv_cache') || sample.name.startsWith('vllm:prefix_cache'))).toBe(false)
  })

  it('answers while a long generation runs, showing it as running', async () => {
    const server = await serve(createRecordingEcho({ gated: true }))
    const pending = post(server, '/chat/completions', chat('slow one', { n: 3 }))
    await waitFor(() => gates.length === 1)
    const during = await scrape(server)
    expect(during.value('vllm:num_requests_running', { model_name: 'echo' })).toBe(3)
    expect(during.value('vllm:e2e_request_latency_seconds_count')).toBe(0)
    expect(during.value('ludic_open_connections')).toBeGreaterThanOrEqual(1)
    gates.splice(0).forEach((open) => open())
    expect((await pending).status).toBe(200)
    const after = await scrape(server)
    expect(after.value('vllm:num_requests_running', { model_name: 'echo' })).toBe(0)
    expect(after.value('vllm:e2e_request_latency_seconds_count')).toBe(1)
    // The first word came before the gate: the time to first token is at most the latency.
    expect(after.value('vllm:time_to_first_token_seconds_sum')).toBeLessThanOrEqual(after.value('vllm:e2e_request_latency_seconds_sum')!)
  })

  it("exports the policy's metrics hook: KV usage and prefix-cache counters in vLLM's names, running/waiting from it, other names as ludic_engine_*", async () => {
    let figures: Record<string, number> = {
      kvCacheUsage: 0.25,
      prefixCacheQueries: 120,
      prefixCacheHits: 90,
      runningRequests: 5,
      waitingRequests: 2,
      slotsFree: 3,
    }
    const server = await serve(createRecordingEcho({ metrics: () => figures }))
    const first = await scrape(server)
    const model = { model_name: 'echo' }
    expect(first.value('vllm:kv_cache_usage_perc', model)).toBe(0.25)
    expect(first.types.get('vllm:kv_cache_usage_perc')).toBe('gauge')
    expect(first.value('vllm:prefix_cache_queries_total', model)).toBe(120)
    expect(first.value('vllm:prefix_cache_hits_total', model)).toBe(90)
    expect(first.types.get('vllm:prefix_cache_hits_total')).toBe('counter')
    expect(first.value('vllm:num_requests_running', model)).toBe(5)
    expect(first.value('vllm:num_requests_waiting', model)).toBe(2)
    expect(first.value('ludic_engine_slots_free')).toBe(3)
    expect(first.value('ludic_engine_metrics_errors_total')).toBe(0)

    figures = { kvCacheUsage: 0.5, 'bad name!': 1, prefixCacheHits: Number.NaN }
    const second = await scrape(server)
    expect(second.value('vllm:kv_cache_usage_perc', model)).toBe(0.5)
    expect(second.value('vllm:prefix_cache_hits_total', model)).toBeUndefined() // gone with its figure
    expect(second.value('ludic_engine_slots_free')).toBeUndefined()
    expect(second.value('vllm:num_requests_running', model)).toBe(0) // the server's own count again
    expect(second.value('ludic_engine_metrics_errors_total')).toBe(1)

    figures = null as unknown as Record<string, number>
    const third = await scrape(server)
    expect(third.value('vllm:kv_cache_usage_perc', model)).toBeUndefined()
    expect(third.value('ludic_engine_metrics_errors_total')).toBe(2)
  })

  it('survives a hook that throws: the engine metrics are left out of that scrape, counted as an error', async () => {
    const server = await serve(
      createRecordingEcho({
        metrics: () => {
          throw new Error('engine busy')
        },
      }),
    )
    const metrics = await scrape(server)
    expect(metrics.value('ludic_engine_metrics_errors_total')).toBe(1)
    expect(metrics.value('vllm:num_requests_running', { model_name: 'echo' })).toBe(0)
    expect((await fetch(`${origin(server)}/metrics`, { method: 'POST' })).status).toBe(405)
  })
})
