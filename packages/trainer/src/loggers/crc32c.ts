/*
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of TensorFlow's record files, and its "masked"
 * form (TensorFlow's `crc32c::Mask`: rotated right by 15 bits plus 0xa282ead8), which a record stores so that a CRC
 * of data that holds CRCs is not itself easy to collide with.
 */

const table = (() => {
  const entries = new Uint32Array(256)
  for (let byte = 0; byte < 256; byte++) {
    let value = byte
    for (let bit = 0; bit < 8; bit++) value = value & 1 ? (value >>> 1) ^ 0x82f63b78 : value >>> 1
    entries[byte] = value >>> 0
  }
  return entries
})()

export function crc32c(bytes: Uint8Array): number {
  let crc = 0xffffffff
  for (const byte of bytes) crc = table[(crc ^ byte) & 0xff]! ^ (crc >>> 8)
  return (crc ^ 0xffffffff) >>> 0
}

/** TensorFlow's masked CRC-32C of `bytes`. */
export function maskedCrc32c(bytes: Uint8Array): number {
  const crc = crc32c(bytes)
  return (((crc >>> 15) | (crc << 17)) + 0xa282ead8) >>> 0
}
