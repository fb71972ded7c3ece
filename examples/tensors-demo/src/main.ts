/**
 * A first look at @ludic/tensors: pick the fastest TensorFlow.js backend this machine has, then train
 * a bigram language model on one sentence with `tokenLogprobs`, check that nothing leaked, and sample
 * from it with a seeded generator.
 *
 *   npm start                          # auto: tfjs-node-gpu → tfjs-node → WebAssembly → CPU
 *   LUDIC_BACKEND=cpu npm start        # force a backend
 */
import { pathToFileURL } from 'node:url'
import * as tf from '@tensorflow/tfjs-core'
import { createRandom } from '@ludic/core'
import { initTensors, tokenLogprobs } from '@ludic/tensors'

export interface DemoOptions {
  steps?: number
  seed?: number
  log?: (line: string) => void
}

export interface DemoResult {
  backend: string
  firstLoss: number
  lastLoss: number
  sample: string
  leakedTensors: number
}

const text = 'the cat sat on the mat and the dog sat on the log. '

export async function main(options: DemoOptions = {}): Promise<DemoResult> {
  const log = options.log ?? console.log
  const runtime = await initTensors()
  log(`backend: ${runtime.backend} — ${runtime.device}, ${runtime.threads} thread(s)`)

  const alphabet = [...new Set(text)].sort()
  const ids = Int32Array.from(text, (character) => alphabet.indexOf(character))
  const vocabulary = alphabet.length
  const inputs = tf.tensor1d(ids.subarray(0, -1), 'int32') // [time]
  const targets = tf.tensor1d(ids.subarray(1), 'int32') // [time]

  // A bigram model is a table of next-token logits per token: [vocabulary, vocabulary].
  const random = createRandom(options.seed ?? 0)
  const table = tf.variable(
    tf.tensor2d(
      Float32Array.from({ length: vocabulary * vocabulary }, () => random.nextNormal() * 0.1),
      [vocabulary, vocabulary],
    ),
  )
  const optimizer = tf.train.adam(0.1)
  const tensorsBefore = tf.memory().numTensors

  const steps = options.steps ?? 150
  let firstLoss = Number.NaN
  let lastLoss = Number.NaN
  for (let step = 0; step < steps; step++) {
    const loss = optimizer.minimize(() => {
      const logits = tf.gather(table, inputs) // [time, vocabulary]
      return tf.neg(tf.mean(tokenLogprobs(logits, targets))) as tf.Scalar
    }, true)!
    lastLoss = (await loss.data())[0]!
    loss.dispose()
    if (step === 0) firstLoss = lastLoss
    if (step % 50 === 0 || step === steps - 1) log(`step ${String(step).padStart(3)}  loss ${lastLoss.toFixed(4)} nats/char`)
  }
  // Adam creates its moment variables on the first step; after that the count must not move.
  const leakedTensors = tf.memory().numTensors - tensorsBefore - 2 * 1 // two moments for the one variable

  // Sample 40 characters from the trained model, starting at 't', with a seeded generator.
  const probabilityTable = tf.tidy(() => tf.softmax(table))
  const probabilities = await probabilityTable.data()
  probabilityTable.dispose()
  let current = alphabet.indexOf('t')
  let sample = 't'
  for (let index = 0; index < 40; index++) {
    current = random.sampleIndex(probabilities.subarray(current * vocabulary, (current + 1) * vocabulary))
    sample += alphabet[current]
  }
  log(`sample: ${JSON.stringify(sample)}`)
  tf.dispose([inputs, targets, table])
  optimizer.dispose()
  return { backend: runtime.backend, firstLoss, lastLoss, sample, leakedTensors }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((error: unknown) => {
    console.error(error)
    process.exitCode = 1
  })
}
