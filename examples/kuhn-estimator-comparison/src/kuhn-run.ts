/**
 * One Kuhn Poker self-play run with a given advantage estimator: the run of `examples/selfplay-kuhn-poker`
 * (its game, terse prompt, tokenizer, warm-up, PPO settings and evaluations; without its asynchronous mode
 * and the options this comparison does not vary), so that only the estimator differs between runs.
 */
import type { AdvantageEstimatorV1, ChatMessage } from '@ludic/core'
import {
  createKuhnPoker,
  createRandomPolicy,
  evaluationInvalidRewards,
  kuhnExploitability,
  kuhnInformationStates,
  kuhnPolicyOf,
  kuhnTerseObservation,
  type KuhnPokerOptions,
} from '@ludic/games'
import { createLocalPolicy, createModel } from '@ludic/model'
import { randomLegalPlay } from '@ludic/rollout'
import { trainBpe, Tokenizer } from '@ludic/tokenizer'
import type { ExampleReport } from '@ludic/report'
import { actionLogprobs, createRlTrainer, evaluateAgainst } from '@ludic/trainer'
import { exampleOptionsSchema, startExampleRun, type ExampleOptions } from '@ludic/trainer/example'

/** The settings of a run: the shared example options with the Kuhn example's defaults, but 40 steps of 32 deals. */
export const kuhnRunOptionsSchema = exampleOptionsSchema({
  steps: 40,
  sftSteps: 40,
  episodesPerStep: 32,
  klCoefficient: 0.2,
  evaluationEpisodes: 200,
  vocabSize: 320,
  checkpointEvery: 5,
})

/** One round per episode, net chips as the reward: the game whose exploitability is exact. */
const kuhnOptions: KuhnPokerOptions = { rounds: 1, reward: 'chips' }
const endOfText = '<|end|>'

/**
 * What the model reads: the last message's observation made terse (`kuhnTerseObservation`: the round's moves,
 * the legal moves, the card), then `\n>` where the move goes. The rollout's prompt stays the full observation,
 * which the scripted random player reads.
 */
const chatTemplate = (messages: readonly ChatMessage[]): string => `${kuhnTerseObservation(messages.at(-1)?.content ?? '')}\n>`

/** Exact exploitability; against the random player, win rate, mean chips won and the share of invalid moves. */
export type Evaluation = { step: number; exploitability: number; winRate: number; meanChips: number; invalidRate: number }

export type KuhnRunReport = ExampleReport<Evaluation>

/**
 * Trains a tiny model from scratch: a BPE on the 12 decisions' text, a warm-up on random legal play (each legal
 * move once per decision), then `options.steps` self-play steps of `episodesPerStep` deals × `groupSize` plays
 * with `advantage`; exact exploitability and win rate against random before, every `evaluateEvery` steps, after.
 */
export async function runKuhnSelfPlay(
  options: ExampleOptions,
  { advantage, groupSize }: { advantage: AdvantageEstimatorV1; groupSize: number },
): Promise<KuhnRunReport> {
  const { log, seed } = options
  const run = await startExampleRun(new URL('..', import.meta.url), options)
  const states = kuhnInformationStates(kuhnOptions)
  const decisions = states.map((state) => ({ prompt: chatTemplate([{ role: 'user', content: state.observation }]), actions: state.legalActions }))
  const examples = randomLegalPlay({ states, chatTemplate }).examples.map(({ prompt, response }) => ({ prompt, response }))
  const tokenizer = Tokenizer.fromJSON(
    trainBpe(
      examples.map((example) => `${example.prompt}${example.response}`),
      { vocabSize: options.vocabSize, specialTokens: [endOfText] },
    ),
    {
      eos_token: endOfText,
    },
  )
  const model = createModel('tiny', { vocabSize: tokenizer.vocabSize, seed })
  const learner = createLocalPolicy({ model, tokenizer, chatTemplate, maxBatch: 256, seed, id: 'learner' })
  const evaluate = async (step: number): Promise<Evaluation> => {
    // Exploitability, exactly: each legal move scored by the model at each decision, normalised over the legal moves.
    const scores = await actionLogprobs(model, tokenizer, decisions)
    const policy = await kuhnPolicyOf((observation) => scores[states.findIndex((state) => state.observation === observation)]!, {
      prompt: 'observation',
      environment: kuhnOptions,
    })
    const environments = [() => createKuhnPoker({ ...kuhnOptions, ...evaluationInvalidRewards })]
    const match = await evaluateAgainst({
      learner,
      opponent: createRandomPolicy({ seed: seed + 1 + step }),
      environments,
      episodes: options.evaluationEpisodes,
      seed: seed + 1 + step,
      generation: { maxTokens: 8, temperature: 1 },
    })
    return {
      step,
      exploitability: kuhnExploitability(policy).exploitability,
      winRate: match.winRate,
      meanChips: match.meanReward,
      invalidRate: match.invalidRate,
    }
  }

  const before = await run.beforeTraining(async () => {
    await run.warmUp({ model, tokenizer, examples, batchSize: 24 })
    return evaluate(0)
  })
  const trainer = createRlTrainer({
    model,
    tokenizer,
    environments: [() => createKuhnPoker({ ...kuhnOptions, invalidPenalty: -3 })],
    chatTemplate,
    ...run.trainerConfig({ maxTokens: 8, groupSize, evaluate }),
    advantage, // the swap
    entropyExcludeTokenIds: [...tokenizer.encode(']', { addSpecialTokens: false }), tokenizer.eosTokenId!], // the entropy metric over the move tokens
    schedule: { type: 'warmup-cosine', totalSteps: Math.max(1, options.steps - 1), minRatio: 0.1 },
  })
  await trainer.run({ steps: options.steps, progress: options.progress })
  const { evaluations, after } = await run.evaluations(before, trainer, evaluate)
  trainer.dispose()
  model.dispose()
  log(`${advantage.name}: exploitability ${before.exploitability.toFixed(3)} → ${after.exploitability.toFixed(3)} after ${trainer.stepCount} steps`)

  return run.writeReport(
    { options: { ...options, advantage: advantage.name, groupSize }, before, after, evaluations },
    {
      title: `Kuhn Poker self-play (${advantage.name} + PPO), tiny model from scratch`,
      series: [{ name: 'exploitability (exact)', color: '#1f77b4', value: (e) => e.exploitability }],
    },
  )
}
