import { parseArgument } from '@ludic/core'
import { z } from 'zod'
import { metadataSchema, planSafetensorsLayout } from './safetensors-layout.js'
import type { SafetensorsTensorsInput } from './safetensors-tensor.js'
import { conversionChunkElements, encodeTensorBytes } from './tensor-bytes.js'

export const serializeSafetensorsOptionsSchema = z
  .object({
    /**
     * Free-form strings stored as `__metadata__` (transformers expects `{ format: 'pt' }`). Left out, the
     * header has no `__metadata__` at all, as with Python's `save_file(tensors)`.
     */
    metadata: metadataSchema.optional(),
  })
  .strict()
export type SerializeSafetensorsOptions = z.input<typeof serializeSafetensorsOptionsSchema>

/**
 * Writes tensors to safetensors bytes, in memory. The output is byte-identical to Python's
 * `safetensors.numpy.save` for the same tensors and at most one metadata key. Invalid tensors (shape not
 * matching the data, dtype not matching the array) throw `InvalidArgumentError` naming the tensor. For
 * large checkpoints use `writeSafetensorsFile`, which streams to disk.
 */
export function serializeSafetensors(tensors: SafetensorsTensorsInput, options: SerializeSafetensorsOptions = {}): Uint8Array {
  const { metadata } = parseArgument(serializeSafetensorsOptionsSchema, options, 'options')
  const layout = planSafetensorsLayout(tensors, metadata)
  const output = new Uint8Array(layout.byteLength)
  output.set(layout.header)
  for (const entry of layout.entries) {
    let position = layout.header.length + entry.begin
    for (let start = 0; start < entry.data.length; start += conversionChunkElements) {
      const bytes = encodeTensorBytes(entry.dtype, entry.data, start, Math.min(entry.data.length, start + conversionChunkElements))
      output.set(bytes, position)
      position += bytes.length
    }
  }
  return output
}
