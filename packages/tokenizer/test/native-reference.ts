import native from 'tokenizers'

/**
 * Hugging Face's Rust tokenizer (the `tokenizers` npm package) as the oracle of component tests:
 * builds a tokenizer around one component and asks it what that component does.
 */
type NativeTokenizer = InstanceType<typeof native.Tokenizer>

const emptyModel = {
  type: 'BPE',
  dropout: null,
  unk_token: null,
  continuing_subword_prefix: null,
  end_of_word_suffix: null,
  fuse_unk: false,
  byte_fallback: false,
  vocab: { a: 0 },
  merges: [],
}

/** A native tokenizer from `tokenizer.json` content (an object or its text). */
export function nativeTokenizer(json: unknown): NativeTokenizer {
  return native.Tokenizer.fromString(typeof json === 'string' ? json : JSON.stringify(json))
}

/** A minimal `tokenizer.json` with the given fields. */
export function tokenizerJson(fields: Record<string, unknown>): Record<string, unknown> {
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [],
    normalizer: null,
    pre_tokenizer: null,
    post_processor: null,
    decoder: null,
    model: emptyModel,
    ...fields,
  }
}

export function nativeNormalize(normalizer: unknown, text: string): string {
  return nativeTokenizer(tokenizerJson({ normalizer })).getNormalizer()!.normalizeString(text)
}

export function nativePreTokenize(preTokenizer: unknown, text: string): string[] {
  return nativeTokenizer(tokenizerJson({ pre_tokenizer: preTokenizer }))
    .getPreTokenizer()!
    .preTokenizeString(text)
    .map(([piece]) => piece)
}

export function nativeDecode(decoder: unknown, tokens: string[]): string {
  return nativeTokenizer(tokenizerJson({ decoder })).getDecoder()!.decode(tokens)
}

export async function nativeEncode(tokenizer: NativeTokenizer, text: string, addSpecialTokens = true): Promise<number[]> {
  return (await tokenizer.encode(text, null, { addSpecialTokens })).getIds()
}
