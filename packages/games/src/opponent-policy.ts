import { createRandom, requestMessages, type Completion, type PolicyV1, type Random } from '@ludic/core'
import { observationFromMessages } from './game-prompts.js'

export interface OpponentPolicyOptions {
  id: string
  /** Seed of the policy's random stream (used by requests without their own `seed`). Default: 0. */
  seed?: number
  /** The move to play (bracketed, e.g. `'[bet]'`) given the observation text. */
  decide(observation: string, random: Random): string
}

/** A completion carrying only text: scripted opponents have no tokens. */
export function opponentCompletion(text: string): Completion {
  return { text, promptTokenIds: new Int32Array(0), tokenIds: new Int32Array(0), logprobs: new Float32Array(0), finishReason: 'stop' }
}

/**
 * A `PolicyV1` for scripted opponents. It sees only the request's messages, so it reads the observation
 * from the last user message (`observationFromMessages`) and answers with the bracketed move. Random
 * choices come from `createRandom(request.seed)` when the request has a seed, else from the policy's own
 * stream (seeded by `seed`), so a run is reproducible either way. An observation the opponent cannot read
 * is an error (a wiring mistake, not a game move).
 */
export function createOpponentPolicy(options: OpponentPolicyOptions): PolicyV1 {
  const stream = createRandom(options.seed ?? 0)
  return {
    specificationVersion: 'v1',
    id: options.id,
    async generate(requests) {
      return requests.map((request, index) => {
        const random = request.seed === undefined ? stream : createRandom(request.seed)
        return opponentCompletion(options.decide(observationFromMessages(requestMessages(request, index, `the opponent policy '${options.id}'`)), random))
      })
    },
  }
}
