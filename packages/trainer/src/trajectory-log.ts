import { z } from 'zod'

/**
 * `trajectories.jsonl`: what the RL-family trainers (self-play, RL with role policies, CPO, RL-PLUS, Flow of
 * Reasoning) played, one JSON object per line and one line per episode, in the run directory beside
 * `metrics.jsonl`. Each step writes a seeded sample of its episodes (every turn's prompt and response, token ids
 * and pieces, rollout log-probs, per-token advantages, rewards per role, the judge's view for CPO groups), each
 * line bounded in bytes. Readers (`ludic view`) validate each line with `trajectoryRecordSchema`.
 */

/** The `format` of every line: bumped when a field changes meaning or a required field is added. */
export const trajectoryFormat = 'ludic.trajectory.v1'

/** The file's name in a run directory. */
export const trajectoriesFileName = 'trajectories.jsonl'

/** A per-token number; `null` where the value was not finite (JSON has no NaN or infinity). */
const tokenValues = z.array(z.number().nullable())

const rewardsByRole = z.record(z.string(), z.number())

export const trajectoryTurnRecordSchema = z
  .object({
    /** 0-based position in the episode. */
    index: z.number().int().min(0),
    role: z.string().min(1),
    /** The observation the role acted on. */
    observation: z.string(),
    legalActions: z.array(z.string()).optional(),
    /** The action sent to the environment (parsed from the response). */
    action: z.string(),
    /** Rewards of this turn, per role. */
    rewards: rewardsByRole,
    invalidAction: z.boolean(),
    /** Id of the policy that acted. */
    policyId: z.string().optional(),
    /** The turn is one of the step's trained samples (false: a scripted or fixed opponent's turn, or a turn not trained on). */
    trained: z.boolean(),
    /** The prompt as the model saw it (chat template applied), when a model acted. */
    prompt: z.string().optional(),
    /** The response text, when a model acted. */
    response: z.string().optional(),
    /** Each response token decoded alone, one per entry of `tokenIds`. */
    tokens: z.array(z.string()).optional(),
    tokenIds: z.array(z.number().int()).optional(),
    /** Log-probabilities of the response tokens under the policy that generated them. */
    logprobs: tokenValues.optional(),
    /** Per-token advantage the update used (trained turns only). */
    advantages: tokenValues.optional(),
    /** Per-token entropy of the policy, where the step computed it. */
    entropy: tokenValues.optional(),
    /**
     * For each response token, the weights version that sampled it, where the policy said (`Sample.tokenPolicyVersions`:
     * a partial rollout's tokens can be of two versions or more).
     */
    policyVersions: z.array(z.number().int().min(0)).optional(),
    /**
     * The log-probability of the action among the allowed ones, where the policy chooses from enumerated actions
     * (Flow of Reasoning's log P_F(a|s), normalised over the allowed actions); `null` when not finite.
     */
    actionLogprob: z.number().nullable().optional(),
  })
  .superRefine((turn, context) => {
    const length = turn.tokenIds?.length
    for (const field of ['tokens', 'logprobs', 'advantages', 'entropy', 'policyVersions'] as const) {
      const values = turn[field]
      if (values === undefined) continue
      if (length === undefined) {
        context.addIssue({ code: 'custom', path: [field], message: `needs tokenIds beside it` })
      } else if (values.length !== length) {
        context.addIssue({ code: 'custom', path: [field], message: `has ${values.length} entries for ${length} tokenIds` })
      }
    }
  })
export type TrajectoryTurnRecord = z.infer<typeof trajectoryTurnRecordSchema>

export const trajectoryEpisodeRecordSchema = z.object({
  id: z.string().min(1),
  environmentId: z.string().min(1),
  /** The seed the environment was reset with. */
  seed: z.number().int(),
  /** Episodes that share a group id were compared to each other (GRPO, CPO groups). */
  groupId: z.string().min(1),
  roles: z.array(z.string().min(1)),
  /** Total reward per role over the episode (for CPO, after the scorer's score). */
  returns: rewardsByRole,
  done: z.boolean(),
  truncated: z.boolean(),
  /** Set when the episode failed (policy error, timeout). */
  error: z.string().optional(),
  /** An RL-PLUS external demonstration (played by another model, not by this run's weights). */
  external: z.boolean(),
  /** Where the trainer got the episode, when it has several sources (Flow of Reasoning: `on-policy`, `replay`, `local-search`). */
  source: z.string().min(1).optional(),
})
export type TrajectoryEpisodeRecord = z.infer<typeof trajectoryEpisodeRecordSchema>

