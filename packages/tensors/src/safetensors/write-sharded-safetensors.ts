import { mkdir, readdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { parseArgument } from '@ludic/core'
import { z } from 'zod'
import { dtypeBytes } from './safetensors-dtype.js'
import { metadataSchema, validateMetadata, validateTensors } from './safetensors-layout.js'
import type { SafetensorsTensorInput, SafetensorsTensorsInput } from './safetensors-tensor.js'
import { formatShardIndex, isPlainFileName } from './shard-index.js'
import { writeFileAtomically, writeFully } from './write-file-atomically.js'
import { writeSafetensorsFile } from './write-safetensors-file.js'

export const writeShardedSafetensorsOptionsSchema = z
  .object({
    /**
     * Most tensor bytes per shard (headers not counted), as transformers' `max_shard_size`. A tensor
     * larger than this gets a shard of its own. Default: 5 GB (5,000,000,000 bytes, transformers' default).
     */
    maxShardBytes: z.number().int().positive().default(5_000_000_000),
    /**
     * `__metadata__` of every shard. Default `{ format: 'pt' }`, what transformers writes and checks for
     * when loading (it refuses a file whose metadata lacks a known `format`).
     */
    metadata: metadataSchema.default({ format: 'pt' }),
    /** File name stem: `<prefix>-00001-of-00002.safetensors`, `<prefix>.safetensors.index.json`. Default `'model'`. */
    prefix: z.string().refine(isPlainFileName, 'must be a plain file name stem').default('model'),
  })
  .strict()
export type WriteShardedSafetensorsOptions = z.input<typeof writeShardedSafetensorsOptionsSchema>

export interface WriteShardedSafetensorsResult {
  /** Shard file names written, in order (`['model.safetensors']` when everything fit in one). */
  files: string[]
  /** The index file name, or `undefined` for a single unsharded file. */
  indexFile: string | undefined
  /** Sum of the tensors' bytes, the index's `total_size`. */
  totalSize: number
  /** Sum of the tensors' elements, the index's `total_parameters`. */
  totalParameters: number
}

/**
 * Writes a checkpoint the way transformers' `save_pretrained` does: tensors assigned to shards in the order
 * given, starting a new shard when the next tensor would push the current one past `maxShardBytes`
 * (huggingface_hub's `split_state_dict_into_shards_factory`); shards named
 * `model-00001-of-00003.safetensors`…; an index `model.safetensors.index.json` with `total_parameters`,
 * `total_size` and the `weight_map`. When everything fits in one shard, a single `model.safetensors` and no
 * index. Each file is written atomically, the index last; shard files and index of an earlier save under
 * the same prefix that this save does not replace are then removed, as transformers does.
 */
export async function writeShardedSafetensors(
  directory: string,
  tensors: SafetensorsTensorsInput,
  options: WriteShardedSafetensorsOptions = {},
): Promise<WriteShardedSafetensorsResult> {
  const folder = parseArgument(z.string().min(1), directory, 'directory')
  const { maxShardBytes, metadata, prefix } = parseArgument(writeShardedSafetensorsOptionsSchema, options, 'options')
  validateMetadata(metadata)
  const validated = validateTensors(tensors)

  const shards: Map<string, SafetensorsTensorInput>[] = []
  let current = new Map<string, SafetensorsTensorInput>()
  let currentBytes = 0
  let totalSize = 0
  let totalParameters = 0
  for (const { name, dtype, shape, data } of validated) {
    const tensor = { dtype, shape, data } as SafetensorsTensorInput
    const bytes = data.length * dtypeBytes(dtype)
    totalSize += bytes
    totalParameters += data.length
    if (bytes > maxShardBytes) {
      shards.push(new Map([[name, tensor]]))
      continue
    }
    if (currentBytes + bytes > maxShardBytes) {
      shards.push(current)
      current = new Map()
      currentBytes = 0
    }
    current.set(name, tensor)
    currentBytes += bytes
  }
  if (current.size > 0 || shards.length === 0) shards.push(current)

  await mkdir(folder, { recursive: true })
  const indexFile = `${prefix}.safetensors.index.json`
  const singleFile = `${prefix}.safetensors`
  if (shards.length === 1) {
    await writeSafetensorsFile(join(folder, singleFile), shards[0]!, { metadata })
    await removeStaleFiles(folder, prefix, new Set([singleFile]))
    return { files: [singleFile], indexFile: undefined, totalSize, totalParameters }
  }

  const count = String(shards.length).padStart(5, '0')
  const files: string[] = []
  const weightMap = new Map<string, string>()
  for (const [position, shard] of shards.entries()) {
    const file = `${prefix}-${String(position + 1).padStart(5, '0')}-of-${count}.safetensors`
    await writeSafetensorsFile(join(folder, file), shard, { metadata })
    files.push(file)
    for (const name of shard.keys()) weightMap.set(name, file)
  }
  const indexText = formatShardIndex({ metadata: { total_parameters: totalParameters, total_size: totalSize }, weightMap })
  await writeFileAtomically(join(folder, indexFile), (handle) => writeFully(handle, new TextEncoder().encode(indexText), 0))
  await removeStaleFiles(folder, prefix, new Set([...files, indexFile]))
  return { files, indexFile, totalSize, totalParameters }
}

/** Removes `<prefix>.safetensors`, `<prefix>-NNNNN-of-NNNNN.safetensors` and the index not in `keep`. */
async function removeStaleFiles(folder: string, prefix: string, keep: ReadonlySet<string>): Promise<void> {
  const escaped = prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  const checkpointFile = new RegExp(`^${escaped}(-\\d{5}-of-\\d{5})?\\.safetensors(\\.index\\.json)?$`)
  for (const entry of await readdir(folder)) {
    if (checkpointFile.test(entry) && !keep.has(entry)) await rm(join(folder, entry), { force: true })
  }
}
