import {
  createRandom,
  deriveSeed,
  parseArgument,
  refuseLengthControls,
  requestMessages,
  type Completion,
  type GenerationRequest,
  type PolicyV1,
} from '@ludic/core'
import { z } from 'zod'
import { openingOfPersonaPrompt } from '../cards/persona-prompt.js'
import { personaSchema, type Persona } from '../cards/persona.js'

export const scriptedUserOptionsSchema = z.strictObject({
  /** Seeds the choice of lines (with each request's own seed). */
  seed: z.number().int(),
  /** After this many lines, the next line is `stopPhrase` (ends a `roleplay-v1` episode). Default: never. */
  endAfter: z.number().int().min(1).optional(),
  /** What it says to end. Default: `'[end]'` (the environment's default stop phrase). */
  stopPhrase: z.string().min(1).max(200).default('[end]'),
})
export type ScriptedUserOptions = z.input<typeof scriptedUserOptionsSchema>

/**
 * A scripted user simulator for `roleplay-v1` (prompted through `roleplayPrompt`): its first line is the
 * opening its system prompt asks for (else an opener of the persona), later lines are follow-ups. Which
 * opener or follow-up is chosen depends only on `seed`, the request's `seed` and how many lines it has
 * said (its `assistant` messages), so equal requests get equal lines. Completions carry no tokens
 * (empty `promptTokenIds`, `tokenIds` and `logprobs`): it is not trained. A request's `minTokens` or `ignoreEos` is
 * refused by name (`refuseLengthControls`): its lines are not drawn token by token.
 */
export function createScriptedUser(persona: Persona, options: ScriptedUserOptions): PolicyV1 {
  const parsed = parseArgument(personaSchema, persona, 'persona')
  const { seed, endAfter, stopPhrase } = parseArgument(scriptedUserOptionsSchema, options, 'options')
  const line = (request: GenerationRequest, index: number): string => {
    refuseLengthControls(request, index, `the scripted user '${parsed.id}'`)
    const messages = requestMessages(request, index, `the scripted user '${parsed.id}'`)
    const said = messages.filter((message) => message.role === 'assistant').length
    if (endAfter !== undefined && said >= endAfter) return stopPhrase
    const random = createRandom(deriveSeed('scripted-user', parsed.id, seed, request.seed ?? 0, said))
    if (said > 0) return random.choice(parsed.followUps)
    const system = messages.find((message) => message.role === 'system')
    return (system === undefined ? undefined : openingOfPersonaPrompt(system.content)) ?? random.choice(parsed.openers)
  }
  return {
    specificationVersion: 'v1',
    id: `scripted-user:${parsed.id}`,
    async generate(requests: readonly GenerationRequest[]): Promise<Completion[]> {
      return requests.map((request, index) => ({
        text: line(request, index),
        promptTokenIds: new Int32Array(0),
        tokenIds: new Int32Array(0),
        logprobs: new Float32Array(0),
        finishReason: 'stop',
      }))
    },
  }
}
