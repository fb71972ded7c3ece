import { maskedCrc32c } from '../loggers/crc32c.js'

/** An event as the tests read it back: the fields Ludic writes. */
export interface ReadEvent {
  wallTime: number
  step: number
  fileVersion?: string
  sessionStatus?: number
  scalars: { tag: string; value: number }[]
  texts: { tag: string; value: string; pluginName: string }[]
}

/**
 * Reads a TFRecord file of `tensorboard.Event`s, checking every record's two masked CRC-32Cs: an independent reader of
 * the few fields the TensorBoard logger writes (field numbers from event.proto, summary.proto, tensor.proto), so that
 * tests without Python can look inside the files.
 */
export function readEventFile(bytes: Uint8Array): ReadEvent[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const events: ReadEvent[] = []
  for (let offset = 0; offset < bytes.length; ) {
    const length = Number(view.getBigUint64(offset, true))
    if (view.getUint32(offset + 8, true) !== maskedCrc32c(bytes.subarray(offset, offset + 8))) throw new Error(`bad length CRC at ${offset}`)
    const data = bytes.subarray(offset + 12, offset + 12 + length)
    if (view.getUint32(offset + 12 + length, true) !== maskedCrc32c(data)) throw new Error(`bad data CRC at ${offset}`)
    events.push(readEvent(data))
    offset += 16 + length
  }
  return events
}

type Field = { number: number; varint?: bigint; fixed64?: DataView; fixed32?: DataView; bytes?: Uint8Array }

function fields(bytes: Uint8Array): Field[] {
  const out: Field[] = []
  let offset = 0
  const varint = () => {
    let value = 0n
    for (let shift = 0n; ; shift += 7n) {
      const byte = bytes[offset++]!
      value |= BigInt(byte & 0x7f) << shift
      if ((byte & 0x80) === 0) return value
    }
  }
  while (offset < bytes.length) {
    const key = Number(varint())
    const number = key >>> 3
    const type = key & 7
    if (type === 0) out.push({ number, varint: varint() })
    else if (type === 1) {
      out.push({ number, fixed64: new DataView(bytes.buffer, bytes.byteOffset + offset, 8) })
      offset += 8
    } else if (type === 5) {
      out.push({ number, fixed32: new DataView(bytes.buffer, bytes.byteOffset + offset, 4) })
      offset += 4
    } else if (type === 2) {
      const length = Number(varint())
      out.push({ number, bytes: bytes.subarray(offset, offset + length) })
      offset += length
    } else throw new Error(`wire type ${type}`)
  }
  return out
}

const text = (bytes: Uint8Array | undefined) => new TextDecoder().decode(bytes ?? new Uint8Array())

function readEvent(data: Uint8Array): ReadEvent {
  const event: ReadEvent = { wallTime: 0, step: 0, scalars: [], texts: [] }
  for (const field of fields(data)) {
    if (field.number === 1) event.wallTime = field.fixed64!.getFloat64(0, true)
    else if (field.number === 2) event.step = Number(BigInt.asIntN(64, field.varint!))
    else if (field.number === 3) event.fileVersion = text(field.bytes)
    else if (field.number === 7) event.sessionStatus = Number(fields(field.bytes!).find((inner) => inner.number === 1)?.varint ?? 0n)
    else if (field.number === 5) {
      for (const value of fields(field.bytes!).filter((inner) => inner.number === 1)) {
        const parts = fields(value.bytes!)
        const tag = text(parts.find((part) => part.number === 1)?.bytes)
        const simple = parts.find((part) => part.number === 2)
        const tensor = parts.find((part) => part.number === 8)
        if (simple !== undefined) event.scalars.push({ tag, value: simple.fixed32!.getFloat32(0, true) })
        if (tensor !== undefined) {
          const metadata = parts.find((part) => part.number === 9)
          const plugin = metadata === undefined ? undefined : fields(metadata.bytes!).find((part) => part.number === 1)
          const pluginName = plugin === undefined ? '' : text(fields(plugin.bytes!).find((part) => part.number === 1)?.bytes)
          event.texts.push({ tag, value: text(fields(tensor.bytes!).find((part) => part.number === 8)?.bytes), pluginName })
        }
      }
    }
  }
  return event
}
