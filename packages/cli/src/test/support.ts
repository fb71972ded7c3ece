import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { applyLora, createModel, loadModel, saveLoraAdapter, saveModel } from '@ludic/model'
import * as tf from '@tensorflow/tfjs-core'
import { initTensors } from '@ludic/tensors'
import { trainBpe } from '@ludic/tokenizer'
import { afterAll, beforeAll, expect } from 'vitest'
import { runCli, type CliIo } from '../cli.js'
import { exitCodes } from '../errors.js'

/** What a fake stream was given, and the stream. */
export function captureStream(isTTY = false) {
  const chunks: string[] = []
  return { chunks, text: () => chunks.join(''), stream: { isTTY, columns: 100, write: (text: string) => chunks.push(text) } }
}

/** `CliIo` over two fake streams (not TTYs unless asked), a signal the test can abort, and `cwd`. */
export function captureIo(options: { cwd?: string; tty?: boolean } = {}) {
  const stdout = captureStream(false)
  const stderr = captureStream(options.tty ?? false)
  const controller = new AbortController()
  const io: CliIo = { stdout: stdout.stream, stderr: stderr.stream, signal: controller.signal, ...(options.cwd === undefined ? {} : { cwd: options.cwd }) }
  return { io, controller, stdout: stdout.text, stderr: stderr.text }
}

/** The test file's setup: the WebAssembly backend and a temporary directory (removed after the file's tests). */
export function useBackendAndDirectory(prefix: string): () => string {
  let directory: string | undefined
  beforeAll(async () => {
    process.env.LUDIC_BACKEND = 'wasm' // the commands pick their backend: here the WebAssembly one, as every test
    await initTensors({ backend: 'wasm', verbose: false })
    directory = await mkdtemp(join(tmpdir(), prefix))
  })
  afterAll(async () => {
    if (directory !== undefined) await rm(directory, { recursive: true, force: true, maxRetries: 5 })
  })
  return () => directory!
}

/** A tiny model over a small BPE with an end token and a chat template, saved as a model directory. */
export const tinyOverrides = { hiddenSize: 32, numAttentionHeads: 2, numHiddenLayers: 1, intermediateSize: 64 }
export const plainChatTemplate =
  "{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}"

export async function saveTinyModel(directory: string, overrides: Record<string, unknown> = {}): Promise<string> {
  await mkdir(directory, { recursive: true })
  const corpus = ['user: hello there\nassistant: hi', 'user: what is two plus two?\nassistant: four', 'the quick brown fox jumps over the lazy dog']
  const json = trainBpe(corpus, { vocabSize: 280, specialTokens: ['<|end|>'] })
  await writeFile(join(directory, 'tokenizer.json'), JSON.stringify(json))
  await writeFile(join(directory, 'tokenizer_config.json'), JSON.stringify({ eos_token: '<|end|>', chat_template: plainChatTemplate }))
  const model = createModel('tiny', { vocabSize: 280, seed: 5, overrides: { ...tinyOverrides, ...overrides } })
  await saveModel(model, directory)
  model.dispose()
  return directory
}

/** Saves a LoRA adapter of the model in `modelDirectory` to `directory`, with B drawn at random (so it changes the answers), seeded. */
export async function saveRandomAdapter(modelDirectory: string, directory: string, seed: number): Promise<void> {
  const model = await loadModel(modelDirectory)
  try {
    const adapters = applyLora(model, { rank: 4, alpha: 8, seed })
    for (const [name, variable] of adapters.parameters()) {
      if (name.endsWith('lora_B.weight')) tf.tidy(() => variable.assign(tf.randomNormal(variable.shape, 0, 0.5, 'float32', seed)))
    }
    await saveLoraAdapter(adapters, directory)
  } finally {
    model.dispose()
  }
}

/**
 * Runs `ludic serve <directory> --port 0 …flags` in this process until `work` (given the server's URL and its stderr so
 * far) is done, then stops it by its signal, as Ctrl+C, and expects exit code 130. Returns what `work` returned; a
 * server that exits before listening fails with its exit code and stderr.
 */
export async function whileServing<T>(directory: string, flags: readonly string[], work: (url: string, stderr: () => string) => Promise<T>): Promise<T> {
  const { io, controller, stderr } = captureIo()
  let listening: (url: string) => void = () => {}
  const url = new Promise<string>((resolve) => {
    listening = resolve
  })
  io.onListening = (address) => listening(address)
  const exit = runCli(['serve', directory, '--port', '0', ...flags], io)
  // A server that exits before it listens fails the test at once, with its stderr, rather than at the test's timeout.
  const exitedEarly = exit.then((code) => Promise.reject(new Error(`ludic serve exited with ${code} before listening: ${stderr()}`)))
  exitedEarly.catch(() => {}) // the stop at the end resolves `exit` too: that rejection is nobody's
  let started = false
  try {
    const address = await Promise.race([url, exitedEarly])
    started = true
    return await work(address, stderr)
  } finally {
    controller.abort()
    if (started) expect(await exit).toBe(exitCodes.interrupted) // stopped by its signal, as Ctrl+C
  }
}
