import { createRandom } from '@ludic/core'

/**
 * The conformance corpus: strings on which our ids must equal Hugging Face's, for every tokenizer.
 * Hand-written cases by category, systematic variants (contractions in every case, whitespace runs,
 * digit runs, NFC/NFD pairs…), and a few seeded 100 KB documents mixing them.
 */
export interface CorpusEntry {
  category: string
  text: string
}

const prose = [
  'The quick brown fox jumps over the lazy dog.',
  'Hello, world!',
  'It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of foolishness…',
  'Call me Ishmael. Some years ago—never mind how long precisely—having little or no money in my purse, and nothing particular to interest me on shore, I thought I would sail about a little and see the watery part of the world.',
  'Reinforcement learning fine-tunes language models through play: the policy samples, the environment rewards, the optimizer steps.',
  'Mr. and Mrs. Dursley, of number four, Privet Drive, were proud to say that they were perfectly normal, thank you very much.',
  'A sentence with "double quotes", \'single quotes\', «guillemets», „Anführungszeichen“ and ‘curly’ ones.',
  'Prices: $5.99, €12,50, £3, ¥1000, ₹250 and 15% off; 3/4 cup; 1st, 2nd, 3rd and 4th.',
  'E-mail me at someone@example.com or visit https://huggingface.co/docs/tokenizers?query=bpe#merges.',
  'Ellipses... dashes -- and — em dashes – en dashes; semicolons; colons: and (parentheses) [brackets] {braces}.',
  'ALL CAPS SENTENCE WITH SHOUTING AND NUMBERS 123 AND PUNCTUATION!!!',
  'lowercase only sentence without any punctuation at all',
  'MixedCase CamelCase snake_case kebab-case SCREAMING_SNAKE_CASE dot.case',
  'Dr. Smith vs. Mr. Jones, e.g. and i.e. are abbreviations; U.S.A. and U.K. too.',
  'Ünïcödé àccénts çà et là: crème brûlée, naïve café, Zürich, São Paulo, Kraków, Ærøskøbing.',
  'Straße, Maße, Fuß; İstanbul, ıi; ǅungla; ﬁnance ﬂow (ligatures); ΣΊΣΥΦΟΣ and σίσυφος.',
  'Whitespace at the end   ',
  '   Whitespace at the start',
  'one\ntwo\nthree\n',
  '\n\nleading newlines',
  'trailing newlines\n\n\n',
  'a',
  '.',
  ' ',
  '  ',
  '\n',
  '\t',
  'I',
  "'",
  "''",
  'x y',
]

const code = [
  'function add(a, b) {\n  return a + b;\n}\n',
  'def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n',
  '#include <stdio.h>\nint main(void) {\n\tprintf("hello\\n");\n\treturn 0;\n}\n',
  'const x = arr.map((v, i) => v * i).filter(Boolean) ?? [];',
  "SELECT id, name FROM users WHERE age >= 18 AND name LIKE '%son' ORDER BY id DESC;",
  '<div class="container"><p>Hello &amp; welcome</p><br/></div>',
  'for (let i = 0; i < 10; i++) { sum += i ** 2; } // comment',
  'if x != y and not z:\n\tpass\nelif x == 0:\n\traise ValueError("bad")',
  'fn main() -> Result<(), Box<dyn Error>> { println!("{:?}", vec![1, 2, 3]); Ok(()) }',
  '    indented with four spaces\n        and eight\n\t\tand two tabs',
  '$ npm install --save-dev vitest && npx vitest run --project tokenizer',
  'git commit -m "fix: handle CRLF" && git push origin main',
  'x=1;y=2;z=x+y*(x-y)/2%3<<1>>2&4|5^6~7',
  '/* block comment */ /** JSDoc @param {string} s */',
  'regex = /^[a-z0-9_-]{3,16}$/i; s.replace(/\\s+/g, " ")',
  'lambda x: x[::-1] if isinstance(x, str) else list(reversed(x))',
  'a->b->c; ptr->next; a::b::c; x => y; x >= y; x <= y; x === y; x !== y',
  '@decorator\nclass Foo(Bar, metaclass=ABCMeta):\n    """Docstring."""\n    __slots__ = ("a",)',
  'matrix[i][j] += other[j][k] * weights[k]',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell script's text, not a template
  '#!/usr/bin/env bash\nset -euo pipefail\necho "${HOME}/path with spaces"',
]

