import { z } from 'zod'
import { InvalidArgumentError } from './errors.js'

/**
 * The plain data that crosses package boundaries. Each type has a zod schema; packages parse
 * untrusted input with it at their boundary (`parseArgument(schema, value, 'argumentName')`).
 * Token ids are `Int32Array`, log-probabilities and rewards `Float32Array`: never tensors.
 */

const finiteNumber = z.number().refine(Number.isFinite, 'must be a finite number')
const int32Array = z.custom<Int32Array>((value) => value instanceof Int32Array, { message: 'must be an Int32Array' })
const float32Array = z.custom<Float32Array>((value) => value instanceof Float32Array, { message: 'must be a Float32Array' })
/** Per-token policy versions: an `Int32Array` of integers ≥ 0. */
const policyVersionArray = int32Array.refine((versions) => versions.every((version) => version >= 0), 'must hold integers ≥ 0 (policy versions)')

export const chatRoleSchema = z.enum(['system', 'user', 'assistant', 'tool'])
export type ChatRole = z.infer<typeof chatRoleSchema>

export const chatMessageSchema = z.object({
  role: chatRoleSchema,
  content: z.string(),
  /** Optional author name (tool name for `tool` messages, a character's name in role-play). */
  name: z.string().optional(),
})
export type ChatMessage = z.infer<typeof chatMessageSchema>

/** The longest state key (`TurnView.stateKey`) the schemas accept, in characters. */
export const maxStateKeyLength = 1024

/**
 * A key of the state a role decides in (`TurnView.stateKey`): 1 to `maxStateKeyLength` characters. Two turns of
 * one environment (same id, same options) have equal keys exactly when the acting role faces the same decision
 * situation, whatever path led there:
 * - it names the acting role (or the role is implied by the state), so two roles never share a key by accident;
 * - with hidden information it describes the role's information set, never the hidden state: what the role
 *   sees and remembers that bears on the rest of the game (its own card and the betting so far, not the
 *   opponent's card), so deals that differ only in what it cannot see give equal keys;
 * - it leaves out what the rules make irrelevant to the rest of the game (the order of moves that reached a
 *   board), and limits imposed from outside the rules (an environment's `maxTurns`, a rollout's turn limit).
 * GiGPO (`createGigpo` of `@ludic/advantages`) compares the turns of a group's episodes that share a key.
 */
export const stateKeySchema = z.string().min(1, 'must not be empty').max(maxStateKeyLength, `must be at most ${maxStateKeyLength} characters`)

export const turnViewSchema = z.object({
  /** The role to act now. */
  role: z.string().min(1),
  /** What that role sees, as text. */
  observation: z.string(),
  /** The legal actions, when the environment enumerates them. */
  legalActions: z.array(z.string()).readonly().optional(),
  /**
   * A key of the decision situation of the role to act (see `stateKeySchema`: equal keys, same situation; for
   * hidden information the role's information set). Optional: environments whose states are discrete give one,
   * and GiGPO needs it. At most `maxStateKeyLength` characters.
   */
  stateKey: stateKeySchema.optional(),
  /**
   * What a scripted player needs of the game beyond `legalActions`, as plain JSON data, seen from the role to act
   * (never what it cannot see): Simple Negotiation's inventory, values and open offer (its offers are free text, so
   * it has no `legalActions`), TicTacToe's board, Kuhn Poker's information state. Optional: most games need none.
   * The rollout passes it on to the policy in `GenerationRequest.turn.state`; it is not recorded in trajectories.
   */
  state: z.record(z.string(), z.unknown()).optional(),
})
export type TurnView = z.infer<typeof turnViewSchema>

/**
 * The structured view of the turn a policy call is for, beside its messages: which environment and role, and what
 * the environment gave of the turn (`TurnView`'s `legalActions`, `stateKey` and `state`). A model reads the messages
 * and may ignore it; scripted, random, minimax and Nash players decide from it, never from the wording of the
 * observation, so a reworded observation plays the same. Plain data; a remote policy does not send it.
 */
