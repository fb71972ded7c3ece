import {
  LudicError,
  refuseLengthControls,
  parseInput,
  type ChatMessage,
  type Completion,
  type EnvironmentV1,
  type GenerationRequest,
  type PolicyV1,
  type Sample,
  type TokenizerV1,
  type Trajectory,
} from '@ludic/core'
import { createPromptEncoder } from '@ludic/model'
import { collect, type PromptTemplate } from '@ludic/rollout'
import { z } from 'zod'

/** The policy id of the turns replayed from demonstrations (never the learner's). */
export const externalPolicyId = 'external'

/** A demonstration of one episode: the responses of its turns, as the model would write them. */
export interface Demonstration {
  /**
   * The response text of each turn, in the episode's turn order (every role's turns, as the environment asks for
   * them); encoded with the trainer's tokenizer, its end token appended, as `createSftTrainer` encodes a response.
   */
  responses: readonly string[]
  /** The return of every trained role instead of the environment's verdict. Default: what the environment gives. */
  reward?: number | undefined
}

/** What `externalDemonstrations.demonstrations` is asked: one group of the step. */
export interface DemonstrationContext {
  /** The step (0-based). */
  stepIndex: number
  environmentId: string
  /** The reset seed every episode of the group starts from. */
  seed: number
  groupId: string
  /** What the group's episodes saw first (the first turn's observation), e.g. the problem. */
  observation: string
  /** The group's on-policy trajectories, played this step. */
  trajectories: readonly Trajectory[]
}

export type DemonstrationSource = (context: DemonstrationContext) => readonly Demonstration[] | Promise<readonly Demonstration[]>

/**
 * RL-PLUS's external data (Dong et al. 2025, https://arxiv.org/abs/2508.00222): each step, every group of the
 * policy's rollouts is joined by up to `perGroup` demonstrations of the same problem (the released script: 8
 * rollouts + 1 demonstration per prompt).
 */
export const externalDemonstrationsConfigSchema = z.strictObject({
  /** The demonstrations of a group (`DemonstrationContext` → `Demonstration[]`, may be async); none: the group stays on-policy. */
  demonstrations: z.custom<DemonstrationSource>((value) => typeof value === 'function', 'must be a function (context) => demonstrations'),
  /** Most demonstrations joining a group per step: the first ones returned. Default 1. */
  perGroup: z.number().int().positive().default(1),
})
export type ExternalDemonstrationsConfig = z.input<typeof externalDemonstrationsConfigSchema>

const demonstrationsSchema = z.array(
  z.strictObject({ responses: z.array(z.string()).min(1, 'needs at least one response'), reward: z.number().finite().optional() }),
)

/** What the replay needs of the trainer's settings. */
export interface DemonstrationReplaySettings {
  demonstrations: DemonstrationSource
  perGroup: number
  environments: readonly (() => EnvironmentV1)[]
  tokenizer: TokenizerV1
  chatTemplate?: string | ((messages: readonly ChatMessage[]) => string) | undefined
  prompt?: string | PromptTemplate | undefined
  maxTurns: number
  /** Most tokens of a response (a longer demonstration is refused). */
  maxTokens: number
  trainRoles?: readonly string[] | undefined
  /** Roles played by a fixed policy (their turns are played by it in the replay too, and not trained on). */
  rolePolicies?: Readonly<Record<string, PolicyV1>> | undefined
}

/** A step's external samples and their trajectories; each sample in its group, every token external. */
export interface DemonstrationBatch {
  trajectories: Trajectory[]
  samples: Sample[]
}

/**
 * Replays demonstrations through the environments: for each group of `trajectories` (one environment, one reset
 * seed), asks `demonstrations` for the group's, resets the environment with the group's seed and plays the
 * demonstration's responses as the actions, with the prompts and chat template the policy sees. The environment's
 * verifier gives the reward (unless the demonstration gives one). The replayed episodes join the group: the same
 * `groupId`, trajectory ids `<groupId>/external/<k>`. Their samples' `rolloutLogprobs` are 0 (no policy scored
 * them): the trainer recomputes them with the current weights. An episode that asks for more turns than the
 * demonstration has, or a response longer than `maxTokens`, is an error naming the group.
 */
