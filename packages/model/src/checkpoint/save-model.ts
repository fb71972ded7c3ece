import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { parseArgument } from '@ludic/core'
import { writeJsonFileAtomically, writeShardedSafetensors, type SafetensorsTensorInput } from '@ludic/tensors'
import { z } from 'zod'
import { toHuggingFaceConfig } from '../config/hugging-face-config.js'
import type { CausalLanguageModel } from '../model/causal-language-model.js'

export const saveModelOptionsSchema = z
  .object({
    /** dtype of the saved weights (`config.json`'s `dtype` says the same). Default: `'float32'`. */
    dtype: z.enum(['float32', 'float16', 'bfloat16']).default('float32'),
    /** Most tensor bytes per shard before a sharded checkpoint with an index is written. Default: 5 GB, as transformers. */
    maxShardBytes: z.number().int().positive().default(5_000_000_000),
  })
  .strict()
export type SaveModelOptions = z.input<typeof saveModelOptionsSchema>

const safetensorsDtype = { float32: 'F32', float16: 'F16', bfloat16: 'BF16' } as const

/** Parameter names that belong to adapters, not to the model (saved with `saveLoraAdapter`). */
export const adapterParameter = /\.lora_[AB]\.weight$/

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
  const tensors = new Map<string, SafetensorsTensorInput>()
  for (const [name, variable] of model.parameters()) {
    if (adapterParameter.test(name)) continue
    tensors.set(name, { dtype: safetensorsDtype[dtype], shape: variable.shape, data: (await variable.data()) as Float32Array })
  }
  await mkdir(folder, { recursive: true })
  await writeShardedSafetensors(folder, tensors, { maxShardBytes })
  const { config } = model
  await writeJsonFileAtomically(
    join(folder, 'config.json'),
    toHuggingFaceConfig(config, { dtype, ...(model.sourceConfig === undefined ? {} : { sourceConfig: model.sourceConfig }) }),
  )
  await writeJsonFileAtomically(join(folder, 'generation_config.json'), {
    _from_model_config: true,
    bos_token_id: config.bosTokenId,
    eos_token_id: config.eosTokenIds.length === 1 ? config.eosTokenIds[0] : config.eosTokenIds.length === 0 ? null : config.eosTokenIds,
    pad_token_id: config.padTokenId,
  })
}
