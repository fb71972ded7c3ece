import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { parseArgument } from '@ludic/core'
import { writeJsonFileAtomically, writeShardedSafetensors } from '@ludic/tensors'
import { z } from 'zod'
import type { CausalLanguageModel } from '../model/causal-language-model.js'
import { checkpointContents, modelFilesOptionsSchema } from './model-files.js'

export const saveModelOptionsSchema = z
  .object({
    /** `dtype`, as `modelFiles` takes it. */
    ...modelFilesOptionsSchema.shape,
    /** Most tensor bytes per shard before a sharded checkpoint with an index is written. Default: 5 GB, as transformers. */
    maxShardBytes: z.number().int().positive().default(5_000_000_000),
  })
  .strict()
export type SaveModelOptions = z.input<typeof saveModelOptionsSchema>

export { adapterParameter } from './model-files.js'

/**
 * Saves a model as transformers' `save_pretrained` does: `config.json`, `generation_config.json` and
 * `model.safetensors` (or shards and `model.safetensors.index.json` past `maxShardBytes`), with Hugging Face's
 * tensor names, shapes and the chosen dtype. Tied embeddings save no `lm_head.weight`. LoRA parameters are
 * not saved (a merged adapter is part of the weights; see `saveLoraAdapter`); a value or reward head's
 * `score.weight` is. Files are written atomically.
 */
export async function saveModel(model: CausalLanguageModel, directory: string, options: SaveModelOptions = {}): Promise<void> {
  const folder = parseArgument(z.string().min(1), directory, 'directory')
  const { dtype, maxShardBytes } = parseArgument(saveModelOptionsSchema, options, 'options')
  const { config, generationConfig, tensors } = await checkpointContents(model, dtype)
  await mkdir(folder, { recursive: true })
  await writeShardedSafetensors(folder, tensors, { maxShardBytes })
  await writeJsonFileAtomically(join(folder, 'config.json'), config)
  await writeJsonFileAtomically(join(folder, 'generation_config.json'), generationConfig)
}
