/** Deterministic repository contents for the tests: small JSON files and pseudo-random weight bytes. */

/** `length` pseudo-random bytes from `seed` (a 32-bit xorshift), the same on every run. */
export function seededBytes(length: number, seed: number): Uint8Array {
  const bytes = new Uint8Array(length)
  let state = seed >>> 0 || 1
  for (let index = 0; index < length; index++) {
    state ^= state << 13
    state ^= state >>> 17
    state ^= state << 5
    bytes[index] = state & 0xff
  }
  return bytes
}

export const tinyConfig = JSON.stringify({ model_type: 'qwen3', vocab_size: 40, hidden_size: 16 }, null, 2)
export const tinyTokenizer = JSON.stringify({ version: '1.0', model: { type: 'BPE', vocab: { a: 0, b: 1 }, merges: [] } })
export const tinyTokenizerConfig = JSON.stringify({ bos_token: null, eos_token: '<|endoftext|>' })

/** A repository with one `model.safetensors` (`weightBytes` long) and files Ludic must not download. */
export function singleFileRepo(weightBytes = 256 * 1024): Record<string, string | Uint8Array> {
  return {
    'config.json': tinyConfig,
    'generation_config.json': JSON.stringify({ eos_token_id: 1 }),
    'tokenizer.json': tinyTokenizer,
    'tokenizer_config.json': tinyTokenizerConfig,
    'model.safetensors': seededBytes(weightBytes, 7),
    'pytorch_model.bin': seededBytes(1000, 8),
    'onnx/model.onnx': seededBytes(1000, 9),
    'README.md': '# tiny\n',
  }
}

/** A repository whose weights are two shards listed by `model.safetensors.index.json`. */
export function shardedRepo(): Record<string, string | Uint8Array> {
  const index = {
    metadata: { total_size: 3000 },
    weight_map: {
      'a.weight': 'model-00001-of-00002.safetensors',
      'b.weight': 'model-00002-of-00002.safetensors',
      'c.weight': 'model-00001-of-00002.safetensors',
    },
  }
  return {
    'config.json': tinyConfig,
    'tokenizer.json': tinyTokenizer,
    'model.safetensors.index.json': JSON.stringify(index),
    'model-00001-of-00002.safetensors': seededBytes(2000, 11),
    'model-00002-of-00002.safetensors': seededBytes(1000, 12),
    'model-00001-of-00002.bin': seededBytes(100, 13),
  }
}
