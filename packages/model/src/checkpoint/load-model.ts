import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { InvalidArgumentError, parseArgument } from '@ludic/core'
import { hubOptionsSchema, isRepoId, resolveModelSource } from '@ludic/hub'
import { readShardedSafetensors } from '@ludic/tensors'
import { z } from 'zod'
import type { CausalLanguageModel } from '../model/causal-language-model.js'
import { loadModelFromFilesOptionsSchema, modelFromWeights, parseModelConfig } from './model-files.js'

export { checkWeights } from './model-files.js'

export const loadModelOptionsSchema = z
  .object({
    /** `maxContextTokens` and `maxParameterBytes`, as `loadModelFromFiles` takes them. */
    ...loadModelFromFilesOptionsSchema.shape,
    /**
     * How a Hugging Face Hub repository id is fetched (`token`, `cacheDir`, `offline`, `endpoint`, `signal`,
     * `onProgress`…; see `@ludic/hub`'s `downloadRepo`). Default: from `HF_TOKEN`, `HF_HOME`, `HF_HUB_OFFLINE`…
     */
    hub: hubOptionsSchema.optional(),
  })
  .strict()
export type LoadModelOptions = z.input<typeof loadModelOptionsSchema>

/**
 * Loads a Hugging Face checkpoint directory: `config.json` and `model.safetensors`, or a sharded
 * `model.safetensors.index.json` with its shards. A Hugging Face Hub repository id (`Qwen/Qwen3-0.6B`,
 * `owner/name@revision`) is downloaded into the Hugging Face cache first (or found there; see the `hub`
 * option); a local directory of the same name wins. `F32`, `F16` and `BF16` weights become float32 variables.
 * Tensors are read straight into float32 arrays (`BF16`/`F16` widened in place, the next reads already in
 * flight on Node's I/O threads) that go to the backend as they are, so the weights are never held twice.
 * A configuration Ludic does not support is a `ParseError` naming the field; weights that do not fit the
 * configuration are one `CheckpointMismatchError` listing every missing, unexpected and misshaped tensor.
 * With tied embeddings an `lm_head.weight` in the file is ignored, as transformers does. A value or reward
 * head's `score.weight` `[1, hidden]` is loaded too (`createValueHead`/`createRewardHead` then use it).
 * A config whose parameters would exceed `maxParameterBytes` is a `ParseError` naming the size field, raised
 * before the weights are opened.
 */
export async function loadModel(directory: string, options: LoadModelOptions = {}): Promise<CausalLanguageModel> {
  const source = parseArgument(z.string().min(1), directory, 'directory')
  const { maxContextTokens, maxParameterBytes, hub } = parseArgument(loadModelOptionsSchema, options, 'options')
  const folder = isRepoId(source) ? await resolveModelSource(source, { ...hub, files: 'model' }) : source
  const configPath = join(folder, 'config.json')
  const configText = await readFile(configPath, 'utf8').catch((error: unknown) => {
    throw new InvalidArgumentError({ argument: 'directory', value: folder, message: 'holds no readable config.json', cause: error })
  })
  const { config, json } = parseModelConfig(configText, configPath, maxParameterBytes)
  const file = await readShardedSafetensors(folder)
  try {
    return await modelFromWeights(config, json, file, folder, maxContextTokens)
  } finally {
    await file.close()
  }
}
