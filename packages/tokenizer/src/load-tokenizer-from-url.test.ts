import { InvalidArgumentError, ParseError } from '@ludic/core'
import { describe, expect, it } from 'vitest'
import { referenceFiles } from '../test/reference-tokenizers.js'
import { loadTokenizerFromUrl } from './load-tokenizer-from-url.js'

/** A fetch over `files` (URL → body); anything else is a 404. Records the URLs asked for. */
function fakeFetch(files: Record<string, string>, requests: string[] = []): typeof fetch {
  return async (input) => {
    const url = input instanceof URL ? input.href : String(input)
    requests.push(url)
    const body = files[url]
    return body === undefined ? new Response('not here', { status: 404, statusText: 'Not Found' }) : new Response(body, { status: 200 })
  }
}

describe('loadTokenizerFromUrl', () => {
  const files = referenceFiles('llama2')
  const base = 'https://models.example/llama2/'

  it('reads tokenizer.json and, beside it, tokenizer_config.json (bos token and all)', async () => {
    const requests: string[] = []
    const fetch = fakeFetch({ [`${base}tokenizer.json`]: files.tokenizerText, [`${base}tokenizer_config.json`]: JSON.stringify(files.config) }, requests)
    const tokenizer = await loadTokenizerFromUrl(`${base}tokenizer.json`, { fetch })
    expect(Array.from(tokenizer.encode('Hello world'))).toEqual([1, 22557, 1526])
    expect(tokenizer.bosTokenId).toBe(1)
    expect(requests.sort()).toEqual([`${base}tokenizer.json`, `${base}tokenizer_config.json`])
  })

  it('goes without a config that is not there (404), or when told none; a config named elsewhere is read there', async () => {
    const fetch = fakeFetch({ [`${base}tokenizer.json`]: files.tokenizerText, 'https://other.example/config.json': JSON.stringify(files.config) })
    expect((await loadTokenizerFromUrl(new URL(`${base}tokenizer.json`), { fetch })).bosTokenId).toBeUndefined()
    const requests: string[] = []
    await loadTokenizerFromUrl(`${base}tokenizer.json`, { fetch: fakeFetch({ [`${base}tokenizer.json`]: files.tokenizerText }, requests), configUrl: false })
    expect(requests).toEqual([`${base}tokenizer.json`])
    expect((await loadTokenizerFromUrl(`${base}tokenizer.json`, { fetch, configUrl: 'https://other.example/config.json' })).bosTokenId).toBe(1)
    // A config named outright must be there.
    await expect(loadTokenizerFromUrl(`${base}tokenizer.json`, { fetch, configUrl: 'https://other.example/missing.json' })).rejects.toThrow(
      /Cannot parse https:\/\/other.example\/missing.json: answered 404 Not Found/,
    )
  })

  it('refuses an answer that is not 2xx, a body over maxBytes and JSON that does not parse, naming the URL', async () => {
    const missing = await loadTokenizerFromUrl(`${base}tokenizer.json`, { fetch: fakeFetch({}) }).catch((error: unknown) => error)
    expect(missing).toBeInstanceOf(ParseError)
    expect((missing as Error).message).toBe(`Cannot parse ${base}tokenizer.json: answered 404 Not Found`)
    const fetch = fakeFetch({ [`${base}tokenizer.json`]: files.tokenizerText, [`${base}broken.json`]: '{"model": ' })
    await expect(loadTokenizerFromUrl(`${base}tokenizer.json`, { fetch, maxBytes: 1000 })).rejects.toThrow(
      new RegExp(`Cannot parse ${base}tokenizer.json: is larger than maxBytes \\(1000 bytes\\)`),
    )
    await expect(loadTokenizerFromUrl(`${base}broken.json`, { fetch, configUrl: false })).rejects.toThrow(/broken.json: not valid JSON/)
  })

  it('stops reading a body at maxBytes: a stream that never ends is refused, not read whole', async () => {
    let pulled = 0
    const endless: typeof fetch = async () =>
      new Response(
        new ReadableStream<Uint8Array>({
          pull(controller) {
            pulled++
            controller.enqueue(new Uint8Array(64 * 1024).fill(32))
          },
        }),
      )
    await expect(loadTokenizerFromUrl(`${base}tokenizer.json`, { fetch: endless, configUrl: false, maxBytes: 1024 * 1024 })).rejects.toThrow(
      /larger than maxBytes/,
    )
    expect(pulled).toBeLessThan(40)
  })

  it('refuses bad arguments by name before any request', async () => {
    const requests: string[] = []
    const fetch = fakeFetch({}, requests)
    await expect(loadTokenizerFromUrl('not a url', { fetch })).rejects.toThrow(InvalidArgumentError)
    await expect(loadTokenizerFromUrl('not a url', { fetch })).rejects.toThrow(/url/)
    await expect(loadTokenizerFromUrl(`${base}tokenizer.json`, { fetch, maxBytes: 0 })).rejects.toThrow(/options\.maxBytes/)
    await expect(loadTokenizerFromUrl(`${base}tokenizer.json`, { fetch, configUrl: 'not a url' })).rejects.toThrow(/options\.configUrl/)
    expect(requests).toEqual([])
  })
})
