import { parseInput, ParseError } from '@ludic/core'
import { z } from 'zod'
import { repoFilePathProblem } from './repo-id.js'

/**
 * Which files of a repository a download needs. `required` must exist; `optional` are fetched when the
 * repository has them; `weights` adds `model.safetensors`, or `model.safetensors.index.json` and the shards
 * it lists (never `.bin`, `.pt`, `.gguf` or ONNX files).
 */
export interface FileSelection {
  required: readonly string[]
  optional: readonly string[]
  weights: boolean
}

/** The named sets of files `downloadRepo`'s `files` option accepts. */
export const filePresets = {
  /** A causal language model: its config, weights, generation config and tokenizer (everything `loadModel` and `loadTokenizer` read). */
  model: {
    required: ['config.json'],
    optional: ['generation_config.json', 'tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json'],
    weights: true,
  },
  /** A tokenizer: `tokenizer.json` and, when present, `tokenizer_config.json` (chat template, special tokens) and `special_tokens_map.json`. */
  tokenizer: { required: ['tokenizer.json'], optional: ['tokenizer_config.json', 'special_tokens_map.json'], weights: false },
} as const satisfies Record<string, FileSelection>

export type FilePreset = keyof typeof filePresets

export const singleWeightsFile = 'model.safetensors'
export const weightsIndexFile = 'model.safetensors.index.json'

/** Bounds on what a shard index may ask for, checked before anything is downloaded. */
export interface IndexLimits {
  maxShards: number
  maxTotalBytes: number
}

const indexSchema = z.looseObject({
  metadata: z.looseObject({ total_size: z.number().nonnegative().optional() }).nullish(),
  weight_map: z.record(z.string(), z.string()),
})

/**
 * The shard files `model.safetensors.index.json` lists, each checked (a relative path inside the repository,
 * ending in `.safetensors`), at most `maxShards` of them, and its `metadata.total_size` at most `maxTotalBytes`.
 */
export function parseShardIndex(text: string, source: string, limits: IndexLimits): string[] {
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (error) {
    throw new ParseError({ source, message: `not valid JSON (${error instanceof Error ? error.message : String(error)})`, cause: error })
  }
  const index = parseInput(indexSchema, json, { source })
  const totalSize = index.metadata?.total_size
  if (totalSize !== undefined && totalSize > limits.maxTotalBytes) {
    throw new ParseError({ source, path: ['metadata', 'total_size'], message: `${totalSize} bytes is more than maxTotalBytes (${limits.maxTotalBytes})` })
  }
  const shards = new Set<string>()
  for (const [tensor, shard] of Object.entries(index.weight_map)) {
    if (shards.has(shard)) continue
    const problem = repoFilePathProblem(shard) ?? (shard.endsWith('.safetensors') ? undefined : 'is not a .safetensors file')
    if (problem !== undefined)
      throw new ParseError({ source, path: ['weight_map', tensor], message: `shard ${JSON.stringify(shard.slice(0, 200))} ${problem}` })
    shards.add(shard)
    if (shards.size > limits.maxShards)
      throw new ParseError({ source, path: ['weight_map'], message: `lists more than maxShards (${limits.maxShards}) shard files` })
  }
  if (shards.size === 0) throw new ParseError({ source, path: ['weight_map'], message: 'lists no shard file' })
  return [...shards].sort()
}
