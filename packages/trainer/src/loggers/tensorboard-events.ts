import { maskedCrc32c } from './crc32c.js'

/*
 * TensorBoard's event files, written by Ludic: a TFRecord stream (each record: its length as a little-endian uint64,
 * the masked CRC-32C of those 8 bytes, the data, the masked CRC-32C of the data) of `tensorboard.Event` protocol
 * buffers (`tensorboard/compat/proto/event.proto`, `summary.proto`, `tensor.proto`). Only the few fields Ludic writes
 * are encoded here: no general protobuf library is needed for them (protobufjs would bring a runtime and the .proto
 * files for five messages), and no npm package writes event files.
 */

/** An `Event` as Ludic writes it: one of a file version, a session log (a restart) or a summary, at a step and a time. */
export type TensorBoardEvent = { wallTime: number; step: number } & (
  | { fileVersion: string }
  | { sessionStart: true }
  | { scalars: readonly { tag: string; value: number }[] }
  | { text: { tag: string; value: string } }
)

/** Protocol buffer wire types. */
const varintType = 0
const fixed64Type = 1
const lengthType = 2
const fixed32Type = 5

/** Appends protocol buffer fields to a growing byte list (proto3: default values are left out by the callers). */
class ProtoWriter {
  private readonly chunks: Uint8Array[] = []
  private length = 0

  private push(bytes: Uint8Array): void {
    this.chunks.push(bytes)
    this.length += bytes.length
  }

  private key(field: number, wireType: number): void {
    this.varint(BigInt((field << 3) | wireType))
  }

  private varint(value: bigint): void {
    const bytes: number[] = []
    let rest = BigInt.asUintN(64, value) // a negative int64 is its two's complement, ten bytes
    do {
      const low = Number(rest & 0x7fn)
      rest >>= 7n
      bytes.push(rest === 0n ? low : low | 0x80)
    } while (rest !== 0n)
    this.push(Uint8Array.from(bytes))
  }

  int64(field: number, value: number): this {
    this.key(field, varintType)
    this.varint(BigInt(value))
    return this
  }

  double(field: number, value: number): this {
    this.key(field, fixed64Type)
    const bytes = new Uint8Array(8)
    new DataView(bytes.buffer).setFloat64(0, value, true)
    this.push(bytes)
    return this
  }

  float(field: number, value: number): this {
    this.key(field, fixed32Type)
    const bytes = new Uint8Array(4)
    new DataView(bytes.buffer).setFloat32(0, value, true)
    this.push(bytes)
    return this
  }

  bytes(field: number, value: Uint8Array): this {
    this.key(field, lengthType)
    this.varint(BigInt(value.length))
    this.push(value)
    return this
  }

  string(field: number, value: string): this {
    return this.bytes(field, new TextEncoder().encode(value))
  }

  message(field: number, build: (writer: ProtoWriter) => void): this {
    const inner = new ProtoWriter()
    build(inner)
    return this.bytes(field, inner.finish())
  }

  finish(): Uint8Array {
    const out = new Uint8Array(this.length)
    let offset = 0
    for (const chunk of this.chunks) {
      out.set(chunk, offset)
      offset += chunk.length
    }
    return out
  }
}

/** DT_STRING of TensorFlow's `DataType`. */
const stringDataType = 7

/** The serialized `tensorboard.Event`. Field numbers are those of event.proto (Event, SessionLog, SourceMetadata) and summary.proto. */
export function encodeEvent(event: TensorBoardEvent): Uint8Array {
  const writer = new ProtoWriter()
  if (event.wallTime !== 0) writer.double(1, event.wallTime) // wall_time
  if (event.step !== 0) writer.int64(2, event.step) // step
  if ('fileVersion' in event) {
    writer.string(3, event.fileVersion) // file_version
    writer.message(10, (source) => source.string(1, 'ludic')) // source_metadata.writer
  } else if ('sessionStart' in event) {
    writer.message(7, (session) => session.int64(1, 1)) // session_log.status = START
  } else if ('scalars' in event) {
    writer.message(5, (summary) => {
      for (const { tag, value } of event.scalars) summary.message(1, (item) => item.string(1, tag).float(2, value)) // value { tag, simple_value }
    })
  } else {
    const { tag, value } = event.text
    writer.message(5, (summary) =>
      summary.message(1, (item) =>
        item
          .string(1, tag)
          // tensor { dtype: DT_STRING, tensor_shape {} (a scalar), string_val }
          .message(8, (tensor) =>
            tensor
              .int64(1, stringDataType)
              .message(2, () => {})
              .string(8, value),
          )
          // metadata { plugin_data { plugin_name: "text" } }: the text plugin's (its content, TextPluginData version 0, is empty)
          .message(9, (metadata) => metadata.message(1, (plugin) => plugin.string(1, 'text'))),
      ),
    )
  }
  return writer.finish()
}

/** One TFRecord: length (uint64 LE), its masked CRC-32C, the data, the data's masked CRC-32C. */
export function encodeRecord(data: Uint8Array): Uint8Array {
  const record = new Uint8Array(8 + 4 + data.length + 4)
  const view = new DataView(record.buffer)
  view.setBigUint64(0, BigInt(data.length), true)
  view.setUint32(8, maskedCrc32c(record.subarray(0, 8)), true)
  record.set(data, 12)
  view.setUint32(12 + data.length, maskedCrc32c(data), true)
  return record
}

/** The records of `events`, concatenated: what is appended to an event file. */
export function encodeEvents(events: readonly TensorBoardEvent[]): Uint8Array {
  const records = events.map((event) => encodeRecord(encodeEvent(event)))
  const out = new Uint8Array(records.reduce((total, record) => total + record.length, 0))
  let offset = 0
  for (const record of records) {
    out.set(record, offset)
    offset += record.length
  }
  return out
}
