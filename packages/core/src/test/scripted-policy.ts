import { refuseLengthControls, type Completion, type FinishReason, type GenerationRequest } from '../data.js'
import { LudicError } from '../errors.js'
import type { PolicyV1, TokenizerV1 } from '../interfaces.js'
import { createByteTokenizer } from './byte-tokenizer.js'

/** One scripted reply: its text, and optionally the log-probabilities and finish reason to report. */
export interface ScriptedReply {
  text: string
  /** Per-token log-probabilities; default: all `0` (probability 1). */
  logprobs?: readonly number[]
  finishReason?: FinishReason
}

export interface ScriptedPolicyOptions {
  id?: string
  /** Replies in order, or a function of the request and its position in the overall sequence. */
  replies: readonly (string | ScriptedReply)[] | ((request: GenerationRequest, index: number) => string | ScriptedReply)
  /** Tokenizer for prompt and completion ids. Default: the byte tokenizer. */
  tokenizer?: TokenizerV1
}

export interface ScriptedPolicy extends PolicyV1 {
  /** Every request received, in order. */
  readonly requests: readonly GenerationRequest[]
  /** How many `generate` calls were made (each a batch). */
  readonly calls: number
}

/**
 * A policy for tests that replays given replies. Prompt ids are a local model's: a chat's through the tokenizer's
 * `encodeChat` (special-token text of the messages kept plain), else its rendered template or the contents joined by
 * lines; a raw `prompt` encoded as it is (special tokens added). Running out of replies is an error, so a test that
 * asks for more turns than it scripted fails loudly. A request's `minTokens` (above 0) or `ignoreEos` is refused by name
 * (`refuseLengthControls`): replies are fixed texts, not draws.
 */
export function createScriptedPolicy(options: ScriptedPolicyOptions): ScriptedPolicy {
  const tokenizer = options.tokenizer ?? createByteTokenizer()
  const requests: GenerationRequest[] = []
  let calls = 0
  const nextReply = (request: GenerationRequest, index: number): ScriptedReply => {
    const reply = typeof options.replies === 'function' ? options.replies(request, index) : options.replies[index]
    if (reply === undefined) {
      throw new LudicError(`Scripted policy '${options.id ?? 'scripted'}' ran out of replies after ${index} (script has ${index})`)
    }
    return typeof reply === 'string' ? { text: reply } : reply
  }
  return {
    specificationVersion: 'v1',
    id: options.id ?? 'scripted',
    get requests() {
      return requests
    },
    get calls() {
      return calls
    },
    async generate(batch: readonly GenerationRequest[]): Promise<Completion[]> {
      calls++
      return batch.map((request, index) => {
        refuseLengthControls(request, index, `the scripted policy '${options.id ?? 'scripted'}'`)
        const reply = nextReply(request, requests.length)
        requests.push(request)
        const tokenIds = tokenizer.encode(reply.text, { addSpecialTokens: false })
        const logprobs = Float32Array.from(reply.logprobs ?? new Array<number>(tokenIds.length).fill(0))
        if (logprobs.length !== tokenIds.length) {
          throw new LudicError(`Scripted reply ${JSON.stringify(reply.text)} has ${tokenIds.length} tokens but ${logprobs.length} logprobs`)
        }
        return {
          text: reply.text,
          promptTokenIds: promptIds(tokenizer, request),
          tokenIds,
          logprobs,
          finishReason: reply.finishReason ?? 'stop',
        }
      })
    },
  }
}

function promptIds(tokenizer: TokenizerV1, request: GenerationRequest): Int32Array {
  if (request.messages === undefined) return tokenizer.encode(request.prompt ?? '')
  if (tokenizer.encodeChat !== undefined) return tokenizer.encodeChat(request.messages, { addGenerationPrompt: true, splitSpecialTokens: true })
  const prompt = tokenizer.applyChatTemplate?.(request.messages, { addGenerationPrompt: true }) ?? request.messages.map((message) => message.content).join('\n')
  return tokenizer.encode(prompt, { addSpecialTokens: false }) // a chat template carries its own special tokens
}