const json = [
  '{"name": "Ludic", "version": "0.0.0", "private": true, "workspaces": ["packages/*"]}',
  '[1, 2.5, -3e10, null, true, false, "string", {"nested": {"deep": [[], {}]}}]',
  '{"messages":[{"role":"user","content":"Hi!"},{"role":"assistant","content":"Hello."}]}',
  '{\n  "indented": {\n    "key": "value",\n    "list": [\n      1,\n      2\n    ]\n  }\n}',
  '{"escaped": "line\\nbreak \\"quoted\\" \\\\ backslash \\u00e9 \\ud83d\\ude00"}',
  '{"unicode": "日本語", "emoji": "🎉", "arabic": "مرحبا"}',
  '{"a":1,"b":[true,false,null],"c":{"d":"e"}}',
]

const digits = [
  '0',
  '7',
  '42',
  '123',
  '1234',
  '12345',
  '123456',
  '1234567',
  '3.14159265358979323846264338327950288419716939937510',
  '2024-01-15T13:45:30.123Z',
  '+1 (555) 123-4567',
  '1,000,000 and 1.000.000 and 1 000 000',
  '0x1F 0b1010 0o777 1e-9 6.022e23',
  'Version 1.2.3-beta.4+build.567',
  '١٢٣٤٥ ٦٧٨٩٠ (Arabic-Indic digits) ۱۲۳ (Persian) १२३४ (Devanagari) ๑๒๓ (Thai)',
  '²³¹ ½ ¾ ⅓ Ⅻ ⅷ ① ⑩ (numeric symbols)',
  'abc123def456ghi7890',
]

const scripts = [
  '日本語のテキストです。カタカナとひらがなと漢字。',
  '中文文本：我爱自然语言处理。今天天气很好！',
  '한국어 텍스트입니다. 안녕하세요, 세계!',
  'Русский текст: Съешь же ещё этих мягких французских булок, да выпей чаю.',
  'Українська мова: Їжак і ґава. Беларуская: Ў ў.',
  'العربية: مرحبا بالعالم! هذه جملة للاختبار، مع علامات الترقيم؟',
  'עברית: שלום עולם! זהו משפט לבדיקה.',
  'हिन्दी: नमस्ते दुनिया! यह एक परीक्षण वाक्य है।',
  'বাংলা: হ্যালো বিশ্ব! தமிழ்: வணக்கம் உலகம்! తెలుగు: హలో ప్రపంచం!',
  'ภาษาไทย: สวัสดีชาวโลก ไม่มีการเว้นวรรคระหว่างคำ',
  'Ελληνικά: Γειά σου Κόσμε! Ξεσκεπάζω την ψυχοφθόρα βδελυγμία.',
  'ქართული: გამარჯობა მსოფლიო! Հայերեն: Բարեւ աշխարհ!',
  'Tiếng Việt: Xin chào thế giới! Đây là một câu thử nghiệm.',
  'አማርኛ: ሰላም ልዑል! ᐃᓄᒃᑎᑐᑦ: ᐊᐃᖓᐃ! ᚠᚢᚦᚨᚱᚲ (runes)',
  'Mixed: English, 中文, العربية, हिन्दी, русский in one line.',
  '𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕄𝕒𝕥𝕙 𝒮𝒸𝓇𝒾𝓅𝓉 (astral letters) 𠀀𠀁𠀂 (CJK extension B)',
]

const emoji = [
  '😀😃😄😁😆😅😂🤣',
  '👍 👍🏻 👍🏼 👍🏽 👍🏾 👍🏿',
  '👩‍👩‍👧‍👦 👨‍👩‍👧 family',
  '👩🏽‍🚀 astronaut, 🧑🏿‍🔬 scientist, 👨🏻‍💻 coder',
  '🏳️‍🌈 🏴‍☠️ 🇺🇸 🇯🇵 🇫🇷 flags',
  '❤️ ♥ ✔️ ☑️ ⚠️ (variation selectors)',
  '1️⃣ 2️⃣ #️⃣ *️⃣ keycaps',
  'text😀text😀😀 text 😀 text',
  '🙋‍♀️🙋‍♂️🤷🏾‍♀️',
]

