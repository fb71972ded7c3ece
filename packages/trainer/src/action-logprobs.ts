import { InvalidArgumentError, type TokenizerV1 } from '@ludic/core'
import type { CausalLanguageModel } from '@ludic/model'
import { responseLogprobs, type TokenSequence } from './sequences.js'

/** A decision: the text the model reads (chat template applied) and the moves it may answer with. */
export interface ActionChoice {
  prompt: string
  actions: readonly string[]
}

/**
 * Each legal action scored by the model, exactly (no sampling): the summed log-probabilities of the action's
 * tokens and the end token after the decision's prompt, i.e. log P(the whole answer is this action). One
 * array per decision, one score per action, in order. Normalised over a decision's actions (a softmax) they
 * are the model's policy restricted to legal moves; `exp` summed over them is the mass it puts on legal moves.
 * `batchSize` sequences go through one forward pass (default: all of them).
 */
export async function actionLogprobs(
  model: CausalLanguageModel,
  tokenizer: TokenizerV1,
  decisions: readonly ActionChoice[],
  options: { batchSize?: number } = {},
): Promise<number[][]> {
  const end = tokenizer.eosTokenId
  if (end === undefined)
    throw new InvalidArgumentError({
      argument: 'tokenizer',
      value: tokenizer.eosTokenId,
      message: 'has no end token (eosTokenId), which ends every scored answer',
    })
  const encode = (text: string) => tokenizer.encode(text, { addSpecialTokens: false })
  const sequences: TokenSequence[] = decisions.flatMap((decision) => {
    const promptIds = encode(decision.prompt)
    return decision.actions.map((action) => ({ promptIds, responseIds: Int32Array.from([...encode(action), end]) }))
  })
  const logprobs = await responseLogprobs(model, sequences, options.batchSize ?? Math.max(1, sequences.length))
  let index = 0
  return decisions.map((decision) => decision.actions.map(() => logprobs[index++]!.reduce((total, value) => total + value, 0)))
}
