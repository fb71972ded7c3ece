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
  ticTacToeTurnBoard,
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
  kuhnAveragePolicy,
  kuhnConstantPolicy,
  kuhnInformationStateNames,
  kuhnNashPolicy,
  kuhnPolicySchema,
  parseKuhnPolicy,
  type KuhnInformationStateName,
  type KuhnPolicy,
} from './kuhn-policy.js'
export {
  kuhnActionValues,
  kuhnBestResponse,
  kuhnExploitability,
  kuhnMatch,
  kuhnRegularizedEquilibrium,
  type KuhnExploitability,
  type KuhnMatch,
  type KuhnRegularizedEquilibrium,
} from './kuhn-exploitability.js'
export { kuhnInformationStateOf, kuhnInformationStates, type KuhnInformationState } from './kuhn-information-states.js'
export { kuhnTerseObservation } from './kuhn-terse-observation.js'
export { kuhnPolicyOf, type KuhnActionScorer, type KuhnPolicyOfOptions } from './kuhn-policy-of.js'
export {
  createKuhnBestResponsePolicy,
  createKuhnNashPolicy,
  createKuhnTabularPolicy,
  kuhnTurnInformationState,
  type KuhnTabularPolicyOptions,
} from './kuhn-opponents.js'

export {
  createSimpleNegotiation,
  negotiationInventoryValue,
  negotiationStartingInventory,
  negotiationValues,
  negotiationTurnState,
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
  parseIteratedPrisonersDilemmaObservation,
  type IteratedPrisonersDilemmaObservation,
  type IteratedPrisonersDilemmaOptions,
} from './iterated-prisoners-dilemma.js'

export { createOpponentPolicy, opponentCompletion, requireTurn, type OpponentPolicyOptions } from './opponent-policy.js'
export { createRandomPolicy, type RandomPolicyOptions } from './random-policy.js'
export { negotiationMenu, turnLegalActions } from './legal-actions.js'

export {
  addRationals,
  compareRationals,
  createRational,
  divideRationals,
  formatRational,
  multiplyRationals,
  parseRational,
  rationalEquals,
  subtractRationals,
  type Rational,
} from './rational.js'
export {
  canonicalGame24Expression,
  evaluateGame24Expression,
  formatGame24Expression,
  game24ExpressionNumbers,
  game24MaxExpressionLength,
  parseGame24Expression,
  type Game24Expression,
  type Game24Operator,
  type Game24Result,
} from './game-of-24-expression.js'
export {
  game24Problems,
  game24Split,
  game24SplitOptionsSchema,
  game24Target,
  isGame24Solvable,
  solveGame24,
  type Game24SolveOptions,
  type Game24SplitOptions,
} from './game-of-24-solver.js'
export {
  combineGame24Numbers,
  formatGame24Step,
  game24ExpressionOfSteps,
  game24Items,
  game24NextSteps,
  parseGame24Step,
  playGame24Step,
  type Game24Item,
  type Game24ParsedStep,
} from './game-of-24-step.js'
export { checkGame24Answer, createGame24, game24OptionsSchema, game24Role, type Game24Options } from './game-of-24.js'
export {
  applyBlocksworldAction,
  blocksworldBelow,
  blocksworldColors,
  blocksworldGoalSatisfied,
  blocksworldLegalActions,
  blocksworldProblemOptionsSchema,
  blocksworldShortestPlanLength,
  blocksworldShortestPlans,
  blocksworldStateKey,
  describeBlocksworldGoal,
  describeBlocksworldState,
  formatBlocksworldAction,
  generateBlocksworldProblem,
  parseBlocksworldAction,
  validateBlocksworldPlan,
  type BlocksworldAction,
  type BlocksworldGoal,
  type BlocksworldProblem,
  type BlocksworldProblemOptions,
  type BlocksworldState,
} from './blocksworld-problem.js'
export { blocksworldInTestSplit, blocksworldOptionsSchema, blocksworldRole, createBlocksworld, type BlocksworldOptions } from './blocksworld.js'
export { reasoningGameIds, type ReasoningGameId, type ReasoningGameOptionsById } from './registry.js'
export { rewordObservations, scrambleWording } from './reworded-environment.js'