export const turnContextSchema = z.object({
  /** The environment's id, e.g. `'kuhn-poker-v1'`. */
  environmentId: z.string().min(1),
  /** The role to act. */
  role: z.string().min(1),
  /** `TurnView.legalActions`, when the environment enumerates them. */
  legalActions: z.array(z.string()).readonly().optional(),
  /** `TurnView.stateKey`, when the environment gives one. */
  stateKey: stateKeySchema.optional(),
  /** `TurnView.state`, when the environment gives one (plain JSON data). */
  state: z.record(z.string(), z.unknown()).optional(),
})
export type TurnContext = z.infer<typeof turnContextSchema>

/** The `GenerationRequest.turn` of a turn's view in an environment. */
export function turnContextOf(environmentId: string, view: TurnView): TurnContext {
  return {
    environmentId,
    role: view.role,
    ...(view.legalActions === undefined ? {} : { legalActions: view.legalActions }),
    ...(view.stateKey === undefined ? {} : { stateKey: view.stateKey }),
    ...(view.state === undefined ? {} : { state: view.state }),
  }
}

export const generationRequestSchema = z
  .object({
    /** The conversation to continue, rendered with the policy's chat template. Exactly one of `messages` and `prompt`. */
    messages: z.array(chatMessageSchema).min(1, 'needs at least one message').optional(),
    /**
     * A text to continue as it is, with no chat template (vLLM's `/v1/completions`): a local model encodes it as its
     * tokenizer does by default (special-token text read as special tokens, the post-processor's BOS added). A policy
     * that continues chats only refuses it (`requestMessages`). Exactly one of `messages` and `prompt`.
     */
    prompt: z.string().optional(),
    /** Most tokens to generate. */
    maxTokens: z.number().int().positive(),
    /** Sampling temperature; 0 is greedy. Default (policy's): 1. */
    temperature: z.number().min(0).refine(Number.isFinite, 'must be finite').optional(),
    /** Nucleus sampling mass in (0, 1]. */
    topP: z.number().gt(0).max(1).optional(),
    /** Keep only the k most likely tokens; 0 disables. */
    topK: z.number().int().min(0).optional(),
    /** Drop tokens whose probability is below minP times the most likely one's. */
    minP: z.number().min(0).max(1).optional(),
    /** Strings that end the completion (not included in it). */
    stop: z.array(z.string().min(1)).optional(),
    /** Seed for this request's sampling. */
    seed: z.number().int().optional(),
    /**
     * vLLM's `min_tokens`: the policy's stop tokens (end of sequence and its other stop token ids) cannot be drawn before
     * this many tokens are generated (they are left out of the draw, as a filter like top-k: the recorded log-probability
     * stays the unfiltered one); `stop` strings still end the completion. An integer from 0 to `maxTokens`. Default: 0.
     */
    minTokens: z.number().int().min(0).optional(),
    /**
     * vLLM's `ignore_eos`: the end-of-sequence tokens do not end the completion (they may be drawn and are kept as text),
     * so it runs to `maxTokens` unless a `stop` string ends it. Default: false.
     */
    ignoreEos: z.boolean().optional(),
    /**
     * The structured view of the turn this request is for (`turnContextOf`): filled by the rollout and every
     * evaluation that plays an environment, absent for a plain chat request. Scripted players read it.
     */
    turn: turnContextSchema.optional(),
  })
  .superRefine((request, context) => {
    if ((request.messages === undefined) === (request.prompt === undefined)) {
      context.addIssue({
        code: 'custom',
        path: [request.messages === undefined ? 'messages' : 'prompt'],
        message: request.messages === undefined ? 'a request needs messages (a chat) or a prompt (a text)' : 'a request takes messages or a prompt, not both',
      })
    }
    if (request.minTokens !== undefined && request.minTokens > request.maxTokens) {
      context.addIssue({ code: 'custom', path: ['minTokens'], message: `must not exceed maxTokens (${request.maxTokens})` })
    }
  })
export type GenerationRequest = z.infer<typeof generationRequestSchema>

/**
 * Refuses `requests[index]`'s `minTokens` (above 0) and `ignoreEos` (true) with an `InvalidArgumentError` naming the
 * field, for a policy whose completions do not come from a token-by-token draw (scripted replies, opponents,
 * demonstrations) and so cannot honour them (`who` says which policy).
 */
