import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createModel, saveModel } from '@ludic/model'
import { trainBpe } from '@ludic/tokenizer'
import { describe, expect, it } from 'vitest'
import { tinyOverrides, useBackendAndDirectory, whileServing } from '../test/support.js'

// vLLM's min_tokens and ignore_eos through `ludic serve`'s local model, end to end, and its /metrics.
/** The served model's name and seed in every test here. */
const serveFlags = ['--model-id', 'tiny', '--seed', '1']

const temporaryDirectory = useBackendAndDirectory('ludic-cli-serve-sampling-')

/** A tiny model over a byte-level BPE (no chat template); `endOfSequence` is its config's eos_token_id. */
async function saveTinyModel(name: string, endOfSequence: number[]): Promise<string> {
  const directory = join(temporaryDirectory(), name)
  await mkdir(directory, { recursive: true })
  const json = trainBpe(['hello there, general kenobi', 'you are a bold one'], { vocabSize: 280, specialTokens: ['<|endoftext|>'] })
  await writeFile(join(directory, 'tokenizer.json'), JSON.stringify(json))
  const model = createModel('tiny', { vocabSize: 280, seed: 5, overrides: { ...tinyOverrides, eosTokenIds: endOfSequence } })
  await saveModel(model, directory)
  model.dispose()
  return directory
}

interface Choice {
  token_ids: number[]
  finish_reason: string
}

const complete = async (url: string, body: Record<string, unknown>) => {
  const response = await fetch(`${url}/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'tiny', prompt: 'hello there', temperature: 0, return_token_ids: true, ...body }),
  })
  return { status: response.status, body: (await response.json()) as { choices: Choice[]; error?: { message: string; param: string } } }
}

describe("ludic serve: vLLM's min_tokens and ignore_eos on a local model", () => {
  it('holds the end-of-sequence token off for min_tokens and past it with ignore_eos, where greedy decoding would end at once', async () => {
    // The token greedy decoding picks first, made the model's end-of-sequence token below (same seed, same weights).
    const first = await whileServing(
      await saveTinyModel('free', []),
      serveFlags,
      async (url) => (await complete(url, { max_tokens: 6 })).body.choices[0]!.token_ids[0]!,
    )
    const directory = await saveTinyModel('ending', [first])
    await whileServing(directory, serveFlags, async (url) => {
      const plain = await complete(url, { max_tokens: 6 })
      expect(plain.body.choices[0]).toMatchObject({ token_ids: [first], finish_reason: 'stop' })

      const held = await complete(url, { max_tokens: 6, min_tokens: 4 })
      expect(held.status).toBe(200)
      const heldIds = held.body.choices[0]!.token_ids
      expect(heldIds.length).toBeGreaterThanOrEqual(4)
      expect(heldIds.slice(0, 4)).not.toContain(first)

      const ignored = await complete(url, { max_tokens: 6, ignore_eos: true, n: 2, seed: 3, temperature: 0.7 })
      expect(ignored.status).toBe(200)
      for (const choice of ignored.body.choices) expect(choice).toMatchObject({ finish_reason: 'length', token_ids: expect.any(Array) })
      expect(ignored.body.choices.map((choice) => choice.token_ids.length)).toEqual([6, 6])
      const greedyIgnored = await complete(url, { max_tokens: 6, ignore_eos: true })
      expect(greedyIgnored.body.choices[0]!.token_ids).toHaveLength(6)
      expect(greedyIgnored.body.choices[0]!.token_ids[0]).toBe(first)

      const refused = await complete(url, { max_tokens: 3, min_tokens: 4 })
      expect(refused.status).toBe(400)
      expect(refused.body.error).toMatchObject({ param: 'min_tokens', message: expect.stringMatching(/max_tokens=3, got 4/) })

      const metrics = await (await fetch(url.replace(/\/v1$/, '/metrics'))).text()
      const value = (line: string) => Number(new RegExp(`^${line.replace(/[{}"]/g, '\\$&')} (\\S+)$`, 'm').exec(metrics)?.[1])
      const generated = 1 + heldIds.length + 6 + 6 + 6
      expect(value('vllm:generation_tokens_total{model_name="tiny"}')).toBe(generated)
      expect(value('vllm:request_success_total{model_name="tiny",finished_reason="length"}')).toBe(
        3 + (held.body.choices[0]!.finish_reason === 'length' ? 1 : 0),
      ) // the two ignore_eos answers (3 choices), and maybe the held one
      expect(value('ludic_http_responses_total{code="400"}')).toBe(1)
      expect(value('vllm:e2e_request_latency_seconds_count{model_name="tiny"}')).toBe(4)
    })
  })
})
