import type { FileHandle } from 'node:fs/promises'
import { InvalidArgumentError, LudicError, ParseError, parseArgument } from '@ludic/core'
import { openRegularFile } from '@ludic/core/node'
import { z } from 'zod'
import { allocateOrFail, checkReadableDtype } from './parse-safetensors.js'
import { dtypeBytes } from './safetensors-dtype.js'
import { parseSafetensorsHeader, readHeaderByteLength, type SafetensorsHeader } from './safetensors-header.js'
import type { SafetensorsReader, SafetensorsTensor, SafetensorsTensorInfo } from './safetensors-tensor.js'
import { bytesOf, conversionChunkElements, decodeTensorBytes, hostIsLittleEndian, isStoredAsIs, makeTensor, swapByteOrder } from './tensor-bytes.js'

/** One safetensors file opened for lazy reading (see `openSafetensors`). */
export interface SafetensorsFile extends SafetensorsReader {
  readonly path: string
  /** Size of the file in bytes when it was opened. */
  readonly byteLength: number
}

/** Largest single read: keeps every `read` call well under the 2 GiB the platform allows. */
const maxReadBytes = 1 << 28

/**
 * Opens a safetensors file and parses its header; tensor data stays on disk until `read(name)`, which
 * reads just that tensor's byte range. `F32`, `I32` and `I64` bytes go straight into the returned typed
 * array; `F16`/`BF16` bytes are read into the upper half of the float32 array that receives them and widened
 * in place. So the file is never held twice, and a checkpoint larger than memory can be loaded tensor by tensor.
 *
 * A malformed file throws `ParseError` (`source` is the path, `path` names the tensor and field); a missing
 * file throws Node's own error; a FIFO, device or directory an `InvalidArgumentError` (`openRegularFile` of
 * `@ludic/core/node`), without waiting on it. Call `close()` when done.
 */
export async function openSafetensors(path: string): Promise<SafetensorsFile> {
  const filePath = parseArgument(z.string().min(1), path, 'path')
  // A regular file only, opened without blocking: a FIFO or a device named as a checkpoint is refused at once.
  const { handle, size } = await openRegularFile(filePath)
  try {
    const prefix = new Uint8Array(Math.min(8, size))
    await readFully(handle, prefix, 0, filePath, ['header'])
    const headerByteLength = readHeaderByteLength(prefix, size, filePath)
    const headerBytes = new Uint8Array(headerByteLength)
    await readFully(handle, headerBytes, 8, filePath, ['header'])
    const dataStart = 8 + headerByteLength
    const header = parseSafetensorsHeader(headerBytes, { source: filePath, dataByteLength: size - dataStart })
    return new OpenedSafetensorsFile(filePath, handle, header, dataStart, size)
  } catch (error) {
    await handle.close()
    throw error
  }
}

class OpenedSafetensorsFile implements SafetensorsFile {
  readonly metadata: Readonly<Record<string, string>>
  readonly names: readonly string[]
  private closed = false

  constructor(
    readonly path: string,
    private readonly handle: FileHandle,
    private readonly header: SafetensorsHeader,
    private readonly dataStart: number,
    readonly byteLength: number,
  ) {
    this.metadata = Object.freeze({ ...header.metadata })
    this.names = Object.freeze([...header.tensors.keys()])
  }

  has(name: string): boolean {
    return this.header.tensors.has(name)
  }

  info(name: string): SafetensorsTensorInfo {
    const info = this.header.tensors.get(name)
    if (info === undefined) {
      throw new InvalidArgumentError({
        argument: 'name',
        value: name,
        message: `${this.path} holds no tensor of that name (it holds ${describeNames(this.names)})`,
      })
    }
    return { ...info, shape: [...info.shape], dataOffsets: [...info.dataOffsets] }
  }

  async read(name: string): Promise<SafetensorsTensor> {
    const info = this.info(name)
    if (this.closed) throw new LudicError(`Cannot read tensor ${JSON.stringify(name)}: ${this.path} was closed`)
    const dtype = checkReadableDtype(name, info, this.path)
    const data = allocateOrFail(name, info, this.path)
    const position = this.dataStart + info.dataOffsets[0]
    if (isStoredAsIs(dtype)) {
      const target = bytesOf(data)
      await readFully(this.handle, target, position, this.path, ['data', name])
      if (!hostIsLittleEndian) swapByteOrder(target, dtypeBytes(dtype))
    } else if (hostIsLittleEndian) {
      // F16/BF16: the file bytes are read into the upper half of the float32 array's own buffer, then widened in
      // place front to back: one read, no second buffer, no copy.
      const target = bytesOf(data).subarray(data.byteLength - info.byteLength)
      await readFully(this.handle, target, position, this.path, ['data', name])
      decodeTensorBytes(dtype, target, data, 0)
    } else {
      const elementSize = dtypeBytes(dtype)
      const chunk = new Uint8Array(Math.min(info.byteLength, conversionChunkElements * elementSize))
      for (let element = 0; element < info.elementCount; element += conversionChunkElements) {
        const count = Math.min(conversionChunkElements, info.elementCount - element)
        const bytes = chunk.subarray(0, count * elementSize)
        await readFully(this.handle, bytes, position + element * elementSize, this.path, ['data', name])
        decodeTensorBytes(dtype, bytes, data, element)
      }
    }
    return makeTensor(dtype, info.shape, data)
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    await this.handle.close()
  }
}

/** Fills `target` from `position`; a file that ends early (it changed since it was opened) is a `ParseError`. */
async function readFully(handle: FileHandle, target: Uint8Array, position: number, source: string, path: string[]): Promise<void> {
  let done = 0
  while (done < target.length) {
    const { bytesRead } = await handle.read(target, done, Math.min(target.length - done, maxReadBytes), position + done)
    if (bytesRead === 0) {
      throw new ParseError({
        source,
        path,
        message: `the file ended at byte ${position + done}, before the ${
          target.length
        } bytes expected from byte ${position} (was it changed after it was opened?)`,
      })
    }
    done += bytesRead
  }
}

export function describeNames(names: readonly string[]): string {
  if (names.length === 0) return 'no tensors'
  const shown = names
    .slice(0, 5)
    .map((name) => JSON.stringify(name))
    .join(', ')
  return names.length > 5 ? `${names.length} tensors: ${shown}, …` : shown
}
