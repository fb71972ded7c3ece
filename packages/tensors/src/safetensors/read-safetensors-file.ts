import { openSafetensors } from './open-safetensors.js'
import type { SafetensorsContents, SafetensorsTensor } from './safetensors-tensor.js'

/**
 * Reads every tensor of a safetensors file (in file order) through `openSafetensors`, so each tensor's
 * bytes go straight from disk into its typed array. Same result shape as `parseSafetensors`.
 */
export async function readSafetensorsFile(path: string): Promise<SafetensorsContents> {
  const file = await openSafetensors(path)
  try {
    const tensors = new Map<string, SafetensorsTensor>()
    for (const name of file.names) tensors.set(name, await file.read(name))
    return { metadata: { ...file.metadata }, tensors }
  } finally {
    await file.close()
  }
}