export function refuseLengthControls(request: GenerationRequest, index: number, who = 'this policy'): void {
  if (request.minTokens !== undefined && request.minTokens > 0) {
    throw new InvalidArgumentError({
      argument: `requests[${index}].minTokens`,
      value: request.minTokens,
      message: `is not supported by ${who} (it does not sample tokens)`,
    })
  }
  if (request.ignoreEos === true) {
    throw new InvalidArgumentError({ argument: `requests[${index}].ignoreEos`, value: true, message: `is not supported by ${who} (it does not sample tokens)` })
  }
}

/**
 * The messages of `requests[index]`, for a policy that continues chats only: a raw `prompt` is refused with an
 * `InvalidArgumentError` naming `requests[index].prompt` (`who` says which policy, e.g. `'the opponent policy'`).
 */
export function requestMessages(request: GenerationRequest, index: number, who = 'this policy'): ChatMessage[] {
  if (request.messages !== undefined) return request.messages
  throw new InvalidArgumentError({
    argument: `requests[${index}].prompt`,
    value: request.prompt,
    message: `${who} continues chats only (messages), not raw text`,
  })
}

export const finishReasonSchema = z.enum(['stop', 'length'])
export type FinishReason = z.infer<typeof finishReasonSchema>

export const completionSchema = z
  .object({
    text: z.string(),
    /** The rendered prompt's token ids (chat template applied). */
    promptTokenIds: int32Array,
    /** The generated token ids. */
    tokenIds: int32Array,
    /** Log-probability of each generated token under the sampling policy; same length as tokenIds. */
    logprobs: float32Array,
    finishReason: finishReasonSchema,
    /**
     * For each generated token, the version of the policy's weights that sampled it (and gave its log-probability);
     * same length as tokenIds. Given by a policy whose weights can change while it generates (a local policy on a
     * `GenerationEngine` told its versions: a partial rollout continues a running sequence on new weights, so one
     * completion can hold tokens of several versions). The version is the trainer's: the step index of the weights.
     * Absent: the policy does not say (every token is of the version the caller stamps, if any).
     */
    tokenPolicyVersions: policyVersionArray.optional(),
  })
  .refine((completion) => completion.tokenIds.length === completion.logprobs.length, {
    message: 'tokenIds and logprobs must have the same length',
    path: ['logprobs'],
  })
  .refine((completion) => completion.tokenPolicyVersions === undefined || completion.tokenPolicyVersions.length === completion.tokenIds.length, {
    message: 'tokenIds and tokenPolicyVersions must have the same length',
    path: ['tokenPolicyVersions'],
  })
export type Completion = z.infer<typeof completionSchema>

export const stepInfoSchema = z.object({
  /** The action was not legal; the environment applied its penalty or default. */
  invalidAction: z.boolean().optional(),
  /** Why the episode ended or the action was invalid, in words. */
  reason: z.string().optional(),
})
export type StepInfo = z.infer<typeof stepInfoSchema>

export const rewardsSchema = z.record(z.string(), finiteNumber).readonly()

export const stepOutcomeSchema = z
  .object({
    done: z.boolean(),
    /** Ended by a limit (turns, tokens) rather than by the rules. */
    truncated: z.boolean(),
    next: turnViewSchema.optional(),
    /** Rewards earned by each role on this step (often only at the end). */
    rewards: rewardsSchema,
    info: stepInfoSchema,
  })
  .refine((outcome) => outcome.done || outcome.truncated || outcome.next !== undefined, {
    message: 'an episode that goes on needs the next turn view',
    path: ['next'],
  })
export type StepOutcome = z.infer<typeof stepOutcomeSchema>

