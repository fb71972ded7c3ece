/**
 * GRPO over the same action space as FoR: the model restricted to the valid steps (`stepwiseForwardLogprobs`),
 * so that the comparison with FoR differs only in the objective (maximise the reward vs sample ∝ R^β) and
 * FoR's exploration. The GRPO of `createRlTrainer` samples free text, which a tiny model mostly gets wrong
 * (invalid steps end the episode with reward 0, and a group of zeros carries no signal).
 */
import { createRandom, deriveSeed, type TokenizerV1 } from '@ludic/core'
import { clipGradientsByGlobalNorm, computeGradients, createAdamW, type CausalLanguageModel } from '@ludic/model'
import { createStepwiseEnvironments, sampleStepwiseTrajectories, stepwiseForwardLogprobs, type StepwiseProblem } from '@ludic/trainer'
import * as tf from '@tensorflow/tfjs-core'
import { game24Task, game24Tasks, type Game24Problem } from './game24-setup.js'

export interface StepwiseGrpoStep {
  step: number
  loss: number
  successRate: number
  grad_norm: number
}

/**
 * For each step: `problemsPerStep` problems drawn uniformly (seeded), `groupSize` trajectories each sampled
 * from the restricted policy (temperature 1), r = 1 when it reaches 24, else 0, the group-relative advantage
 * A_i = (r_i − mean_g r) / (std_g r + 1e-6) (verl's `compute_grpo_outcome_advantage`, unbiased std), and one
 * AdamW update on L = −mean_i A_i · Σ_t log P_F(a_t|s_t) (on-policy, one update per batch: PPO's ratio is 1 and
 * its clip inactive, so this is its gradient). The policy's gradient is clipped to norm 1, as FoR's.
 */
export async function trainStepwiseGrpo(
  model: CausalLanguageModel,
  tokenizer: TokenizerV1,
  problems: readonly Game24Problem[],
  settings: { steps: number; problemsPerStep: number; groupSize: number; learningRate: number; seed: number },
): Promise<StepwiseGrpoStep[]> {
  const parameters = model.trainableParameters()
  const optimizer = createAdamW(parameters, { learningRate: settings.learningRate, weightDecay: 0 })
  const random = createRandom(deriveSeed('ludic.game24-stepwise-grpo', settings.seed))
  const { environments, seeds, ...prompt } = game24Tasks(problems)
  const states = createStepwiseEnvironments(tokenizer, environments, prompt)
  const history: StepwiseGrpoStep[] = []
  for (let step = 1; step <= settings.steps; step++) {
    states.clear()
    const batch: { problem: StepwiseProblem; actions: readonly string[]; advantage: number; solved: boolean }[] = []
    for (let index = 0; index < settings.problemsPerStep; index++) {
      const seed = random.choice(seeds)
      const problem = { environment: 0, seed }
      const group = (await sampleStepwiseTrajectories(model, tokenizer, states, problem, { temperatures: Array(settings.groupSize).fill(1), random })).map(
        (episode) => episode.actions,
      )
      const rewards = group.map((actions) => (game24Task.solved(problems[seed]!, actions) ? 1 : 0))
      const mean = rewards.reduce((total: number, value) => total + value, 0) / rewards.length
      const std = Math.sqrt(rewards.reduce((total: number, value) => total + (value - mean) ** 2, 0) / Math.max(1, rewards.length - 1))
      group.forEach((actions, member) => batch.push({ problem, actions, advantage: (rewards[member]! - mean) / (std + 1e-6), solved: rewards[member] === 1 }))
    }
    const { loss, gradients } = computeGradients(
      () =>
        tf.tidy(() => {
          const logprobs = stepwiseForwardLogprobs(model, tokenizer, states, batch) // [trajectories]
          return tf.neg(tf.mean(tf.mul(logprobs, tf.tensor1d(batch.map((entry) => entry.advantage))))) as tf.Scalar
        }),
      parameters,
    )
    const clipped = clipGradientsByGlobalNorm(gradients, 1)
    optimizer.step(clipped.gradients)
    history.push({
      step,
      loss: (await loss.data())[0]!,
      successRate: batch.filter((entry) => entry.solved).length / batch.length,
      grad_norm: clipped.norm,
    })
    tf.dispose([loss, ...gradients.values(), ...clipped.gradients.values()])
  }
  optimizer.dispose()
  return history
}
