import type { PreTokenizer } from './pre-tokenizer.js'

/** Script names, most frequent first; those this JavaScript engine does not know are dropped. */
const scriptNames = (
  'Latin Common Han Hiragana Katakana Cyrillic Arabic Greek Hangul Inherited Devanagari Thai Hebrew Bengali Tamil Telugu Kannada Malayalam Gujarati Gurmukhi ' +
  'Oriya Sinhala Armenian Georgian Ethiopic Khmer Lao Myanmar Tibetan Mongolian Bopomofo Yi Thaana Syriac Nko Tifinagh Cherokee Canadian_Aboriginal Ogham Runic ' +
  'Adlam Ahom Anatolian_Hieroglyphs Avestan Balinese Bamum Bassa_Vah Batak Bhaiksuki Brahmi Braille Buginese Buhid Carian Caucasian_Albanian Chakma Cham ' +
  'Chorasmian Coptic Cuneiform Cypriot Cypro_Minoan Deseret Dives_Akuru Dogra Duployan Egyptian_Hieroglyphs Elbasan Elymaic Glagolitic Gothic Grantha ' +
  'Gunjala_Gondi Hanifi_Rohingya Hanunoo Hatran Imperial_Aramaic Inscriptional_Pahlavi Inscriptional_Parthian Javanese Kaithi Kawi Kayah_Li Kharoshthi ' +
  'Khitan_Small_Script Khojki Khudawadi Lepcha Limbu Linear_A Linear_B Lisu Lycian Lydian Mahajani Makasar Mandaic Manichaean Marchen Masaram_Gondi ' +
  'Medefaidrin Meetei_Mayek Mende_Kikakui Meroitic_Cursive Meroitic_Hieroglyphs Miao Modi Mro Multani Nabataean Nag_Mundari Nandinagari New_Tai_Lue Newa ' +
  'Nushu Nyiakeng_Puachue_Hmong Ol_Chiki Old_Hungarian Old_Italic Old_North_Arabian Old_Permic Old_Persian Old_Sogdian Old_South_Arabian Old_Turkic ' +
  'Old_Uyghur Osage Osmanya Pahawh_Hmong Palmyrene Pau_Cin_Hau Phags_Pa Phoenician Psalter_Pahlavi Rejang Samaritan Saurashtra Sharada Shavian Siddham ' +
  'SignWriting Sogdian Sora_Sompeng Soyombo Sundanese Syloti_Nagri Tagalog Tagbanwa Tai_Le Tai_Tham Tai_Viet Takri Tangsa Tangut Thaana Tirhuta Toto ' +
  'Ugaritic Vai Vithkuqi Wancho Warang_Citi Yezidi Zanabazar_Square'
).split(' ')

let scriptPatterns: { name: string; pattern: RegExp }[] | undefined
const scriptCache = new Map<number, string>()

/** The Unicode Script of a code point ('Unknown' when unassigned), as `\p{Script=…}` sees it. */
export function scriptOf(codePoint: number): string {
  let script = scriptCache.get(codePoint)
  if (script !== undefined) return script
  scriptPatterns ??= scriptNames.flatMap((name) => {
    try {
      return [{ name, pattern: new RegExp(`^\\p{Script=${name}}$`, 'u') }]
    } catch {
      return []
    }
  })
  const character = String.fromCodePoint(codePoint)
  script = scriptPatterns.find(({ pattern }) => pattern.test(character))?.name ?? 'Unknown'
  scriptCache.set(codePoint, script)
  return script
}

/**
 * SentencePiece's script grouping: kana and the prolonged sound mark count as Han; a space and an
 * unassigned code point (not in Rust's script table) belong to any script.
 */
function fixedScript(codePoint: number): string {
  if (codePoint === 0x30fc) return 'Han'
  if (codePoint === 0x20) return 'Any'
  const script = scriptOf(codePoint)
  if (script === 'Unknown') return 'Any'
  return script === 'Hiragana' || script === 'Katakana' ? 'Han' : script
}

/** `UnicodeScripts`: cuts where the script changes (spaces join either side; leading spaces are dropped, as in Rust). */
export function createUnicodeScripts(): PreTokenizer {
  return {
    steps: [
      {
        kind: 'split',
        split(text, atStart, emit) {
          // Rust cuts at each script change; text before the first cut (leading spaces) is dropped, as there.
          let lastScript: string | undefined
          let pieceStart = -1
          for (let index = 0; index < text.length; ) {
            const codePoint = text.codePointAt(index)!
            const script = fixedScript(codePoint)
            if (script !== 'Any' && lastScript !== 'Any' && lastScript !== script) {
              if (pieceStart >= 0) emit(text.slice(pieceStart, index), atStart && pieceStart === 0)
              pieceStart = index
            }
            if (script !== 'Any') lastScript = script
            index += codePoint > 0xffff ? 2 : 1
          }
          if (pieceStart >= 0 && pieceStart < text.length) emit(text.slice(pieceStart), atStart && pieceStart === 0)
        },
      },
    ],
  }
}