export const turnSchema = z.object({
  /** 0-based position in the episode. */
  index: z.number().int().min(0),
  role: z.string().min(1),
  /** The observation the role acted on. */
  observation: z.string(),
  legalActions: z.array(z.string()).readonly().optional(),
  /** The key of the state the role acted on (`TurnView.stateKey`), when the environment gave one. */
  stateKey: stateKeySchema.optional(),
  /** The action sent to the environment (parsed from the completion). */
  action: z.string(),
  /** The policy's completion, when a policy (not a scripted opponent) acted. */
  completion: completionSchema.optional(),
  /** Id of the policy that acted. */
  policyId: z.string().optional(),
  /** Rewards of this step, per role. */
  rewards: rewardsSchema,
  invalidAction: z.boolean(),
})
export type Turn = z.infer<typeof turnSchema>

export const trajectorySchema = z.object({
  id: z.string().min(1),
  environmentId: z.string().min(1),
  /** The seed the environment was reset with. */
  seed: z.number().int(),
  /** Trajectories that share a group id are compared to each other (GRPO groups, CPO groups). */
  groupId: z.string().min(1),
  roles: z.array(z.string().min(1)).readonly(),
  /**
   * The id of the policy seated in each role, chosen when the episode started (a role may end without acting, e.g.
   * after an invalid first move of the other): who played whom. Absent when not recorded.
   */
  policyIds: z.record(z.string(), z.string()).optional(),
  turns: z.array(turnSchema),
  /** Total reward per role over the episode. */
  returns: rewardsSchema,
  done: z.boolean(),
  truncated: z.boolean(),
  /** Set when the episode failed (policy error, timeout); such a trajectory is reported, never dropped. */
  error: z.string().optional(),
})
export type Trajectory = z.infer<typeof trajectorySchema>

export const sampleSchema = z
  .object({
    trajectoryId: z.string().min(1),
    turnIndex: z.number().int().min(0),
    role: z.string().min(1),
    environmentId: z.string().min(1),
    groupId: z.string().min(1),
    promptTokenIds: int32Array,
    responseTokenIds: int32Array,
    /** Log-probabilities of the response tokens under the policy that generated them. */
    rolloutLogprobs: float32Array,
    /** The action was invalid. */
    invalid: z.boolean(),
    /**
     * Version of the policy weights that generated it (asynchronous collection; the trainer's step index of the weights).
     * When its tokens carry versions (`tokenPolicyVersions`), the oldest of them (the conservative choice: the staleness
     * computed from it is the largest of its tokens'); else the version the collection stamped.
     */
    policyVersion: z.number().int().min(0).optional(),
    /**
     * For each response token, the version of the weights that sampled it (its completion's `tokenPolicyVersions`): a
     * partial rollout's response holds tokens of more than one version. Same length as responseTokenIds.
     */
    tokenPolicyVersions: policyVersionArray.optional(),
    /** The key of the state its turn acted on (`TurnView.stateKey`), when the environment gave one (GiGPO's anchor states). */
    stateKey: stateKeySchema.optional(),
  })
  .refine((sample) => sample.responseTokenIds.length === sample.rolloutLogprobs.length, {
    message: 'responseTokenIds and rolloutLogprobs must have the same length',
    path: ['rolloutLogprobs'],
  })
  .refine((sample) => sample.tokenPolicyVersions === undefined || sample.tokenPolicyVersions.length === sample.responseTokenIds.length, {
    message: 'responseTokenIds and tokenPolicyVersions must have the same length',
    path: ['tokenPolicyVersions'],
  })
export type Sample = z.infer<typeof sampleSchema>

const uint8Array = z.custom<Uint8Array>((value) => value instanceof Uint8Array, { message: 'must be a Uint8Array' })

/**
 * A ragged batch for advantage estimators: one entry per sample (a response, or one turn of a
 * multi-turn episode), each with its own number of tokens; no padding. Every per-sample array has one
 * entry per sample, every per-token array the length of that sample's `tokenRewards`. Rewards and values
 * must be finite; a sample's mask, when given, holds 0s and 1s and at least one 1.
 */
