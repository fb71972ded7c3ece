import { readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { InvalidArgumentError, LudicError, ParseError, parseArgument } from '@ludic/core'
import { z } from 'zod'
import { describeNames, openSafetensors, type SafetensorsFile } from './open-safetensors.js'
import { parseShardIndex } from './shard-index.js'
import type { SafetensorsReader, SafetensorsTensor, SafetensorsTensorInfo } from './safetensors-tensor.js'

export const readShardedSafetensorsOptionsSchema = z
  .object({
    /** File name stem: reads `<prefix>.safetensors.index.json` or `<prefix>.safetensors`. Default `'model'`. */
    prefix: z.string().min(1).default('model'),
  })
  .strict()
export type ReadShardedSafetensorsOptions = z.input<typeof readShardedSafetensorsOptionsSchema>

/** A checkpoint directory opened for lazy reading (see `readShardedSafetensors`). */
export interface ShardedSafetensors extends SafetensorsReader {
  readonly directory: string
  /** Shard file names, sorted (one name for an unsharded checkpoint). */
  readonly files: readonly string[]
  /** The index's `metadata` (`total_size`…); empty for an unsharded checkpoint. */
  readonly indexMetadata: Readonly<Record<string, unknown>>
  /** The shard file name that holds a tensor. */
  fileOf(name: string): string
}

/**
 * Opens a Hugging Face checkpoint directory: `model.safetensors.index.json` with its shards
 * (`model-00001-of-00003.safetensors`…), or a single `model.safetensors` when there is no index. Every
 * shard is opened once and its header checked up front; tensors are read lazily, one at a time, through
 * the same interface as `openSafetensors`. `metadata` is the union of the shards' `__metadata__`.
 *
 * The index's `weight_map` decides which tensors exist: a name it lists that its shard lacks is a
 * `ParseError`; tensors a shard holds beyond the map are not exposed. Call `close()` when done.
 */
export async function readShardedSafetensors(directory: string, options: ReadShardedSafetensorsOptions = {}): Promise<ShardedSafetensors> {
  const folder = parseArgument(z.string().min(1), directory, 'directory')
  const { prefix } = parseArgument(readShardedSafetensorsOptionsSchema, options, 'options')
  const indexPath = join(folder, `${prefix}.safetensors.index.json`)
  const singlePath = join(folder, `${prefix}.safetensors`)

  if (!(await isFile(indexPath))) {
    if (!(await isFile(singlePath))) {
      throw new InvalidArgumentError({
        argument: 'directory',
        value: folder,
        message: `holds neither ${prefix}.safetensors.index.json nor ${prefix}.safetensors`,
      })
    }
    const file = await openSafetensors(singlePath)
    const fileName = `${prefix}.safetensors`
    return new ShardedReader(folder, [fileName], new Map([[fileName, file]]), new Map(file.names.map((name) => [name, fileName])), {})
  }

  const index = parseShardIndex(await readFile(indexPath, 'utf8'), indexPath)
  const files = [...new Set(index.weightMap.values())].sort()
  const shards = new Map<string, SafetensorsFile>()
  try {
    for (const file of files) {
      if (!(await isFile(join(folder, file)))) {
        const name = [...index.weightMap].find(([, shardFile]) => shardFile === file)![0]
        throw new ParseError({
          source: indexPath,
          path: ['weight_map', name],
          message: `the index puts tensor ${JSON.stringify(name)} in ${file}, which does not exist in ${folder}`,
        })
      }
      shards.set(file, await openSafetensors(join(folder, file)))
    }
    for (const [name, file] of index.weightMap) {
      const shard = shards.get(file)!
      if (!shard.has(name)) {
        throw new ParseError({
          source: indexPath,
          path: ['weight_map', name],
          message: `the index puts tensor ${JSON.stringify(name)} in ${file}, which holds no tensor of that name`,
        })
      }
    }
  } catch (error) {
    await Promise.allSettled([...shards.values()].map((shard) => shard.close()))
    throw error
  }
  return new ShardedReader(folder, files, shards, index.weightMap, index.metadata)
}

class ShardedReader implements ShardedSafetensors {
  readonly metadata: Readonly<Record<string, string>>
  readonly names: readonly string[]
  readonly indexMetadata: Readonly<Record<string, unknown>>
  private closed = false

  constructor(
    readonly directory: string,
    readonly files: readonly string[],
    private readonly shards: ReadonlyMap<string, SafetensorsFile>,
    private readonly weightMap: ReadonlyMap<string, string>,
    indexMetadata: Record<string, unknown>,
  ) {
    const metadata: [string, string][] = []
    const seen = new Set<string>()
    for (const shard of shards.values()) {
      for (const [key, value] of Object.entries(shard.metadata)) {
        if (!seen.has(key)) metadata.push([key, value])
        seen.add(key)
      }
    }
    this.metadata = Object.freeze(Object.fromEntries(metadata))
    this.names = Object.freeze([...weightMap.keys()])
    this.indexMetadata = Object.freeze({ ...indexMetadata })
  }

  has(name: string): boolean {
    return this.weightMap.has(name)
  }

  fileOf(name: string): string {
    const file = this.weightMap.get(name)
    if (file === undefined) {
      throw new InvalidArgumentError({
        argument: 'name',
        value: name,
        message: `${this.directory} holds no tensor of that name (it holds ${describeNames(this.names)})`,
      })
    }
    return file
  }

  info(name: string): SafetensorsTensorInfo {
    return this.shards.get(this.fileOf(name))!.info(name)
  }

  async read(name: string): Promise<SafetensorsTensor> {
    const shard = this.shards.get(this.fileOf(name))!
    if (this.closed) throw new LudicError(`Cannot read tensor ${JSON.stringify(name)}: the checkpoint in ${this.directory} was closed`)
    return shard.read(name)
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    const results = await Promise.allSettled([...this.shards.values()].map((shard) => shard.close()))
    const failure = results.find((result) => result.status === 'rejected')
    if (failure !== undefined) throw failure.reason
  }
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile()
  } catch {
    return false
  }
}
