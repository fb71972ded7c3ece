export { extractMove, matchLegalAction, normalizeMove } from './action.js'
export { gamePrompts, observationFromMessages, renderGamePrompt, type GamePromptName } from './game-prompts.js'
export {
  commonOptionsShape,
  createTwoPlayerEnvironment,
  evaluationInvalidRewards,
  maxTurnsOption,
  playerRoles,
  winLossRewards,
  type CommonOptions,
  type PlayerIndex,
  type PlayResult,
  type TwoPlayerRules,
} from './two-player-environment.js'
export { createTranscript, type Transcript } from './transcript.js'
export { createGame, gameIds, games, registerGame, type GameFactory, type GameId, type GameOptionsById } from './registry.js'
export { playEpisode, type EpisodeResult, type PlayEpisodeOptions } from './play-episode.js'

export {
  createTicTacToe,
  renderTicTacToeBoard,
  ticTacToeEmptyCells,
  ticTacToeMarkOf,
  ticTacToeOptionsSchema,
  ticTacToeWinner,
  type TicTacToeBoard,
  type TicTacToeMark,
  type TicTacToeOptions,
} from './tic-tac-toe.js'
export {
  createTicTacToeMinimaxPolicy,
  parseTicTacToeBoard,
  ticTacToeMarkToMove,
  ticTacToeMinimaxMove,
  ticTacToeValue,
} from './tic-tac-toe-minimax.js'

export {
  createKuhnPoker,
  kuhnCardNames,
  kuhnFirstActor,
  kuhnLegalActions,
  kuhnPokerOptionsSchema,
  type KuhnDeal,
  type KuhnPokerOptions,
} from './kuhn-poker.js'
export {
  kuhnConstantPolicy,
  kuhnInformationStateNames,
  kuhnNashPolicy,
  kuhnPolicySchema,
  parseKuhnPolicy,
  type KuhnInformationStateName,
  type KuhnPolicy,
} from './kuhn-policy.js'
export { kuhnBestResponse, kuhnExploitability, type KuhnExploitability } from './kuhn-exploitability.js'
export { kuhnInformationStateOf, kuhnInformationStates, type KuhnInformationState } from './kuhn-information-states.js'
export { kuhnTerseObservation } from './kuhn-terse-observation.js'
export { kuhnPolicyOf, type KuhnActionScorer, type KuhnPolicyOfOptions } from './kuhn-policy-of.js'
export {
  createKuhnBestResponsePolicy,
  createKuhnNashPolicy,
  createKuhnTabularPolicy,
  type KuhnTabularPolicyOptions,
} from './kuhn-opponents.js'

export {
  createSimpleNegotiation,
  negotiationInventoryValue,
  negotiationStartingInventory,
  negotiationValues,
  parseNegotiationObservation,
  simpleNegotiationOptionsSchema,
  type NegotiationInventory,
  type NegotiationObservation,
  type SimpleNegotiationOptions,
} from './simple-negotiation.js'
export {
  formatNegotiationBundle,
  negotiationResources,
  parseNegotiationMove,
  type NegotiationBundle,
  type NegotiationMove,
  type NegotiationResource,
} from './negotiation-offer.js'
export { createNegotiationHeuristicPolicy, valueRaisingOffers } from './negotiation-heuristic.js'

export { createPigDice, pigDiceOptionsSchema, type PigDiceOptions } from './pig-dice.js'
export {
  createLiarsDice,
  liarsDiceLegalActions,
  liarsDiceOptionsSchema,
  parseLiarsDiceObservation,
  type LiarsDiceBid,
  type LiarsDiceOptions,
} from './liars-dice.js'
export {
  createIteratedPrisonersDilemma,
  iteratedPrisonersDilemmaOptionsSchema,
  type IteratedPrisonersDilemmaOptions,
} from './iterated-prisoners-dilemma.js'

export { createOpponentPolicy, opponentCompletion, type OpponentPolicyOptions } from './opponent-policy.js'
export { createRandomPolicy, type RandomPolicyOptions } from './random-policy.js'
export { legalActionsFromObservation } from './legal-actions.js'