export const advantageBatchSchema = z
  .object({
    /** Per sample, a reward for each response token (outcome rewards usually sit on the last token). */
    tokenRewards: z.array(float32Array),
    /** Per sample, its comparison group. */
    groupIds: z.array(z.string()).readonly(),
    /** Per sample, the role that acted (multi-agent estimators keep one baseline per role). */
    roles: z.array(z.string()).readonly().optional(),
    /** Per sample, its environment (estimators with per-environment baselines). */
    environmentIds: z.array(z.string()).readonly().optional(),
    /** Per sample, the critic's value of each response token (GAE). */
    values: z.array(float32Array).optional(),
    /**
     * Per sample, 1 for each token the policy generated and 0 for a token it did not (an observation or
     * tool span inside a multi-turn sample). Masked tokens get no advantage from outcome estimators; GAE
     * and REINFORCE++ carry their running values through them (verl's `response_mask`). All 1s when absent.
     */
    tokenMasks: z.array(uint8Array).optional(),
    /** Per sample, a reward to compare it against: REMAX's reward of the greedy response to the same prompt. */
    baselineRewards: z.array(finiteNumber).readonly().optional(),
    /** Per sample, the episode it belongs to; an episode's samples are its turns (multi-turn estimators). */
    trajectoryIds: z.array(z.string()).readonly().optional(),
    /** Per sample, the 0-based index of its turn in its episode (orders the turns; batch order when absent). */
    turnIndices: z.array(z.number().int().min(0)).readonly().optional(),
    /** Per sample, a key of the state its turn acted on: equal keys are the same state (GiGPO's anchor states; `Sample.stateKey`). */
    stateKeys: z.array(z.string()).readonly().optional(),
    /**
     * Per sample, who its role played against: the ids of the policies seated in the episode's other roles
     * (`Trajectory.policyIds`, else those that acted: `Turn.policyId`), distinct, sorted and joined by '+' ('' when
     * none is known). In self-play it is the learner's own id (RAE's per-opponent baselines).
     */
    opponentIds: z.array(z.string()).readonly().optional(),
  })
  .superRefine((batch, context) => {
    const count = batch.tokenRewards.length
    const issue = (path: (string | number)[], message: string) => context.addIssue({ code: 'custom', path, message })
    const perSample = [
      'groupIds',
      'roles',
      'environmentIds',
      'values',
      'tokenMasks',
      'baselineRewards',
      'trajectoryIds',
      'turnIndices',
      'stateKeys',
      'opponentIds',
    ] as const
    for (const name of perSample) {
      const length = batch[name]?.length
      if (length !== undefined && length !== count) issue([name], `has ${length} entries for ${count} samples`)
    }
    const checkTokens = (name: 'tokenRewards' | 'values', rows: readonly Float32Array[] | undefined) => {
      rows?.forEach((row, index) => {
        const length = batch.tokenRewards[index]?.length
        if (length !== undefined && row.length !== length) return issue([name, index], `has ${row.length} entries for ${length} tokens`)
        for (let token = 0; token < row.length; token++) {
          if (!Number.isFinite(row[token])) return issue([name, index, token], 'must be a finite number')
        }
      })
    }
    checkTokens('tokenRewards', batch.tokenRewards)
    checkTokens('values', batch.values)
    batch.tokenMasks?.forEach((mask, index) => {
      const length = batch.tokenRewards[index]?.length
      if (length !== undefined && mask.length !== length) return issue(['tokenMasks', index], `has ${mask.length} entries for ${length} tokens`)
      let valid = 0
      for (let token = 0; token < mask.length; token++) {
        if (mask[token]! > 1) return issue(['tokenMasks', index, token], 'must be 0 or 1')
        valid += mask[token]!
      }
      if (mask.length > 0 && valid === 0) issue(['tokenMasks', index], 'masks every token: a sample needs at least one valid token')
    })
  })
export type AdvantageBatch = z.infer<typeof advantageBatchSchema>

/**
 * A field of `AdvantageBatch` an estimator cannot do without, beyond `tokenRewards` and `groupIds`
 * (`AdvantageEstimatorV1.requires`): the critic's `values` (GAE), the greedy `baselineRewards` (ReMax), the
 * `stateKeys` of the turns (GiGPO), the `roles` and `environmentIds` of the samples (RAE's per-role baselines), their
 * `opponentIds` (RAE's per-opponent baselines).
 */