const combining = [
  'e\u0301 a\u0300 o\u0302 n\u0303 u\u0308 (decomposed)',
  'é à ô ñ ü (precomposed)',
  'Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349\u035a\u032f\u031e\u0320\u034da\u036b\u0357\u0364\u0365\u0344\u0346\u0311\u0342 zalgo',
  'q\u0307\u0323 x\u0304\u0306 multiple marks',
  '\u0301 leading combining mark',
  'ﾊﾝｶｸ ｶﾀｶﾅ (halfwidth) ＡＢＣ１２３ (fullwidth)',
  'ﬁ ﬂ ﬀ ﬃ ﬄ ℌ ℍ ℎ ™ ℡ ㎏ ㍿',
  '한 (precomposed Hangul) vs \u1112\u1161\u11ab (jamo)',
]

const whitespace = [
  'tab\tseparated\tvalues',
  'line one\r\nline two\r\nline three\r\n',
  'mixed\r\n\n\r endings\r',
  'many     spaces     between',
  'space \t tab \t space',
  'non\u00a0breaking\u00a0spaces',
  'thin\u2009space\u200afigure\u2007space',
  'zero\u200bwidth\u200cnon\u200djoiner',
  'next\u0085line and\u2028line\u2029paragraph separators',
  'byte\ufefforder\ufeffmark',
  'ideographic\u3000space',
  'ogham\u1680space mongolian\u180evowel',
  'vertical\u000btab and form\u000cfeed',
  'control\u0001chars\u001f\u007f\u0080\u009f',
  '\u00a0\u00a0\u00a0',
  '\t\t\t\n\n\n   \r\n',
  ' \n \n \n',
  'end with tab\t',
  'unit\u001fseparator\u001egroup\u001dfile\u001c',
]

const specialTokenStrings = [
  '<|endoftext|>',
  'before<|endoftext|>after',
  ' <|endoftext|> ',
  '<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n',
  '<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>',
  '<s>[INST] Hello [/INST] Hi</s>',
  '<s> <s><s>x</s></s>',
  '<unk> <pad> [CLS] [SEP] [MASK]',
  '<|endofprompt|> and <|fim_prefix|>code<|fim_suffix|>more<|fim_middle|>',
  '<think>\nreasoning here\n</think>\n\nanswer',
  '<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>',
  '<|reserved_special_token_5|><|reserved_special_token_250|>',
  '<|endoftext',
  '|endoftext|>',
  '<|im_start|><|im_start|><|im_end|>',
  '<<|endoftext|>>',
  '<|endoftext|><|endoftext|><|endoftext|>',
  'x<|im_end|>y',
  'text <|python_tag|> text <|eom_id|>',
]

const longWords = [
  'Pneumonoultramicroscopicsilicovolcanoconiosis',
  'Donaudampfschifffahrtselektrizitätenhauptbetriebswerkbauunterbeamtengesellschaft',
  'supercalifragilisticexpialidocious'.repeat(8),
  'a'.repeat(300),
  'ab'.repeat(200),
  'x'.repeat(1000),
  ' '.repeat(300),
  '\n'.repeat(100),
  '-'.repeat(120),
  `${'='.repeat(80)}\n${'#'.repeat(80)}`,
  '漢'.repeat(200),
  '😀'.repeat(100),
  '1'.repeat(257),
  `https://example.com/${'very-long-path-segment/'.repeat(20)}`,
]

const contractions = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d"]

/** Every contraction in lower, upper and mixed case, after words and alone; plus near misses. */
function contractionCases(): string[] {
  const cases: string[] = []
  for (const contraction of contractions) {
    const variants = new Set([contraction, contraction.toUpperCase(), contraction[0] + contraction[1]!.toUpperCase() + contraction.slice(2)])
    if (contraction.length === 3) variants.add(contraction.slice(0, 2) + contraction[2]!.toUpperCase())
    for (const variant of variants) {
      cases.push(`word${variant} WORD${variant} ${variant} x${variant}y`)
    }
  }
  cases.push(
    "I'm sure you're right, they've said we'll see, she'd know, it's John's, don't",
    "I'M SURE YOU'RE RIGHT, THEY'VE SAID WE'LL SEE, SHE'D KNOW, IT'S JOHN'S, DON'T",
  )
  cases.push("It'S tHe DoG'S, yOu'Re, We'Ll, tHeY'vE", "'sss 'tt 're're 'lld", 'it’s curly ’s ’t', "naïve's café'd", "ſ's K'S 'ſ 'K (long s, Kelvin)")
  return cases
}

