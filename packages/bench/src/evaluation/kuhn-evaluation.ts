import { createRandom, InvalidArgumentError, parseArgument, type ChatMessage, type PolicyV1, type TokenizerV1 } from '@ludic/core'
import {
  kuhnConstantPolicy,
  kuhnExploitability,
  kuhnInformationStates,
  kuhnNashPolicy,
  kuhnPokerOptionsSchema,
  kuhnPolicyOf,
  kuhnTerseObservation,
  matchLegalAction,
  parseKuhnPolicy,
  renderGamePrompt,
  type KuhnExploitability,
  type KuhnPokerOptions,
  type KuhnPolicy,
} from '@ludic/games'
import type { CausalLanguageModel } from '@ludic/model'
import { actionLogprobs } from '@ludic/trainer'
import type { TopLevelSpec } from 'vega-lite'
import { z } from 'zod'
import { numberCell, type BenchTable } from '../bench-report.js'
import { checkPolicySource, plainGameChatTemplate, policySourceShape, resolvePolicy } from './policy-source.js'

/**
 * How a Kuhn Poker observation becomes the evaluated model's prompt: `observation` (the text alone), `terse`
 * (`kuhnTerseObservation`: the round's moves, the legal moves, the card; what Ludic's tiny game models read),
 * `spiral` (SPIRAL's prompt around the observation).
 */
export const kuhnPromptNames = ['observation', 'terse', 'spiral'] as const
export type KuhnPromptName = (typeof kuhnPromptNames)[number]

export const evaluateKuhnOptionsSchema = z
  .strictObject({
    ...policySourceShape,
    /** The evaluated policy's prompt. Default `observation`. */
    prompt: z.enum(kuhnPromptNames).default('observation'),
    /** The Kuhn Poker whose observations are shown (its rounds show in the text). Default: one round, net chips. */
    environment: kuhnPokerOptionsSchema.prefault({ rounds: 1, reward: 'chips' }),
    /**
     * A policy without a local model is measured by sampling: this many answers at each of the 12 information
     * states (an answer that is no legal move counts as neither). Default 64.
     */
    samples: z.number().int().positive().max(10_000).default(64),
    /** Seeds the sampling. Default 0. */
    seed: z.number().int().default(0),
    /** Most tokens per sampled answer. Default 16. */
    maxTokens: z.number().int().positive().max(32_768).default(16),
  })
  .superRefine(checkPolicySource)
export type EvaluateKuhnOptions = z.input<typeof evaluateKuhnOptionsSchema>

export interface KuhnEvaluationRow extends KuhnExploitability {
  /** What was measured: a reference policy or the evaluated one. */
  policy: string
  /** `exact` (reference tables, or a model's action log-probabilities) or `sampled, n per state`. */
  method: string
  tabular: KuhnPolicy
}

/**
 * Exact Kuhn Poker exploitability (games.md): the reference policies (uniform 11/24, Nash 0, always passive,
 * always aggressive) and, when given, the evaluated policy. A local model is measured without noise: at each of
 * the 12 information states every legal move is scored by its log-probability (`actionLogprobs`, the chat
 * template applied to the chosen prompt) and normalised (`kuhnPolicyOf`); any other `PolicyV1` is measured by
 * sampling `samples` answers per state.
 */
export async function evaluateKuhn(
  options: EvaluateKuhnOptions,
  context: { signal?: AbortSignal; log?(line: string): void } = {},
): Promise<KuhnEvaluationRow[]> {
  const parsed = parseArgument(evaluateKuhnOptionsSchema, options, 'options')
  const rows: KuhnEvaluationRow[] = [
    reference('uniform random', kuhnConstantPolicy(0.5)),
    reference('Nash (α = 0)', kuhnNashPolicy(0)),
    reference('Nash (α = 1/3)', kuhnNashPolicy(1 / 3)),
    reference('always passive (check, fold)', kuhnConstantPolicy(0)),
    reference('always aggressive (bet, call)', kuhnConstantPolicy(1)),
  ]
  const resolved = await resolvePolicy(parsed, parsed.seed)
  if (resolved === undefined) return rows
  try {
    context.signal?.throwIfAborted()
    const environment = parsed.environment
    const messagesOf = (observation: string): ChatMessage[] =>
      parsed.prompt === 'spiral'
        ? renderGamePrompt(observation, 'spiral')
        : [{ role: 'user', content: parsed.prompt === 'terse' ? kuhnTerseObservation(observation) : observation }]
    if (resolved.model !== undefined && resolved.tokenizer !== undefined) {
      context.log?.(`scoring the legal moves of ${resolved.label} at the 12 information states`)
      const tabular = await modelKuhnPolicy(resolved.model, resolved.tokenizer, resolved.chatTemplate ?? plainGameChatTemplate, messagesOf, environment)
      rows.push({ policy: resolved.label, method: 'exact (action log-probabilities)', tabular, ...kuhnExploitability(tabular) })
    } else {
      context.log?.(`sampling ${resolved.label}: ${parsed.samples} answers at each of the 12 information states`)
      const tabular = await sampledKuhnPolicy(resolved.policy, messagesOf, environment, parsed.samples, parsed.seed, parsed.maxTokens, context.signal)
      rows.push({ policy: resolved.label, method: `sampled, ${parsed.samples} per state`, tabular, ...kuhnExploitability(tabular) })
    }
  } finally {
    resolved.dispose()
  }
  return rows
}

