import { pathToFileURL } from 'node:url'
import type { ChatMessage } from '@ludic/core'
import { createGame, createRandomPolicy, playEpisode, registerGame } from '@ludic/games'
import { createLocalPolicy, createModel } from '@ludic/model'
import { randomLegalPlay } from '@ludic/rollout'
import { initTensors } from '@ludic/tensors'
import { Tokenizer, trainBpe } from '@ludic/tokenizer'
import { createRlTrainer, createSftTrainer, evaluateAgainst } from '@ludic/trainer'
import { createNim } from './game.js'

registerGame('nim-v0', createNim) // now createGame('nim-v0') and a run config's `game: nim-v0` make it

/** One random game, to see the environment work: each player is the random policy of @ludic/games. */
export async function playOnce(seed = 0) {
  const players = { player0: createRandomPolicy({ seed: 1 }), player1: createRandomPolicy({ seed: 2 }) }
  return playEpisode(createGame('nim-v0'), players, { seed })
}

/** The prompt text a model reads: the observation, then `>` where its move goes. */
const chatTemplate = (messages: readonly ChatMessage[]) => `${messages.at(-1)?.content ?? ''}\n>`

/** Every position seen in random games, with each legal move once (`randomLegalPlay`): the tokenizer's text and the warm-up. */
function randomPlayExamples(games = 50): { prompt: string; response: string }[] {
  const { examples } = randomLegalPlay({ environment: () => createGame('nim-v0'), games, chatTemplate })
  return examples.map(({ prompt, response }) => ({ prompt, response }))
}

export interface TrainOptions {
  warmUpSteps?: number
  steps?: number
  episodesPerStep?: number
  evaluationEpisodes?: number
  seed?: number
  /** Progress bars on stderr. */
  progress?: boolean
}

/** A tiny model made from scratch: a warm-up on random legal moves, then self-play; its win rate against random play. */
export async function train(options: TrainOptions = {}) {
  const { warmUpSteps = 60, steps = 30, episodesPerStep = 64, evaluationEpisodes = 200, seed = 0, progress = false } = options
  const examples = randomPlayExamples()
  const bpe = trainBpe(
    examples.map((example) => example.prompt + example.response),
    { vocabSize: 300, specialTokens: ['<|end|>'] },
  )
  const tokenizer = Tokenizer.fromJSON(bpe, { eos_token: '<|end|>' })
  const model = createModel('tiny', { vocabSize: tokenizer.vocabSize, seed })
  const learner = createLocalPolicy({ model, tokenizer, chatTemplate, id: 'learner', seed, maxBatch: 64 })
  const environments = [() => createGame('nim-v0')]
  const againstRandom = async () => {
    const opponent = createRandomPolicy({ seed: seed + 1 })
    const match = await evaluateAgainst({ learner, opponent, environments, episodes: evaluationEpisodes, seed, generation: { maxTokens: 8 } })
    return { winRate: match.winRate, invalidRate: match.invalidRate }
  }

  const warmUp = createSftTrainer({ model, tokenizer, examples, batchSize: 16, optimizer: { learningRate: 2e-3 }, seed })
  await warmUp.run({ steps: warmUpSteps, progress })
  warmUp.dispose()
  const before = await againstRandom()
  const trainer = createRlTrainer({ model, tokenizer, chatTemplate, environments, seed, batch: { episodesPerStep, maxTokens: 8 } })
  await trainer.run({ steps, progress })
  const after = await againstRandom()
  trainer.dispose()
  model.dispose()
  return { before, after }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(await playOnce())
  await initTensors() // the TensorFlow.js backend: LUDIC_BACKEND, else the fastest one installed
  const { before, after } = await train({ progress: true })
  const percent = (value: number) => `${(100 * value).toFixed(1)}%`
  console.log(`against random play: win rate ${percent(before.winRate)} after the warm-up, ${percent(after.winRate)} after self-play`)
  console.log(`invalid moves: ${percent(before.invalidRate)} after the warm-up, ${percent(after.invalidRate)} after self-play`)
}
