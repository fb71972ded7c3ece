/**
 * Game of 24 for a tiny model: the compact prompt it reads (the problem, the steps so far, the numbers left), made
 * from `createGame24`'s structured turn for both the rollout of `createRlTrainer` (GRPO) and the Flow of Reasoning
 * trainer, which takes the same environment (`game24Environment`: every valid next step listed as the legal
 * actions, FoR's rewards), solver solutions as warm-up examples, and a byte-level BPE trained on that text.
 */
import { createRandom, deriveSeed, InvalidArgumentError, type ChatMessage, type EnvironmentV1, type TurnView } from '@ludic/core'
import {
  canonicalGame24Expression,
  createGame24,
  formatRational,
  game24ExpressionOfSteps,
  game24Items,
  game24NextSteps,
  playGame24Step,
  type Game24Item,
} from '@ludic/games'
import { Tokenizer, trainBpe } from '@ludic/tokenizer'

export type Game24Problem = readonly number[]
export const endOfText = '<|end|>'

/** FoR's Game of 24 reward: R = 100 on success, 0.001 otherwise (its released code), as log R. */
export const successLogReward = Math.log(100)
export const failureLogReward = Math.log(0.001)

/** The numbers left after `steps` (the operands replaced by the result, appended), or undefined when a step is invalid. */
export function remainingNumbers(problem: Game24Problem, steps: readonly string[]): string[] | undefined {
  if (problem.length === 0) return undefined
  const replayed = game24ExpressionOfSteps(problem, steps)
  return replayed.ok ? replayed.remaining.map(formatRational) : undefined
}

/**
 * What the model reads, without the final `>`: the problem, each step taken, and the numbers left.
 * `4 7 8 8\n8 / 8 = 1\nleft: 4 7 1`
 */
export function promptBody(problem: Game24Problem, steps: readonly string[]): string {
  const left = remainingNumbers(problem, steps) ?? []
  return [problem.join(' '), ...steps, `left: ${left.join(' ')}`].join('\n')
}

/** The chat template: the last message, then `\n>` where the step goes. */
export const chatTemplate = (messages: readonly ChatMessage[]): string => `${messages.at(-1)?.content ?? ''}\n>`

/** The full prompt of a state: `promptBody` through the chat template. */
export const game24Prompt = (problem: Game24Problem, steps: readonly string[]): string => chatTemplate([{ role: 'user', content: promptBody(problem, steps) }])

/**
 * The prompt of a `createGame24` turn: `promptBody` of its structured state (`TurnView.state`: the problem and the
 * steps played), never its wording, so GRPO's rollout and FoR read exactly the same text.
 */
export function promptOfView(view: TurnView): ChatMessage[] {
  const state = view.state as { numbers?: unknown; steps?: unknown } | undefined
  if (!Array.isArray(state?.numbers) || !Array.isArray(state.steps))
    throw new InvalidArgumentError({ argument: 'view.state', value: view.state, message: "must be createGame24's { numbers, steps }" })
  return [{ role: 'user', content: promptBody(state.numbers as number[], state.steps as string[]) }]
}

/** A complete trajectory reached 24. */
export function solvesGame24(problem: Game24Problem, steps: readonly string[]): boolean {
  const replayed = game24ExpressionOfSteps(problem, steps)
  return replayed.ok && replayed.solved && replayed.remaining.length === 1
}

/**
 * The Game of 24 for Flow of Reasoning: `createGame24` over `problems`, problem `i` dealt by seed `i`, every valid
 * next step on the numbers left listed as the legal actions (`game24NextSteps`, 22 or fewer at the start, then ≤ 18,
 * then ≤ 6), and FoR's reward after three steps: R = 100 on 24, 0.001 otherwise (so the trainer's default log R,
 * the log of the return, is FoR's). A state is the problem and its steps, each with one parent, so P_B = 1.
 */
export function game24Environment(problems: readonly Game24Problem[]): () => EnvironmentV1 {
  const list = problems.map((problem) => [...problem])
  return () => createGame24({ problems: list, pick: 'index', listSteps: true, successReward: 100, failureReward: 0.001 })
}

/**
 * What `createFlowOfReasoningTrainer` (and `createStepwiseEnvironments`) take for `problems`: the environment, the
 * seeds that deal each problem once, the compact prompt and its chat template.
 */
export function game24Tasks(problems: readonly Game24Problem[]) {
  return { environments: [game24Environment(problems)], seeds: problems.map((_, index) => index), prompt: promptOfView, chatTemplate }
}

/**
 * The same task on the problem and its steps (what `game24Environment`'s turns give, checked by `game24-setup.test.ts`):
 * the valid next steps, FoR's log R and whether the steps reach 24.
 */
export const game24Task = {
  allowedActions: (problem: Game24Problem, steps: readonly string[]): string[] => {
    const replayed = game24ExpressionOfSteps(problem, steps)
    return replayed.ok && replayed.remaining.length >= 2 ? game24NextSteps(replayed.remaining) : []
  },
  logReward: (problem: Game24Problem, steps: readonly string[]): number => (solvesGame24(problem, steps) ? successLogReward : failureLogReward),
  solved: solvesGame24,
}

/**
 * Every solving trajectory of a problem (three steps each), by walking every valid next step, grouped by the
 * canonical expression it computes (`game24ExpressionOfSteps`): the distinct solutions, each with its step orders.
 */
export function solutionTrajectories(problem: Game24Problem): Map<string, string[][]> {
  const solutions = new Map<string, string[][]>()
  const walk = (items: readonly Game24Item[], steps: readonly string[]) => {
    if (items.length === 1) {
      const [last] = items
      if (last!.value.numerator === 24 && last!.value.denominator === 1) {
        const expression = canonicalGame24Expression(last!.expression)
        solutions.set(expression, [...(solutions.get(expression) ?? []), [...steps]])
      }
      return
    }
    for (const step of game24NextSteps(items.map((item) => item.value))) {
      const played = playGame24Step(items, step)
      if (played.ok) walk(played.value.items, [...steps, step])
    }
  }
  walk(game24Items(problem), [])
  return solutions
}

/**
 * The warm-up examples: for each problem, up to `solutionsPerProblem` of its distinct solutions (drawn with the
 * seed), each as one of its step orders, one (prompt, step) example per step.
 */
export function solverExamples(problems: readonly Game24Problem[], solutionsPerProblem: number, seed: number): { prompt: string; response: string }[] {
  const random = createRandom(deriveSeed('ludic.game24-solver-examples', seed))
  return problems.flatMap((problem) => {
    const solutions = random.shuffle([...solutionTrajectories(problem).values()]).slice(0, solutionsPerProblem)
    return solutions.flatMap((orders) => {
      const steps = random.choice(orders)
      return steps.map((step, index) => ({ prompt: game24Prompt(problem, steps.slice(0, index)), response: step }))
    })
  })
}

/**
 * A byte-level BPE trained on what the model reads and writes: the warm-up examples of `problems` (pass a few
 * hundred; BPE training time grows with the corpus) and every first step of each.
 */
export function trainGame24Tokenizer(problems: readonly Game24Problem[], vocabSize: number): Tokenizer {
  const corpus = [
    ...solverExamples(problems, 1, 0).map((example) => `${example.prompt}${example.response}`),
    ...problems.map((problem) => `${game24Prompt(problem, [])}${game24Task.allowedActions(problem, []).join('\n')}`),
  ]
  return Tokenizer.fromJSON(trainBpe(corpus, { vocabSize, specialTokens: [endOfText] }), { eos_token: endOfText })
}
