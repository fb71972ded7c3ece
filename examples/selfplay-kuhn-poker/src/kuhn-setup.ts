import type { ChatMessage, PolicyV1, TokenizerV1, TurnView } from '@ludic/core'
import { collect } from '@ludic/rollout'
import {
  createKuhnPoker,
  createRandomPolicy,
  evaluationInvalidRewards,
  kuhnExploitability,
  kuhnInformationStates,
  kuhnPolicyOf,
  type KuhnPokerOptions,
  type KuhnPolicy,
} from '@ludic/games'
import type { CausalLanguageModel } from '@ludic/model'
import { responseLogprobs } from '@ludic/trainer'
import { trainBpe, Tokenizer } from '@ludic/tokenizer'

/** One round per episode and net chips as the reward: the game whose exploitability is computed exactly. */
export const kuhnOptions: KuhnPokerOptions = { rounds: 1, reward: 'chips' }
export const endOfText = '<|end|>'

/**
 * The terse prompt of a model made from scratch: only what a decision depends on, the round's moves, the
 * legal moves (without the words around them) and the card, last, right before the move; the seat, TextArena's rules preamble and its
 * `[GAME]` prefix are dropped (the history already tells who acts). A tiny transformer warmed up on
 * card-independent (random) play has to learn to attend to the card token during self-play: each token of
 * filler dilutes that signal, and with the longer prompt the policy stayed card-blind (exploitability 1/3).
 * `[Player 1] [bet]\n[fold], [call]\ncard J`
 */
export function terseObservation(observation: string): string {
  const round = observation.lastIndexOf('[GAME] Starting round')
  const lines = round < 0 ? observation : observation.slice(round)
  const moves = [...lines.matchAll(/^\[Player \d\] \[\w+\]$/gm)].map((match) => match[0])
  const legal = [...lines.matchAll(/Your available actions are: (.*)$/gm)].at(-1)?.[1]
  const card = /Your card is: ([JQK])/.exec(lines)?.[1]
  return [...moves, ...(legal === undefined ? [] : [legal]), ...(card === undefined ? [] : [`card ${card}`])].join('\n')
}

/** The rollout's prompt: one user message with the terse observation. */
export const promptOf = (view: TurnView): ChatMessage[] => [{ role: 'user', content: terseObservation(view.observation) }]

/** The chat template: the last message, then `\n>` where the move goes. */
export const chatTemplate = (messages: readonly ChatMessage[]): string => `${messages.at(-1)?.content ?? ''}\n>`

/** A byte-level BPE trained on what the model will read and write: every decision's prompt and move. */
export function trainKuhnTokenizer(vocabSize: number): Tokenizer {
  const corpus: string[] = []
  for (const state of kuhnInformationStates(kuhnOptions)) {
    for (const action of state.legalActions) corpus.push(`${chatTemplate([{ role: 'user', content: terseObservation(state.observation) }])}${action}`)
  }
  const json = trainBpe(corpus, { vocabSize, specialTokens: [endOfText] })
  return Tokenizer.fromJSON(json, { eos_token: endOfText })
}

/** Random legal play as supervised examples: at every decision, each legal move once (uniform). */
export function randomPlayExamples(): { prompt: string; response: string }[] {
  return kuhnInformationStates(kuhnOptions).flatMap((state) =>
    state.legalActions.map((action) => ({ prompt: chatTemplate([{ role: 'user', content: terseObservation(state.observation) }]), response: action })),
  )
}

/**
 * The model's tabular policy, exactly: each legal move (with the end token) scored by its summed token
 * log-probabilities after the decision's prompt, normalised over the legal moves (`kuhnPolicyOf`).
 */
export async function modelKuhnPolicy(model: CausalLanguageModel, tokenizer: TokenizerV1): Promise<KuhnPolicy> {
  const encode = (text: string) => tokenizer.encode(text, { addSpecialTokens: false })
  const eos = tokenizer.eosTokenId!
  const states = kuhnInformationStates(kuhnOptions)
  const sequences = states.flatMap((state) =>
    state.legalActions.map((action) => ({ promptIds: encode(chatTemplate(promptOf(state))), responseIds: Int32Array.from([...encode(action), eos]) })),
  )
  const logprobs = await responseLogprobs(model, sequences, sequences.length)
  const scores = new Map<string, number[]>()
  let index = 0
  for (const state of states) scores.set(state.observation, state.legalActions.map(() => logprobs[index++]!.reduce((total, value) => total + value, 0)))
  return kuhnPolicyOf((prompt) => scores.get(typeof prompt === 'string' ? prompt : prompt.at(-1)!.content)!, { prompt: 'observation', environment: kuhnOptions })
}

export async function exploitabilityOf(model: CausalLanguageModel, tokenizer: TokenizerV1): Promise<{ exploitability: number; policy: KuhnPolicy }> {
  const policy = await modelKuhnPolicy(model, tokenizer)
  return { exploitability: kuhnExploitability(policy).exploitability, policy }
}

/** The legal moves of a terse prompt: its last line of moves that is no player's move (`[fold], [call]`). */
export const legalActionsOfPrompt = (prompt: string): string[] =>
  prompt.split('\n').filter((line) => line.startsWith('[') && !line.startsWith('[Player')).at(-1)?.match(/\[\w+\]/g) ?? []

/**
 * The learner against the uniform random player, seats alternating, sampled at temperature 1, an invalid
 * move counted as a loss (−1/+1). Win rate = share of episodes the learner ends ahead in chips.
 */
export async function playAgainstRandom(learner: PolicyV1, episodes: number, seed: number): Promise<{ winRate: number; meanChips: number; invalidRate: number }> {
  const random = createRandomPolicy({ seed, legalActions: legalActionsOfPrompt })
  const { trajectories, samples } = await collect({
    environments: [() => createKuhnPoker({ ...kuhnOptions, ...evaluationInvalidRewards })],
    policies: ({ role, episodeIndex }) => (role === (episodeIndex % 2 === 0 ? 'player0' : 'player1') ? learner : random),
    seeds: Array.from({ length: episodes }, (_, index) => seed * 100_000 + index),
    prompt: (view) => promptOf(view),
    generation: { maxTokens: 8, temperature: 1 },
    samplingSeed: seed,
    learnerPolicyIds: [learner.id],
    concurrency: 256,
  })
  let wins = 0
  let chips = 0
  trajectories.forEach((trajectory, index) => {
    const seat = index % 2 === 0 ? 'player0' : 'player1'
    const result = trajectory.returns[seat] ?? 0
    chips += result
    if (result > 0) wins++
  })
  const invalid = samples.filter((sample) => sample.invalid).length
  return { winRate: wins / trajectories.length, meanChips: chips / trajectories.length, invalidRate: samples.length === 0 ? 0 : invalid / samples.length }
}