export const advantageNeedSchema = z.enum(['values', 'baselineRewards', 'stateKeys', 'roles', 'environmentIds', 'opponentIds'])
export type AdvantageNeed = z.infer<typeof advantageNeedSchema>
advantageNeedSchema.options satisfies readonly (keyof AdvantageBatch)[] // every need is a field of the batch

export interface AdvantageResult {
  /** Per sample, the advantage of each response token. */
  advantages: Float32Array[]
  /** Per sample, the return (value target) of each response token. */
  returns: Float32Array[]
}

/** Which of two labelled candidates a judge preferred, by position in the prompt; `tie` when it could not tell. */
export const judgementWinnerSchema = z.enum(['A', 'B', 'tie'])
export type JudgementWinner = z.infer<typeof judgementWinnerSchema>

/** Who gave a judgement: the judge's model id and the version of the prompt template it was asked with. */
export const judgeIdentitySchema = z.object({ model: z.string().min(1), promptVersion: z.string().min(1) })
export type JudgeIdentity = z.infer<typeof judgeIdentitySchema>

/**
 * One pairwise comparison of two trajectories of the same context, as asked (CharacterArena): `a` was shown
 * first when `order` is `AB`, second when `BA`; `winner` is by position. A judge whose answer could not be
 * read records a tie with `failure` saying why and `raw` keeping its text.
 */
export const pairwiseJudgementSchema = z.object({
  id: z.string().min(1),
  /** The context (character, scenario, user persona, seed) both trajectories played. */
  contextId: z.string().min(1),
  /** Id of the first trajectory (or competitor) compared. */
  a: z.string().min(1),
  /** Id of the second. */
  b: z.string().min(1),
  order: z.enum(['AB', 'BA']),
  winner: judgementWinnerSchema,
  /** The rubric dimension judged, when one was. */
  dimension: z.string().optional(),
  rationale: z.string().optional(),
  /** The judge's raw answer (kept when it could not be parsed). */
  raw: z.string().optional(),
  /** Why no verdict could be read (unparseable answer, unreachable judge…); the judgement is then a tie. */
  failure: z.string().optional(),
  judge: judgeIdentitySchema,
})
export type PairwiseJudgement = z.infer<typeof pairwiseJudgementSchema>

/**
 * A comparative judgement of one group (CPO): `ranking[i]` is candidate i's rank, 1 the best (tied
 * candidates share the mean of their places); `scores[i] = (G − rank_i)/(G − 1)`, averaged over the shuffles.
 */
export const groupJudgementSchema = z.object({
  groupId: z.string().min(1),
  /** Trajectory ids, in the group's order (not the order shown to the judge). */
  candidates: z.array(z.string().min(1)),
  ranking: z.array(finiteNumber),
  scores: z.array(finiteNumber),
  /** The judge's raw answers, one per shuffle. */
  raw: z.array(z.string()).optional(),
  /** Why a shuffle gave no ranking (the group is then a tie for that shuffle). */
  failures: z.array(z.string()).optional(),
  /**
   * How far the shuffles that gave a ranking agree, 0 to 1: the mean over their pairs of the share of candidate pairs
   * they order the same way (1 identical, 0 reversed). Absent with fewer than two readable shuffles.
   */
  agreement: z.number().min(0).max(1).optional(),
  judge: judgeIdentitySchema.optional(),
})
export type GroupJudgement = z.infer<typeof groupJudgementSchema>

/** A text, or a conversation (chat messages). */
const textOrMessages = z.union([z.string(), z.array(chatMessageSchema).min(1, 'needs at least one message')])

/**
 * A preference pair, in TRL's dataset formats: standard (`prompt`, `chosen`, `rejected` texts), conversational
 * (chat messages in each) or with the prompt implicit in `chosen`/`rejected` (their shared leading messages).
 * `margin` is how much `chosen` should win by (Llama 2's margin); `id` names the pair in reports.
 */
export const preferencePairSchema = z.object({
  id: z.string().min(1).optional(),
  prompt: textOrMessages.optional(),
  chosen: textOrMessages,
  rejected: textOrMessages,
  margin: finiteNumber.optional(),
})
export type PreferencePair = z.infer<typeof preferencePairSchema>
