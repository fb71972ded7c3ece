import type { ChatMessage, TokenizerV1, TurnView } from '@ludic/core'
import { kuhnExploitability, kuhnInformationStates, kuhnPolicyOf, kuhnTerseObservation, type KuhnPokerOptions, type KuhnPolicy } from '@ludic/games'
import type { CausalLanguageModel } from '@ludic/model'
import { randomLegalPlay } from '@ludic/rollout'
import { actionLogprobs } from '@ludic/trainer'
import { trainBpe, Tokenizer } from '@ludic/tokenizer'

/** One round per episode and net chips as the reward: the game whose exploitability is computed exactly. */
export const kuhnOptions: KuhnPokerOptions = { rounds: 1, reward: 'chips' }
export const endOfText = '<|end|>'

/**
 * The rollout's prompt: one user message with the terse observation (`kuhnTerseObservation`: the round's
 * moves, the legal moves and the card, last). A tiny transformer warmed up on card-independent (random) play
 * has to learn to attend to the card during self-play; with the full observation the policy stayed card-blind.
 * `[Player 1] [bet]\n[fold], [call]\ncard J`
 */
export const promptOf = (view: TurnView): ChatMessage[] => [{ role: 'user', content: kuhnTerseObservation(view.observation) }]

/** The chat template: the last message, then `\n>` where the move goes. */
export const chatTemplate = (messages: readonly ChatMessage[]): string => `${messages.at(-1)?.content ?? ''}\n>`

/** The 12 decisions (information states) as the model reads them: the observation, the prompt text, the legal moves. */
export function kuhnDecisions(): { observation: string; prompt: string; actions: readonly string[] }[] {
  return kuhnInformationStates(kuhnOptions).map((state) => ({
    observation: state.observation,
    prompt: chatTemplate(promptOf(state)),
    actions: state.legalActions,
  }))
}

/** Random legal play as supervised examples (`randomLegalPlay`): at each of the 12 decisions, each legal move once (uniform). */
export function randomPlayExamples(): { prompt: string; response: string }[] {
  const { examples } = randomLegalPlay({ states: kuhnInformationStates(kuhnOptions), prompt: promptOf, chatTemplate })
  return examples.map(({ prompt, response }) => ({ prompt, response }))
}

/**
 * Supervised examples whose moves come in `policy`'s proportions: at each of the 12 decisions `perState` examples,
 * round(perState · π(s)) of them the aggressive move (bet, call) and the rest the passive one (check, fold). The NLL's
 * optimum on them is those proportions, so fine-tuning on them distils a tabular policy into the model (to 1/perState).
 */
export function policyExamples(policy: KuhnPolicy, perState: number): { prompt: string; response: string }[] {
  return kuhnInformationStates(kuhnOptions).flatMap((state) => {
    const [passive, aggressive] = state.legalActions as [string, string]
    const bets = Math.round(perState * policy[state.name])
    const prompt = chatTemplate(promptOf(state))
    return Array.from({ length: perState }, (_, index) => ({ prompt, response: index < bets ? aggressive : passive }))
  })
}

/**
 * The files of a byte-level BPE trained on what the model will read and write, every decision's prompt and move:
 * `tokenizer.json` and `tokenizer_config.json` (its end token), as `loadTokenizer` reads them.
 */
export function kuhnTokenizerFiles(vocabSize: number): { tokenizer: object; config: { eos_token: string } } {
  const corpus = randomPlayExamples().map((example) => `${example.prompt}${example.response}`)
  return { tokenizer: trainBpe(corpus, { vocabSize, specialTokens: [endOfText] }), config: { eos_token: endOfText } }
}

/** The tokenizer of `kuhnTokenizerFiles`. */
export function trainKuhnTokenizer(vocabSize: number): Tokenizer {
  const { tokenizer, config } = kuhnTokenizerFiles(vocabSize)
  return Tokenizer.fromJSON(tokenizer, config)
}

/**
 * The model's tabular policy and its exploitability, exactly: at each information state every legal move
 * (with the end token) scored by its summed token log-probabilities after the decision's prompt
 * (`actionLogprobs`), normalised over the legal moves (`kuhnPolicyOf`), then `kuhnExploitability`.
 */
export async function exploitabilityOf(model: CausalLanguageModel, tokenizer: TokenizerV1): Promise<{ exploitability: number; policy: KuhnPolicy }> {
  const decisions = kuhnDecisions()
  const scores = await actionLogprobs(model, tokenizer, decisions)
  const scorer = (observation: unknown) => scores[decisions.findIndex((decision) => decision.observation === observation)]!
  const policy = await kuhnPolicyOf(scorer, { prompt: 'observation', environment: kuhnOptions })
  return { exploitability: kuhnExploitability(policy).exploitability, policy }
}
