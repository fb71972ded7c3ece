import { policySchema, tokenizerSchema, type ChatMessage, type PolicyV1, type TokenizerV1 } from '@ludic/core'
import { CausalLanguageModel, createLocalPolicy, loadModel } from '@ludic/model'
import { initTensors, type InitTensorsOptions } from '@ludic/tensors'
import { loadTokenizer } from '@ludic/tokenizer'
import { z } from 'zod'

/** A chat template: a Jinja template string or a function of the messages. */
const chatTemplateSchema = z.union([
  z.string().min(1),
  z.custom<(messages: readonly ChatMessage[]) => string>((value) => typeof value === 'function', 'must be a function'),
])

/**
 * What is evaluated, one of: `checkpoint` (a model directory: `config.json`, `model.safetensors`, `tokenizer.json`,
 * as `saveModel` or the Hugging Face Hub write them), `model` with `tokenizer`, or any `policy` (`PolicyV1`: a
 * remote model, a scripted player…).
 */
export const policySourceShape = {
  checkpoint: z.string().min(1).optional(),
  model: z.instanceof(CausalLanguageModel, { message: 'must be a CausalLanguageModel' }).optional(),
  tokenizer: tokenizerSchema.optional(),
  policy: policySchema.optional(),
  /**
   * How a local model's messages become its prompt. Default: the tokenizer's chat template when it has one, else
   * the last message followed by `\n>` (the prompt Ludic's game models are trained with).
   */
  chatTemplate: chatTemplateSchema.optional(),
  /** Requests a local model generates together. Default 64. */
  maxBatch: z.number().int().positive().max(4096).default(64),
  /** The TensorFlow.js backend a checkpoint is loaded on (`wasm`, `tensorflow`, `cpu`…). Default: the best installed (`LUDIC_BACKEND` overrides). */
  backend: z.string().optional(),
}

/** Checks that exactly one of `checkpoint`, `model` + `tokenizer`, `policy` is given (a zod refinement). */
export function checkPolicySource(value: { checkpoint?: unknown; model?: unknown; tokenizer?: unknown; policy?: unknown }, context: z.RefinementCtx): void {
  const given = [value.checkpoint !== undefined, value.model !== undefined || value.tokenizer !== undefined, value.policy !== undefined].filter(Boolean).length
  if (given > 1) context.addIssue({ code: 'custom', message: 'give one of checkpoint, model with tokenizer, or policy', path: ['checkpoint'] })
  if ((value.model === undefined) !== (value.tokenizer === undefined)) {
    context.addIssue({ code: 'custom', message: 'model and tokenizer go together', path: [value.model === undefined ? 'model' : 'tokenizer'] })
  }
}

/** The plain chat template of Ludic's game models: the last message, then `\n>` where the move goes. */
export const plainGameChatTemplate = (messages: readonly ChatMessage[]): string => `${messages.at(-1)?.content ?? ''}\n>`

export interface ResolvedPolicy {
  policy: PolicyV1
  /** The local model, when there is one (Kuhn exploitability scores its actions). */
  model?: CausalLanguageModel
  tokenizer?: TokenizerV1
  chatTemplate?: (messages: readonly ChatMessage[]) => string
  /** What it is, for the report (`checkpoint <path>`, the policy's id…). */
  label: string
  /** The backend a local model runs on. */
  backend?: string
  /** Frees what this call loaded (a checkpoint's model); a model passed in stays the caller's. */
  dispose(): void
}

/** Resolves the policy source; `undefined` when none was given. */
export async function resolvePolicy(
  source: {
    checkpoint?: string | undefined
    model?: CausalLanguageModel | undefined
    tokenizer?: TokenizerV1 | undefined
    policy?: PolicyV1 | undefined
    chatTemplate?: string | ((messages: readonly ChatMessage[]) => string) | undefined
    maxBatch: number
    backend?: string | undefined
  },
  seed: number,
): Promise<ResolvedPolicy | undefined> {
  if (source.policy !== undefined) return { policy: source.policy, label: source.policy.id, dispose: () => {} }
  let model = source.model
  let tokenizer = source.tokenizer
  let loaded = false
  let backend: string | undefined
  if (source.checkpoint !== undefined) {
    backend = (await initTensors({ ...(source.backend === undefined ? {} : { backend: source.backend as InitTensorsOptions['backend'] }), verbose: false }))
      .backend
    tokenizer = await loadTokenizer(source.checkpoint)
    model = await loadModel(source.checkpoint)
    loaded = true
  }
  if (model === undefined || tokenizer === undefined) return undefined
  const template = chatTemplateOf(source.chatTemplate, tokenizer)
  const policy = createLocalPolicy({ model, tokenizer, chatTemplate: template.render, maxBatch: source.maxBatch, seed, id: 'evaluated' })
  const owned = model
  return {
    policy,
    model,
    tokenizer,
    ...(typeof template.render === 'function' ? { chatTemplate: template.render } : {}),
    label: source.checkpoint === undefined ? `model (${model.numParameters.toLocaleString('en-US')} parameters)` : `checkpoint ${source.checkpoint}`,
    ...(backend === undefined ? {} : { backend }),
    dispose: () => {
      if (loaded && !owned.isDisposed) owned.dispose()
    },
  }
}

function chatTemplateOf(
  given: string | ((messages: readonly ChatMessage[]) => string) | undefined,
  tokenizer: TokenizerV1,
): { render: string | ((messages: readonly ChatMessage[]) => string) } {
  if (given !== undefined) return { render: given }
  const own = (tokenizer as { chatTemplate?: string }).chatTemplate
  if (typeof own === 'string' && own.length > 0 && tokenizer.applyChatTemplate !== undefined) {
    const apply = tokenizer.applyChatTemplate.bind(tokenizer)
    return { render: (messages) => apply(messages, { addGenerationPrompt: true }) }
  }
  return { render: plainGameChatTemplate }
}
