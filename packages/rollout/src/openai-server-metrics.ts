import type { FinishReason, PolicyV1 } from '@ludic/core'
import { Counter, Gauge, Histogram, Registry } from 'prom-client'

/**
 * A policy's own figures for `GET /metrics`, read at every scrape: what only its generation engine knows (KV memory,
 * prefix cache, its own queue). Finite numbers by name; the known names (`policyMetricNames`) become vLLM's metrics,
 * any other becomes a `ludic_engine_<name in snake case>` gauge. A policy offers it as an optional `metrics` method
 * (`PolicyWithMetrics`); without one, those metrics are simply absent.
 */
export type PolicyMetricsSource = () => Record<string, number>

/** A `PolicyV1` that reports figures for `/metrics` (see `PolicyMetricsSource`). */
export interface PolicyWithMetrics extends PolicyV1 {
  readonly metrics?: PolicyMetricsSource
}

/**
 * The `PolicyMetricsSource` names the server exports under vLLM's names (its V1 engine's, as of 0.10–0.11):
 *
 * - `kvCacheUsage`: the fraction of the KV memory budget in use, 0 to 1 → gauge `vllm:kv_cache_usage_perc`;
 * - `prefixCacheQueries`: prompt tokens looked up in the prefix cache since the start → counter `vllm:prefix_cache_queries_total`;
 * - `prefixCacheHits`: of those, tokens found there → counter `vllm:prefix_cache_hits_total` (hit rate: hits / queries);
 * - `runningRequests` / `waitingRequests`: sequences decoding now / waiting for a slot → gauges `vllm:num_requests_running` /
 *   `vllm:num_requests_waiting`, in place of the server's own counts (which see only the batching queue).
 */
export const policyMetricNames = {
  kvCacheUsage: 'vllm:kv_cache_usage_perc',
  prefixCacheQueries: 'vllm:prefix_cache_queries_total',
  prefixCacheHits: 'vllm:prefix_cache_hits_total',
  runningRequests: 'vllm:num_requests_running',
  waitingRequests: 'vllm:num_requests_waiting',
} as const

/** The policy's `metrics` method, bound, when it has one. */
export function policyMetricsSource(policy: PolicyV1): PolicyMetricsSource | undefined {
  const metrics = (policy as PolicyWithMetrics).metrics
  return typeof metrics === 'function' ? () => metrics.call(policy) : undefined
}

/** What the server knows at a scrape, read then (the counters below are kept by `ServerMetrics` itself). */
export interface ServerMetricsReadings {
  /** Generation sequences (prompts × n) in the server's hands now, and of those, waiting for a batch. */
  sequences(): { inFlight: number; waiting: number }
  /** Answers sent, by HTTP status. */
  answers(): Record<string, number>
  connections(): number
  slowClientsCut(): number
  hostsRefused(): number
  loraAdapters(): number
  healthy(): boolean
  /** The base policy's figures (see `PolicyMetricsSource`). */
  policy: PolicyMetricsSource | undefined
}

/** One answered generation request, as `ServerMetrics.requestFinished` records it. */
export interface FinishedRequest {
  /** Prompt tokens, each prompt once (as `usage.prompt_tokens`). */
  promptTokens: number
  /** Each choice's prompt tokens, generated tokens and finish reason. */
  choices: readonly { promptTokens: number; tokens: number; finishReason: FinishReason }[]
  /** From the request's arrival to the first text the policy streamed (to the answer, when it streamed none), in seconds. */
  timeToFirstTokenSeconds: number
  /** From the request's arrival to its whole answer, in seconds. */
  latencySeconds: number
}

export interface ServerMetrics {
  /** `text/plain; version=0.0.4; charset=utf-8`: Prometheus' text exposition format. */
  readonly contentType: string
  requestFinished(request: FinishedRequest): void
  /** The exposition text of every metric now. */
  scrape(): Promise<string>
}

/** vLLM's buckets for `vllm:time_to_first_token_seconds`. */
const timeToFirstTokenBuckets = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560]
/** vLLM's buckets for its request latencies (`vllm:e2e_request_latency_seconds`). */
const requestLatencyBuckets = [0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680]
/** Distinct `ludic_engine_*` gauges at most: a policy reporting more names is cut there (and the rest counted as errors). */
const maxEngineGauges = 64

/** vLLM's `build_1_2_5_buckets`: 1, 2, 5, 10, 20, 50, … up to `limit`. */
function buckets125(limit: number): number[] {
  const buckets: number[] = []
  for (let exponent = 1; ; exponent *= 10) {
    for (const mantissa of [1, 2, 5]) {
      if (mantissa * exponent > limit) return buckets
      buckets.push(mantissa * exponent)
    }
  }
}

