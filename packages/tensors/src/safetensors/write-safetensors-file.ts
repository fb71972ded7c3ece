import { parseArgument } from '@ludic/core'
import { z } from 'zod'
import { planSafetensorsLayout } from './safetensors-layout.js'
import type { SafetensorsTensorsInput } from './safetensors-tensor.js'
import { conversionChunkElements, encodeTensorBytes } from './tensor-bytes.js'
import { writeFileAtomically, writeFully } from './write-file-atomically.js'
import { serializeSafetensorsOptionsSchema, type SerializeSafetensorsOptions } from './serialize-safetensors.js'

export type WriteSafetensorsFileOptions = SerializeSafetensorsOptions

/** Bytes per write call when streaming a tensor stored as-is (16 MiB). */
const writeChunkBytes = 1 << 24

/**
 * Writes tensors to a safetensors file: the same bytes as `serializeSafetensors`, streamed tensor by
 * tensor (`F32`/`I32`/`I64` straight from the typed arrays, `F16`/`BF16` converted in 1 MiB chunks) rather
 * than built as one buffer. Atomic: a temporary file in the same directory is written, fsynced and renamed
 * over `path`, so a crash never leaves a half-written checkpoint. Invalid tensors throw
 * `InvalidArgumentError` before anything is written.
 */
export async function writeSafetensorsFile(path: string, tensors: SafetensorsTensorsInput, options: WriteSafetensorsFileOptions = {}): Promise<void> {
  const filePath = parseArgument(z.string().min(1), path, 'path')
  const { metadata } = parseArgument(serializeSafetensorsOptionsSchema, options, 'options')
  const layout = planSafetensorsLayout(tensors, metadata)
  await writeFileAtomically(filePath, async (handle) => {
    await writeFully(handle, layout.header, 0)
    for (const entry of layout.entries) {
      let position = layout.header.length + entry.begin
      const elementsPerWrite = entry.dtype === 'F16' || entry.dtype === 'BF16' ? conversionChunkElements : writeChunkBytes / entry.data.BYTES_PER_ELEMENT
      for (let start = 0; start < entry.data.length; start += elementsPerWrite) {
        const bytes = encodeTensorBytes(entry.dtype, entry.data, start, Math.min(entry.data.length, start + elementsPerWrite))
        await writeFully(handle, bytes, position)
        position += bytes.length
      }
    }
  })
}
