import type {
  AdvantageBatch,
  AdvantageNeed,
  AdvantageResult,
  ChatMessage,
  Completion,
  GenerationRequest,
  GroupJudgement,
  PairwiseJudgement,
  StepOutcome,
  Trajectory,
  TurnView,
} from './data.js'

/**
 * A policy samples completions for chat requests, in batches. The local model
 * (`@ludic/model`'s `createLocalPolicy`) and a remote OpenAI-compatible server both implement it.
 */
export interface PolicyV1 {
  readonly specificationVersion: 'v1'
  readonly id: string
  /** One completion per request, in order. */
  generate(requests: readonly GenerationRequest[], options?: GenerateOptions): Promise<Completion[]>
}

/** What a caller can ask of one `generate` call beyond its requests. */
export interface GenerateOptions {
  /**
   * Aborts the call: the work stops at its next step (a local model checks between decode steps, a remote
   * policy drops the connection) and the promise rejects with the signal's reason.
   */
  signal?: AbortSignal
  /**
   * Streaming: called with each request's new text as it is produced (whole characters only; the pieces of a
   * request join to its completion's text). A policy that cannot stream calls it once per request with the
   * whole text before resolving.
   */
  onText?: (requestIndex: number, text: string) => void
}

/**
 * A turn-based, multi-role, text environment. An invalid action is an outcome
 * (`info.invalidAction`), never an exception. `reset` with the same seed starts the same episode.
 */
export interface EnvironmentV1 {
  readonly specificationVersion: 'v1'
  /** Versioned id, e.g. `'kuhn-poker-v1'`. */
  readonly id: string
  /** The roles, in seating order, e.g. `['player0', 'player1']` or `['character', 'user']`. */
  readonly roles: readonly string[]
  reset(seed: number): TurnView
  step(action: string): StepOutcome
}

/** Turns per-token rewards into per-token advantages and returns. */
export interface AdvantageEstimatorV1 {
  readonly specificationVersion: 'v1'
  readonly name: string
  /**
   * What `estimate` needs in its batch beyond `tokenRewards` and `groupIds` (e.g. `['values']` for GAE): without
   * one of them it throws an `InvalidArgumentError` naming `batch.<field>`. A trainer checks them when it is
   * built, so a configuration whose estimator needs what no stage provides fails before any rollout. Absent:
   * nothing beyond rewards and groups.
   */
  readonly requires?: readonly AdvantageNeed[]
  estimate(batch: AdvantageBatch): AdvantageResult
  /**
   * A stateful estimator (one that keeps something across batches, such as RAE's per-role baselines)
   * returns that state as plain JSON data, which a trainer saves in its checkpoints. Stateless
   * estimators (GAE, GRPO…) leave it out.
   */
  getState?(): unknown
  /**
   * Restores a state returned by `getState` (read back from a checkpoint, so it is validated: a malformed
   * state throws). Present exactly when `getState` is.
   */
  setState?(state: unknown): void
}

/** Scores whole trajectories, possibly comparing a group at once (CPO-style judges). */
export interface TrajectoryScorerV1 {
  readonly specificationVersion: 'v1'
  readonly name: string
  /** One score per trajectory, in order. A judge that fails records it (see `takeMetrics`) and scores a tie. */
  score(group: readonly Trajectory[], options?: { signal?: AbortSignal }): Promise<number[]>
  /**
   * Diagnostics accumulated since the last call, as plain numbers (judge agreement between shuffles, parse
   * failures, position and length bias…), and resets them: a trainer logs them once per step.
   */
  takeMetrics?(): Readonly<Record<string, number>>
  /**
   * The judgements of the groups scored since the last call, as plain data (per group: the trajectory ids, the
   * ranking and scores, the judge's raw answers, its agreement between shuffles), and forgets them: a trainer
   * writes them beside the episodes it logs (`trajectories.jsonl`). Optional: a scorer without judgements to show
   * (a reward model, a rule) leaves it out.
   */
  takeJudgements?(): GroupJudgement[]
}

