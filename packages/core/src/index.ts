export {
  BackendError,
  FileSystemError,
  InvalidArgumentError,
  LudicError,
  ParseError,
  ShapeError,
  describeValue,
  formatPath,
  type LudicErrorOptions,
} from './errors.js'
export { closestName, parseArgument, parseInput } from './validation.js'
export { jsonLinesLimitsSchema, parseJsonLines, type JsonLinesLimits } from './json-lines.js'
export { isPolicy, isTokenizer, policySchema, tokenizerSchema } from './interface-checks.js'
export { createRandom, deriveSeed, type Random, type RandomSeed } from './random.js'
export { yieldToEventLoop } from './event-loop.js'
export { distinctRows } from './distinct-rows.js'
export { isResponseTooLarge, limitResponseBody } from './response-size-limit.js'
export { createNamedFactories, type NamedFactories, type NamedFactoriesDescription } from './named-factories.js'
export { pathBeyondDepth } from './nesting-depth.js'
export {
  catastrophicRepetitionMessage,
  defaultMaxRegExpPaths,
  findRegExpBacktrackingHazard,
  repetitionIsCatastrophic,
  type RegExpBacktrackingOptions,
} from './regex-backtracking.js'
export {
  advantageBatchSchema,
  advantageNeedSchema,
  chatMessageSchema,
  chatRoleSchema,
  completionSchema,
  finishReasonSchema,
  generationRequestSchema,
  groupJudgementSchema,
  judgeIdentitySchema,
  judgementWinnerSchema,
  pairwiseJudgementSchema,
  preferencePairSchema,
  refuseLengthControls,
  requestMessages,
  rewardsSchema,
  maxStateKeyLength,
  sampleSchema,
  stateKeySchema,
  stepInfoSchema,
  stepOutcomeSchema,
  trajectorySchema,
  turnSchema,
  turnViewSchema,
  turnContextSchema,
  turnContextOf,
  type AdvantageBatch,
  type AdvantageNeed,
  type AdvantageResult,
  type ChatMessage,
  type ChatRole,
  type Completion,
  type FinishReason,
  type GenerationRequest,
  type GroupJudgement,
  type JudgeIdentity,
  type JudgementWinner,
  type PairwiseJudgement,
  type PreferencePair,
  type Sample,
  type StepInfo,
  type StepOutcome,
  type Trajectory,
  type Turn,
  type TurnView,
  type TurnContext,
} from './data.js'
export { splitPreferencePair, type ExplicitPreferencePair } from './preference-pair.js'
export type {
  AdvantageEstimatorV1,
  ChatEncodeOptions,
  ChatTemplateFunction,
  ChatTemplateOptions,
  DecodeOptions,
  EncodeOptions,
  EnvironmentV1,
  GenerateOptions,
  PairwiseJudgeV1,
  PairwiseVerdict,
  PolicyV1,
  TokenizerV1,
  TrajectoryScorerV1,
} from './interfaces.js'