/**
 * The server's Prometheus metrics, in a registry of its own (two servers in one process do not mix): vLLM's names where
 * vLLM has the metric (labelled `model_name` as vLLM does), Ludic's under `ludic_`. Counters count from the server's
 * start. prom-client writes the text format (escaping, `+Inf` buckets, `_sum`/`_count`).
 */
export function createServerMetrics(modelName: string, readings: ServerMetricsReadings, options: { maxModelLength?: number } = {}): ServerMetrics {
  const registry = new Registry()
  const registers = [registry]
  const model = { model_name: modelName }
  const labelNames = ['model_name'] as const
  let engine: Record<string, number> | undefined

  new Gauge({
    name: 'vllm:num_requests_running',
    help: 'Number of requests in model execution batches.',
    labelNames,
    registers,
    collect() {
      const fromEngine = engine?.runningRequests
      const { inFlight, waiting } = readings.sequences()
      this.set(model, fromEngine ?? Math.max(0, inFlight - waiting))
    },
  })
  new Gauge({
    name: 'vllm:num_requests_waiting',
    help: 'Number of requests waiting to be processed.',
    labelNames,
    registers,
    collect() {
      this.set(model, engine?.waitingRequests ?? readings.sequences().waiting)
    },
  })
  const promptTokens = new Counter({ name: 'vllm:prompt_tokens_total', help: 'Number of prefill tokens processed.', labelNames, registers })
  const generationTokens = new Counter({ name: 'vllm:generation_tokens_total', help: 'Number of generation tokens processed.', labelNames, registers })
  const success = new Counter({
    name: 'vllm:request_success_total',
    help: 'Count of successfully processed requests (one per choice).',
    labelNames: ['model_name', 'finished_reason'],
    registers,
  })
  const timeToFirstToken = new Histogram({
    name: 'vllm:time_to_first_token_seconds',
    help: 'Histogram of time to first token in seconds.',
    labelNames,
    buckets: timeToFirstTokenBuckets,
    registers,
  })
  const latency = new Histogram({
    name: 'vllm:e2e_request_latency_seconds',
    help: 'Histogram of e2e request latency in seconds.',
    labelNames,
    buckets: requestLatencyBuckets,
    registers,
  })
  const tokenBuckets = buckets125(options.maxModelLength ?? 1_000_000)
  const requestPromptTokens = new Histogram({
    name: 'vllm:request_prompt_tokens',
    help: 'Number of prefill tokens processed (per choice).',
    labelNames,
    buckets: tokenBuckets,
    registers,
  })
  const requestGenerationTokens = new Histogram({
    name: 'vllm:request_generation_tokens',
    help: 'Number of generation tokens processed (per choice).',
    labelNames,
    buckets: tokenBuckets,
    registers,
  })
  // Touch the labelled series so a scrape before the first request shows zeros, as vLLM's does.
  for (const counter of [promptTokens, generationTokens]) counter.inc(model, 0)
  for (const reason of ['stop', 'length']) success.inc({ ...model, finished_reason: reason }, 0)
  timeToFirstToken.zero(model)
  latency.zero(model)
  requestPromptTokens.zero(model)
  requestGenerationTokens.zero(model)

  // Ludic's own.
  new Counter({
    name: 'ludic_http_responses_total',
    help: 'Answers the server sent, by HTTP status (bad requests among them).',
    labelNames: ['code'],
    registers,
    collect() {
      this.reset()
      for (const [code, count] of Object.entries(readings.answers())) this.inc({ code }, count)
    },
  })
  new Gauge({
    name: 'ludic_open_connections',
    help: 'Connections open now.',
    registers,
    collect() {
      this.set(readings.connections())
    },
  })
  new Counter({
    name: 'ludic_slow_stream_clients_cut_total',
    help: 'Streaming clients cut for not reading (maxStreamBufferBytes).',
    registers,
    collect() {
      this.reset()
      this.inc(readings.slowClientsCut())
    },
  })
  new Counter({
    name: 'ludic_hosts_refused_total',
    help: 'Requests refused for their Host header (allowedHosts).',
    registers,
    collect() {
      this.reset()
      this.inc(readings.hostsRefused())
    },
  })
  new Gauge({
    name: 'ludic_lora_adapters',
    help: 'LoRA adapters loaded now.',
    registers,
    collect() {
      this.set(readings.loraAdapters())
    },
  })
  new Gauge({
    name: 'ludic_healthy',
    help: '1 while the server is healthy (GET /health answers 200), else 0.',
    registers,
    collect() {
      this.set(readings.healthy() ? 1 : 0)
    },
  })
  const engineErrors = new Counter({
    name: 'ludic_engine_metrics_errors_total',
    help: "Scrapes whose policy metrics hook threw or returned something that is not a record of finite numbers (the engine's metrics are left out of those).",
    registers,
  })

  /** The metrics made from the policy's figures, by name: present only while the policy reports them. */
  const engineMetrics = new Map<string, Gauge | Counter>()
  /** The policy's figures, finite numbers only, and whether anything was wrong with them (thrown, not a record, a bad value). */
  const readEngine = (): { figures: Record<string, number> | undefined; faulty: boolean } => {
    if (readings.policy === undefined) return { figures: undefined, faulty: false }
    let figures: unknown
    try {
      figures = readings.policy()
    } catch {
      return { figures: undefined, faulty: true }
    }
    if (typeof figures !== 'object' || figures === null || Array.isArray(figures)) return { figures: undefined, faulty: true }
    const valid: Record<string, number> = {}
    let faulty = false
    for (const [name, value] of Object.entries(figures as Record<string, unknown>)) {
      if (typeof value === 'number' && Number.isFinite(value)) valid[name] = value
      else faulty = true
    }
    return { figures: valid, faulty }
  }
  /** Sets the engine's metrics from its figures (those it no longer reports are removed); false when a name was refused. */
  const updateEngineMetrics = (figures: Record<string, number> | undefined): boolean => {
    const present = new Set<string>()
    let cut = false
    for (const [key, value] of Object.entries(figures ?? {})) {
      if (key === 'runningRequests' || key === 'waitingRequests') continue // read by the gauges above
      const known = (policyMetricNames as Record<string, string>)[key]
      const name = known ?? engineGaugeName(key)
      if (name === undefined) {
        cut = true
        continue
      }
      let metric = engineMetrics.get(name)
      if (metric === undefined) {
        if (known === undefined && [...engineMetrics.keys()].filter((each) => each.startsWith('ludic_engine_')).length >= maxEngineGauges) {
          cut = true
          continue
        }
        metric = makeEngineMetric(name, key)
        engineMetrics.set(name, metric)
      }
      const labels = known === undefined ? {} : model
      if (metric instanceof Counter) {
        // A counter read from the policy: its total now (a negative one, which a counter cannot be, reads as 0).
        metric.reset()
        metric.inc(labels, Math.max(0, value))
      } else metric.set(labels, value)
      present.add(name)
    }
    for (const name of [...engineMetrics.keys()]) {
      if (present.has(name)) continue
      registry.removeSingleMetric(name)
      engineMetrics.delete(name)
    }
    return !cut
  }
  const makeEngineMetric = (name: string, key: string): Gauge | Counter => {
    if (name === policyMetricNames.prefixCacheQueries)
      return new Counter({ name, help: 'Prefix cache queries, in terms of number of queried tokens.', labelNames, registers })
    if (name === policyMetricNames.prefixCacheHits)
      return new Counter({ name, help: 'Prefix cache hits, in terms of number of cached tokens.', labelNames, registers })
    if (name === policyMetricNames.kvCacheUsage) return new Gauge({ name, help: 'KV-cache usage. 1 means 100 percent usage.', labelNames, registers })
    return new Gauge({ name, help: `The policy's '${key}' (its metrics hook).`, registers })
  }

  return {
    contentType: registry.contentType,
    requestFinished(request) {
      promptTokens.inc(model, request.promptTokens)
      let generated = 0
      for (const choice of request.choices) {
        generated += choice.tokens
        success.inc({ ...model, finished_reason: choice.finishReason })
        requestGenerationTokens.observe(model, choice.tokens)
        requestPromptTokens.observe(model, choice.promptTokens)
      }
      generationTokens.inc(model, generated)
      timeToFirstToken.observe(model, request.timeToFirstTokenSeconds)
      latency.observe(model, request.latencySeconds)
    },
    async scrape() {
      const read = readEngine()
      engine = read.figures
      const accepted = updateEngineMetrics(engine)
      if (read.faulty || !accepted) engineErrors.inc()
      return registry.metrics()
    },
  }
}

/** `ludic_engine_<key in snake case>`, or undefined for a key that does not make a Prometheus name (at most 100 characters). */
function engineGaugeName(key: string): string | undefined {
  const snake = key.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase()
  return /^[a-z_][a-z0-9_]{0,99}$/.test(snake) ? `ludic_engine_${snake}` : undefined
}