export async function replayDemonstrations(
  settings: DemonstrationReplaySettings,
  stepIndex: number,
  trajectories: readonly Trajectory[],
): Promise<DemonstrationBatch> {
  const factories = environmentFactories(settings.environments)
  // The prompts the learner's local policy would encode (`createLocalPolicy`, special-token text of the messages plain).
  const encodePrompt = createPromptEncoder(settings.tokenizer, { chatTemplate: settings.chatTemplate, who: 'externalDemonstrations' })
  const groups = new Map<string, Trajectory[]>()
  for (const trajectory of trajectories) groups.set(trajectory.groupId, [...(groups.get(trajectory.groupId) ?? []), trajectory])
  const replayed: DemonstrationBatch = { trajectories: [], samples: [] }
  for (const [groupId, members] of groups) {
    const { environmentId, seed } = members[0]!
    const source = `externalDemonstrations.demonstrations({ groupId: '${groupId}' })`
    const context: DemonstrationContext = {
      stepIndex,
      environmentId,
      seed,
      groupId,
      observation: members[0]!.turns[0]?.observation ?? '',
      trajectories: members,
    }
    const demonstrations = parseInput(demonstrationsSchema, await settings.demonstrations(context), { source }).slice(0, settings.perGroup)
    if (demonstrations.length === 0) continue
    const factory = factories.get(environmentId)
    if (factory === undefined) throw new LudicError(`${source}: no environment factory makes '${environmentId}'`)
    const cursors = demonstrations.map(() => ({ next: 0 }))
    const result = await collect({
      environments: [factory],
      policies: ({ role, groupIndex }) =>
        settings.rolePolicies?.[role] ??
        demonstrationPolicy(demonstrations[groupIndex]!.responses, cursors[groupIndex]!, {
          encodePrompt,
          tokenizer: settings.tokenizer,
          source: `${source}[${groupIndex}]`,
        }),
      learnerPolicyIds: [externalPolicyId],
      seeds: [seed],
      groupSize: demonstrations.length,
      maxTurns: settings.maxTurns,
      generation: { maxTokens: settings.maxTokens },
      ...(settings.prompt === undefined ? {} : { prompt: settings.prompt }),
      ...(settings.trainRoles === undefined ? {} : { trainRoles: [...settings.trainRoles] }),
    })
    if (result.failures.length > 0) throw new LudicError(result.failures[0]!.message, { cause: result.failures[0]!.error })
    const ids = new Map(result.trajectories.map((trajectory, index) => [trajectory.id, `${groupId}/external/${index}`]))
    result.trajectories.forEach((trajectory, index) => {
      const reward = demonstrations[index]!.reward
      const trained = trajectory.roles.filter((role) => settings.rolePolicies?.[role] === undefined && (settings.trainRoles?.includes(role) ?? true))
      const returns = reward === undefined ? trajectory.returns : { ...trajectory.returns, ...Object.fromEntries(trained.map((role) => [role, reward])) }
      replayed.trajectories.push({ ...trajectory, id: ids.get(trajectory.id)!, groupId, returns })
    })
    for (const sample of result.samples) {
      if (sample.responseTokenIds.length > 0) replayed.samples.push({ ...sample, trajectoryId: ids.get(sample.trajectoryId)!, groupId })
    }
  }
  return replayed
}

/** A policy that answers the turns of one episode with a demonstration's responses, in order. */
function demonstrationPolicy(
  responses: readonly string[],
  cursor: { next: number },
  { encodePrompt, tokenizer, source }: { encodePrompt: (request: GenerationRequest, index: number) => Int32Array; tokenizer: TokenizerV1; source: string },
): PolicyV1 {
  const end = tokenizer.eosTokenId === undefined ? [] : [tokenizer.eosTokenId]
  return {
    specificationVersion: 'v1',
    id: externalPolicyId,
    async generate(requests) {
      return requests.map((request, index): Completion => {
        refuseLengthControls(request, index, `the demonstrations of ${source}`)
        const text = responses[cursor.next]
        if (text === undefined) throw new LudicError(`${source} has ${responses.length} responses; the episode asked for turn ${cursor.next + 1}`)
        cursor.next++
        const tokenIds = Int32Array.from([...tokenizer.encode(text, { addSpecialTokens: false }), ...end])
        if (tokenIds.length > request.maxTokens)
          throw new LudicError(`${source}: response ${cursor.next} is ${tokenIds.length} tokens, more than batch.maxTokens (${request.maxTokens})`)
        const promptTokenIds = encodePrompt(request, index)
        return { text, promptTokenIds, tokenIds, logprobs: new Float32Array(tokenIds.length), finishReason: 'stop' }
      })
    },
  }
}

/** Each factory by the id of the environment it makes (each called once). */
function environmentFactories(environments: readonly (() => EnvironmentV1)[]): Map<string, () => EnvironmentV1> {
  return new Map(environments.map((factory) => [factory().id, factory]))
}

/** Per sample, 1 on every response token: the external mask of demonstration rows. */
export function externalTokenMasks(samples: readonly Sample[]): Uint8Array[] {
  return samples.map((sample) => new Uint8Array(sample.responseTokenIds.length).fill(1))
}