/** Runs of white space of each kind and length, between words and at the ends. */
function whitespaceRuns(): string[] {
  const cases: string[] = []
  for (const space of [' ', '\t', '\n', '\r\n', '\u00a0', '\u3000', ' \n', '\n ']) {
    for (const count of [1, 2, 3, 5]) {
      const run = space.repeat(count)
      cases.push(`a${run}b`, `${run}a`, `a${run}`, `a${run}!`)
    }
  }
  return cases
}

/** Digit runs of every length up to 40, alone, after letters and spaced. */
function digitRuns(): string[] {
  const cases: string[] = []
  for (let length = 1; length <= 40; length += length < 12 ? 1 : 7) {
    const run = Array.from({ length }, (_, index) => String((index * 7 + 3) % 10)).join('')
    cases.push(run, `x${run}`, ` ${run} `)
  }
  return cases
}

/** The same words in NFC and in NFD. */
function normalizationPairs(): string[] {
  const words = ['café', 'naïve', 'Ångström', 'résumé', 'Pokémon', 'Việt Nam', 'Åland', 'ḱṷṓn', 'ǅ', 'Å (angstrom sign)', '가나다']
  return words.flatMap((word) => [word.normalize('NFC'), word.normalize('NFD')])
}

/** Seeded random strings over an alphabet of the characters where engines tend to differ, with special-token strings mixed in. */
function randomStrings(count: number): string[] {
  const alphabet = Array.from(
    'aAbBzZ  \t\n\r\u0085\u00a0\u2028\u3000\ufeff\u200b\u200d\'’sStTdDmMlLrReEvV0123456789١²Ⅻ.,!?-_/\\"<>|()[]{}#@$%^&*+=~`éeÉ\u0301\u0300ßſKıİ漢字かなカナ한글ĀāЖжשׁعربيहिंदी😀👍🏽👩‍🚀🇺🇸\u{1F3FB}\u{E0067}\u{10FFFF}\u{FFFD}',
  )
  const specials = ['<|endoftext|>', '<|im_start|>', '<s>', '</s>', '<|begin_of_text|>', '<think>', '<unk>', '<|eot_id|>']
  const random = createRandom(7)
  return Array.from({ length: count }, () => {
    let text = ''
    const length = random.nextInt(40)
    for (let index = 0; index < length; index++) text += random.nextFloat() < 0.03 ? random.choice(specials) : random.choice(alphabet)
    return text
  })
}

/** A deterministic ~`size`-character document mixing the hand-written cases. */
function seededDocument(seed: number, size: number, pools: readonly (readonly string[])[]): string {
  const random = createRandom(seed)
  const parts: string[] = []
  let length = 0
  while (length < size) {
    const pool = random.choice(pools)
    const part = random.choice(pool)
    const separator = random.choice([' ', '\n', '\n\n', '  ', '\t', '', '\r\n'])
    parts.push(part, separator)
    length += part.length + separator.length
  }
  return parts.join('')
}

export function conformanceCorpus(): CorpusEntry[] {
  const entries: CorpusEntry[] = []
  const add = (category: string, texts: readonly string[]): void => {
    for (const text of texts) entries.push({ category, text })
  }
  add('prose', prose)
  add('code', code)
  add('json', json)
  add('digits', digits)
  add('scripts', scripts)
  add('emoji', emoji)
  add('combining', combining)
  add('whitespace', whitespace)
  add('special-token strings', specialTokenStrings)
  add('long words', longWords)
  add('contractions', contractionCases())
  add('whitespace runs', whitespaceRuns())
  add('digit runs', digitRuns())
  add('NFC/NFD pairs', normalizationPairs())
  add('random', randomStrings(100))
  add('empty', [''])
  return entries
}

/** Three seeded documents of about 100 KB: prose and code, everything, and scripts with emoji. */
export function largeDocuments(): CorpusEntry[] {
  return [
    { category: 'document: prose and code', text: seededDocument(1, 100_000, [prose, code, json]) },
    {
      category: 'document: everything',
      text: seededDocument(2, 100_000, [prose, code, json, digits, scripts, emoji, combining, whitespace, specialTokenStrings, contractionCases()]),
    },
    { category: 'document: scripts and emoji', text: seededDocument(3, 100_000, [scripts, emoji, combining, normalizationPairs()]) },
  ]
}