/** The outcome of comparing two trajectories in both orders: a disagreement between the orders is a tie. */
export interface PairwiseVerdict {
  /** The preferred trajectory (`a` or `b`, the arguments of `compare`), or `tie`. */
  outcome: 'a' | 'b' | 'tie'
  /** The judgements asked (one per order). */
  judgements: PairwiseJudgement[]
}

/** Compares two trajectories of the same context (CharacterArena's trajectory-level comparison). */
export interface PairwiseJudgeV1 {
  readonly specificationVersion: 'v1'
  readonly name: string
  /** Judged in both orders (AB and BA); a judge that fails records a tie with the failure, never throws for it. */
  compare(a: Trajectory, b: Trajectory, options?: { contextId?: string; signal?: AbortSignal }): Promise<PairwiseVerdict>
}

export interface EncodeOptions {
  /** Add the special tokens of the post-processor (BOS, EOS…). Default: true. */
  addSpecialTokens?: boolean
  /**
   * Encode the text of special tokens (`<|im_start|>`, `<|endoftext|>`…) as the plain text it is, not as those
   * tokens, as Hugging Face's `split_special_tokens`: for text from outside, which must not write control tokens.
   * Non-special added tokens still match. Default: false.
   */
  splitSpecialTokens?: boolean
}

export interface DecodeOptions {
  /** Leave special tokens out of the text. Default: false. */
  skipSpecialTokens?: boolean
}

export interface ChatTemplateOptions {
  /** End with the assistant's turn opened. Default: false. */
  addGenerationPrompt?: boolean
  /** Tool definitions, for templates that take them. */
  tools?: readonly Record<string, unknown>[]
}

/**
 * Renders chat messages to text, as `TokenizerV1.applyChatTemplate` does (which is one); `addGenerationPrompt`
 * ends with the assistant's turn opened, where a response goes.
 */
export type ChatTemplateFunction = (messages: readonly ChatMessage[], options: { addGenerationPrompt: boolean }) => string

export interface ChatEncodeOptions extends ChatTemplateOptions {
  /**
   * Special-token text inside the messages (contents, names…) is encoded as plain text, while the special tokens the
   * chat template writes stay special: as if Hugging Face's `split_special_tokens` held for the messages' text
   * alone. For messages from outside (a server's clients, a user simulator, a character card). Default: false (as
   * transformers' `apply_chat_template(…, tokenize=True)`, which reads special tokens anywhere).
   */
  splitSpecialTokens?: boolean
  /**
   * Renders with this template instead of the tokenizer's own: a Jinja source (as transformers' `chat_template`
   * argument) or a function. Default: the tokenizer's.
   */
  chatTemplate?: string | ChatTemplateFunction
}

/** A tokenizer: text ↔ token ids, with special tokens and (optionally) a chat template. */
export interface TokenizerV1 {
  readonly specificationVersion: 'v1'
  readonly vocabSize: number
  readonly bosTokenId: number | undefined
  readonly eosTokenId: number | undefined
  readonly padTokenId: number | undefined
  encode(text: string, options?: EncodeOptions): Int32Array
  decode(ids: ArrayLike<number>, options?: DecodeOptions): string
  tokenToId(token: string): number | undefined
  idToToken(id: number): string | undefined
  /** Renders chat messages to the prompt text the model was trained on. */
  applyChatTemplate?(messages: readonly ChatMessage[], options?: ChatTemplateOptions): string
  /**
   * The ids of the rendered chat, no special tokens added (as transformers' `apply_chat_template(…, tokenize=True)`);
   * with `splitSpecialTokens`, the messages' own special-token text stays text (see `ChatEncodeOptions`).
   */
  encodeChat?(messages: readonly ChatMessage[], options?: ChatEncodeOptions): Int32Array
  /**
   * Incremental decoding for streamed generation: `push(id)` returns the text that id completes
   * (never half of a multi-byte character, possibly ''); `flush()` returns what is left at the end.
   */
  createStreamDecoder?(options?: DecodeOptions): { push(id: number): string; flush(): string }
}