/** A trajectory scorer's view of the episode's group (CPO's comparative judge). */
export const trajectoryJudgementRecordSchema = z.object({
  /** The scorer's name. */
  scorer: z.string().min(1),
  /** This episode's score. */
  score: z.number(),
  /** This episode's rank in its group, 1 the best (tied episodes share the mean of their places), when the scorer ranks. */
  rank: z.number().optional(),
  /** The episode ids of the group, in the group's order. */
  groupEpisodeIds: z.array(z.string()).optional(),
  /** The scores of the whole group, in the group's order. */
  groupScores: z.array(z.number()),
  /** The ranks of the whole group, in the group's order, when the scorer ranks. */
  groupRanking: z.array(z.number()).optional(),
  /** The judge's raw answers (one per shuffle or call). */
  rawText: z.array(z.string()),
  /** Why a call gave no verdict (unparseable answer, unreachable judge…). */
  failures: z.array(z.string()).optional(),
  /** Agreement between the judge's shuffles, 0 to 1, where it asked more than one. */
  agreement: z.number().optional(),
})
export type TrajectoryJudgementRecord = z.infer<typeof trajectoryJudgementRecordSchema>

/** One line of `trajectories.jsonl` (format `ludic.trajectory.v1`). */
export const trajectoryRecordSchema = z.object({
  format: z.literal(trajectoryFormat),
  /** The trainer step that trained on it (the numbering of `metrics.jsonl`'s `step`, 1-based). */
  step: z.number().int().min(1),
  /**
   * The weights version that played it (on-policy: `step - 1`; asynchronous: the batch's oldest token's, each turn's
   * tokens in `policyVersions` where the policy said); absent for an external demonstration.
   */
  policyVersion: z.number().int().min(0).optional(),
  /** Which trainer wrote it: `self-play`, `rl`, `cpo`, `rl-plus`, `for`… */
  trainer: z.string().min(1),
  episode: trajectoryEpisodeRecordSchema,
  turns: z.array(trajectoryTurnRecordSchema),
  /** A text rendering of the final board or state, where the environment can render one. */
  render: z.string().optional(),
  judgement: trajectoryJudgementRecordSchema.optional(),
  /** The fields cut (strings shortened, arrays or turns dropped) to keep the line within `maxLineBytes`. */
  truncatedFields: z.array(z.string()).optional(),
})
export type TrajectoryRecord = z.infer<typeof trajectoryRecordSchema>

/** The longest line `maxLineBytes` allows: 1 MiB, the longest line `ludic view` reads (longer ones are skipped). */
export const maxTrajectoryLineBytes = 1024 * 1024

/**
 * What an RL-family trainer writes to `trajectories.jsonl` (in its `runDirectory`; a run without one writes
 * nothing). The episodes of a step are drawn with a generator seeded by the run's seed and the step, never the
 * trainer's own: training is the same, bit for bit, with the log on or off.
 */
export const trajectoryLogConfigSchema = z.strictObject({
  /** Write the file. Default true. */
  enabled: z.boolean().default(true),
  /** Episodes written per step (a seeded sample of the step's), or `'all'`. Default 4. */
  episodesPerStep: z.union([z.number().int().positive().max(1_000_000), z.literal('all')]).default(4),
  /**
   * The longest line, in bytes (UTF-8, newline excluded): a longer record has its longest strings cut, then its
   * per-token arrays, then its last turns dropped, each named in `truncatedFields`. 4 KiB to 1 MiB. Default 262144 (256 KiB).
   */
  maxLineBytes: z.number().int().min(4096).max(maxTrajectoryLineBytes).default(262_144),
  /**
   * Each written trained turn's per-token entropy (`entropy`) of the step's policy before its update, at the sampling
   * temperature: one more forward pass without gradient over the written episodes' samples only (RL trainer). Default true.
   */
  entropy: z.boolean().default(true),
})
export type TrajectoryLogConfig = z.input<typeof trajectoryLogConfigSchema>
export type ParsedTrajectoryLogConfig = z.output<typeof trajectoryLogConfigSchema>