function reference(policy: string, tabular: KuhnPolicy): KuhnEvaluationRow {
  return { policy, method: 'exact', tabular, ...kuhnExploitability(tabular) }
}

/** A model's tabular policy: each legal move scored after the rendered prompt, normalised over the legal moves. */
export async function modelKuhnPolicy(
  model: CausalLanguageModel,
  tokenizer: TokenizerV1,
  chatTemplate: (messages: readonly ChatMessage[]) => string,
  messagesOf: (observation: string) => ChatMessage[],
  environment: KuhnPokerOptions,
): Promise<KuhnPolicy> {
  const states = kuhnInformationStates(environment)
  const scores = await actionLogprobs(
    model,
    tokenizer,
    states.map((state) => ({ prompt: chatTemplate(messagesOf(state.observation)), actions: state.legalActions })),
  )
  return kuhnPolicyOf((observation) => scores[states.findIndex((state) => state.observation === observation)]!, { prompt: 'observation', environment })
}

/**
 * Any policy's tabular policy, estimated: `samples` answers at each information state (seeded requests carrying the state's turn view), the
 * share of aggressive moves among the legal answers. A state with no legal answer is an `InvalidArgumentError`:
 * the policy does not play Kuhn Poker.
 */
export async function sampledKuhnPolicy(
  policy: PolicyV1,
  messagesOf: (observation: string) => ChatMessage[],
  environment: KuhnPokerOptions,
  samples: number,
  seed: number,
  maxTokens: number,
  signal?: AbortSignal,
): Promise<KuhnPolicy> {
  const random = createRandom(seed)
  const tabular: Record<string, number> = {}
  for (const state of kuhnInformationStates(environment)) {
    signal?.throwIfAborted()
    const messages = messagesOf(state.observation)
    const completions = await policy.generate(Array.from({ length: samples }, () => ({ messages, maxTokens, seed: random.nextInt(2 ** 31), turn: state.turn })))
    let aggressive = 0
    let legal = 0
    for (const completion of completions) {
      const move = matchLegalAction(completion.text, state.legalActions)
      if (move === undefined) continue
      legal++
      if (move === state.legalActions[1]) aggressive++
    }
    if (legal === 0) {
      throw new InvalidArgumentError({
        argument: 'policy',
        value: policy.id,
        message: `answered no legal move (${state.legalActions.join(', ')}) in ${samples} samples at information state ${state.name}`,
      })
    }
    tabular[state.name] = aggressive / legal
  }
  return parseKuhnPolicy(tabular, 'sampled policy')
}

/** The rows as a report table. */
export function kuhnEvaluationTable(rows: readonly KuhnEvaluationRow[]): BenchTable {
  return {
    title: 'Kuhn Poker exploitability (one round, standard payoffs)',
    columns: ['policy', 'method', 'exploitability', 'NashConv', 'value (first actor)', 'best response as first actor', 'best response as second actor'],
    rows: rows.map((row) => [
      row.policy,
      row.method,
      numberCell(row.exploitability, 4),
      numberCell(row.nashConv, 4),
      numberCell(row.value, 4),
      numberCell(row.bestResponseValues[0], 4),
      numberCell(row.bestResponseValues[1], 4),
    ]),
    notes: [
      'Exploitability = NashConv / 2 = (Σ best-response value − Σ value) / 2, summed exactly over the 6 deals: 0 at a Nash equilibrium, 11/24 ≈ 0.458 for uniform play.',
      'Reference policies are tables; the evaluated policy reads the chosen prompt (observation, terse or spiral).',
    ],
  }
}

/** The chart: exploitability per policy, the uniform player's 11/24 as a dashed rule. */
export function kuhnEvaluationChart(rows: readonly KuhnEvaluationRow[]): TopLevelSpec {
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: 'Kuhn Poker exploitability', subtitle: 'exact; 0 at a Nash equilibrium, dashed: uniform play (11/24)' },
    background: 'white',
    width: 420,
    height: { step: 26 },
    layer: [
      {
        data: { values: rows.map((row) => ({ policy: row.policy, exploitability: row.exploitability })) },
        mark: { type: 'bar', color: '#4c78a8' },
        encoding: {
          y: { field: 'policy', type: 'nominal', sort: null, title: null, axis: { labelLimit: 360 } },
          x: { field: 'exploitability', type: 'quantitative', scale: { domainMin: 0 } },
        },
      },
      {
        data: { values: [{ uniform: 11 / 24 }] },
        mark: { type: 'rule', color: '#c00', strokeDash: [5, 4] },
        encoding: { x: { field: 'uniform', type: 'quantitative' } },
      },
    ],
  }
}
