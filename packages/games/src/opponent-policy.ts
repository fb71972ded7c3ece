import {
  createRandom,
  InvalidArgumentError,
  refuseLengthControls,
  requestMessages,
  type Completion,
  type PolicyV1,
  type Random,
  type TurnContext,
} from '@ludic/core'
import { observationFromMessages } from './game-prompts.js'

export interface OpponentPolicyOptions {
  id: string
  /** Seed of the policy's random stream (used by requests without their own `seed`). Default: 0. */
  seed?: number
  /**
   * The move to play (bracketed, e.g. `'[bet]'`). `turn` is the request's structured view of the turn
   * (`GenerationRequest.turn`: the environment id, the role, the legal actions, the game's `state`), absent when
   * the caller sent only messages; the observation text is there for players that read their own game's text.
   * The built-in players decide from `turn` (`requireTurn`), never from the wording of the observation.
   */
  decide(observation: string, random: Random, turn: TurnContext | undefined): string
}

/** A completion carrying only text: scripted opponents have no tokens. */
export function opponentCompletion(text: string): Completion {
  return { text, promptTokenIds: new Int32Array(0), tokenIds: new Int32Array(0), logprobs: new Float32Array(0), finishReason: 'stop' }
}

/**
 * The request's turn view, checked for what a scripted player needs: an `InvalidArgumentError` naming
 * `request.turn` (or `request.turn.<field>`) when it is missing — a request built without a turn (a remote caller,
 * a hand-built chat) cannot be played by a player that sees the game rather than its wording.
 */
export function requireTurn<Field extends 'legalActions' | 'state' | 'stateKey'>(
  turn: TurnContext | undefined,
  field: Field,
  who: string,
): TurnContext & { [Name in Field]-?: NonNullable<TurnContext[Name]> } {
  if (turn === undefined) {
    throw new InvalidArgumentError({
      argument: 'request.turn',
      value: turn,
      message: `is missing: ${who} decides from the turn's structured view (GenerationRequest.turn with ${field}, filled by @ludic/rollout's collect and playEpisode), not from the prompt text`,
    })
  }
  if (turn[field] === undefined || (field === 'legalActions' && turn.legalActions!.length === 0)) {
    throw new InvalidArgumentError({
      argument: `request.turn.${field}`,
      value: turn[field],
      message: `is missing: ${who} needs it, and environment '${turn.environmentId}' gave none for role '${turn.role}'`,
    })
  }
  return turn as TurnContext & { [Name in Field]-?: NonNullable<TurnContext[Name]> }
}

/**
 * A `PolicyV1` for scripted opponents. Each request's last user message gives the observation
 * (`observationFromMessages`) and its `turn` the structured view; the answer is the bracketed move. Random
 * choices come from `createRandom(request.seed)` when the request has a seed, else from the policy's own
 * stream (seeded by `seed`), so a run is reproducible either way. A request the opponent cannot play (no turn
 * view where it needs one) is an error (a wiring mistake, not a game move), and so are `minTokens` and `ignoreEos`
 * (`refuseLengthControls`: a move is not drawn token by token).
 */
export function createOpponentPolicy(options: OpponentPolicyOptions): PolicyV1 {
  const stream = createRandom(options.seed ?? 0)
  return {
    specificationVersion: 'v1',
    id: options.id,
    async generate(requests) {
      return requests.map((request, index) => {
        refuseLengthControls(request, index, `the opponent policy '${options.id}'`)
        const random = request.seed === undefined ? stream : createRandom(request.seed)
        const observation = observationFromMessages(requestMessages(request, index, `the opponent policy '${options.id}'`))
        return opponentCompletion(options.decide(observation, random, request.turn))
      })
    },
  }
}
