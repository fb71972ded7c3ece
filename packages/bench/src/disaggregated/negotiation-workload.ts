/**
 * The `disaggregated` suite's workload, shared by the trainer and its generation servers (which rebuild the same
 * tokenizer from the same settings, deterministically): Simple Negotiation, a multi-turn two-player trading game, as
 * the tiny model reads it (the terse prompts of `game-selfplay.ts`) with a byte-level BPE trained on random legal play.
 */
import { turnContextOf, type ChatMessage, type EnvironmentV1, type PolicyV1, type StepOutcome, type TurnView } from '@ludic/core'
import {
  createGame,
  createRandomPolicy,
  evaluationInvalidRewards,
  negotiationResources,
  parseNegotiationObservation,
  turnLegalActions,
  type NegotiationBundle,
} from '@ludic/games'
import { randomLegalPlay, type RandomLegalPlay } from '@ludic/rollout'
import { Tokenizer, trainBpe } from '@ludic/tokenizer'
import { evaluateAgainst, type MatchFigures } from '@ludic/trainer'
import { endOfText, gameChatTemplate, gameOptionsFor } from '../selfplay/game-selfplay.js'

export const negotiationGame = 'simple-negotiation-v1'

/** What fixes the workload: the same settings give the same examples, tokenizer and games. */
export interface NegotiationWorkload {
  /** Actions per game (alternating, player0 first). */
  turns: number
  /** Random games whose states make the warm-up examples and the tokenizer's corpus. */
  warmupGames: number
  /** Ids of the byte-level BPE. */
  vocabSize: number
  /** Training reward of an invalid move. */
  invalidPenalty: number
  seed: number
}

const turnsOverride = (workload: NegotiationWorkload) => ({ [negotiationGame]: { turns: workload.turns, maxTurns: workload.turns } })

/** The game's options in training: `turns` actions, the invalid-move penalty. */
export function negotiationOptions(workload: NegotiationWorkload): Record<string, unknown> {
  return gameOptionsFor(negotiationGame, { invalidPenalty: workload.invalidPenalty }, turnsOverride(workload))
}

const bundleText = (bundle: NegotiationBundle) =>
  negotiationResources
    .filter((resource) => bundle[resource] !== undefined)
    .map((resource) => `${bundle[resource]} ${resource}`)
    .join(', ')

/** The state as the tiny model reads it: seat, turn, inventory, the offer open to it (`P1 turn 2/4 Wood 10 Gold 10\noffer 1 Wood -> 2 Gold`). */
export function negotiationTerseText(observation: string): string {
  const { player, turn, turns, inventory, offer } = parseNegotiationObservation(observation)
  const head = `P${player} turn ${turn}/${turns} Wood ${inventory.Wood} Gold ${inventory.Gold}`
  return offer === undefined ? `${head}\nno offer` : `${head}\noffer ${bundleText(offer.offered)} -> ${bundleText(offer.requested)}`
}

/** The rollout's prompt: one user message with the terse state. */
export const negotiationPrompt = (view: TurnView): ChatMessage[] => [{ role: 'user', content: negotiationTerseText(view.observation) }]

/**
 * Random legal play as supervised examples (`randomLegalPlay`): at each distinct state visited by `warmupGames`
 * random games, every move of the menu once (`[Accept]` and `[Deny]` 4 times, so that offers get answered).
 */
function negotiationPlay(workload: NegotiationWorkload): RandomLegalPlay {
  return randomLegalPlay({
    environment: () => createGame(negotiationGame, negotiationOptions(workload)),
    games: workload.warmupGames,
    seed: workload.seed,
    legalActions: (view) => turnLegalActions(turnContextOf(negotiationGame, view)),
    prompt: negotiationPrompt,
    chatTemplate: gameChatTemplate,
    copies: { '[Accept]': 4, '[Deny]': 4 },
  })
}

/** The warm-up examples of `negotiationPlay`. */
export function negotiationExamples(workload: NegotiationWorkload): { prompt: string; response: string }[] {
  return negotiationPlay(workload).examples.map(({ prompt, response }) => ({ prompt, response }))
}

/** The BPE over the examples' prompts and moves (deterministic in the settings). */
export function negotiationTokenizer(workload: NegotiationWorkload): Tokenizer {
  return Tokenizer.fromJSON(trainBpe(negotiationPlay(workload).corpus, { vocabSize: workload.vocabSize, specialTokens: [endOfText] }), { eos_token: endOfText })
}

/**
 * The learner against the uniform random legal player on `episodes` games of seeds fixed by `seed` (seats
 * alternating, sampled at temperature 1, an invalid move a loss): the held-out evaluation of both configurations.
 */
export async function evaluateNegotiation(
  learner: PolicyV1,
  workload: NegotiationWorkload,
  episodes: number,
  seed: number,
  maxTokens: number,
): Promise<MatchFigures> {
  const { byEnvironment } = await evaluateAgainst({
    learner,
    opponent: createRandomPolicy({ seed, id: 'random' }),
    environments: [() => createGame(negotiationGame, gameOptionsFor(negotiationGame, evaluationInvalidRewards, turnsOverride(workload)))],
    episodes,
    seed,
    prompt: negotiationPrompt,
    generation: { maxTokens, temperature: 1 },
  })
  return byEnvironment[negotiationGame]!
}

/** Time spent in environments (reset and step), in seconds, added up by `timedEnvironment`. */
export interface EnvironmentClock {
  seconds: number
}

/** A factory of the training game whose `reset` and `step` add their time to `clock`. */
export function timedNegotiation(workload: NegotiationWorkload, clock: EnvironmentClock): () => EnvironmentV1 {
  return () => {
    const environment = createGame(negotiationGame, negotiationOptions(workload))
    const timed = <T>(work: () => T): T => {
      const started = performance.now()
      try {
        return work()
      } finally {
        clock.seconds += (performance.now() - started) / 1000
      }
    }
    return {
      specificationVersion: 'v1',
      id: environment.id,
      roles: environment.roles,
      reset: (seed: number): TurnView => timed(() => environment.reset(seed)),
      step: (action: string): StepOutcome => timed(() => environment.step(action)),
    }
  }
}
