import type { Normalizer } from './normalizer.js'

const removed = /[\u0001-\u0008\u000b\u000e-\u001f\u007f\u008f\u009f]/g
const spaces = /[\t\n\f\r\u1680\u200b-\u200f\u2028\u2029\u2581\ufeff\ufffd]/g

/** `Nmt`: SentencePiece's NMT normalization: drops ASCII control characters, turns odd spaces into ' '. */
export function createNmt(): Normalizer {
  return { normalize: (text) => text.replace(removed, '').replace(spaces, ' ') }
}
