import { requestMessages, type GenerationRequest } from '@ludic/core'
import { createScriptedPolicy, type ScriptedPolicy } from '@ludic/core/test'

/** Test support: the labelled candidates a judge prompt shows, read back from its last user message. */
export function shownCandidates(request: GenerationRequest): { label: string; text: string }[] {
  const prompt = requestMessages(request, 0).findLast((message) => message.role === 'user' && message.content.includes('Candidate'))?.content ?? ''
  const pattern = /#{2,3} Candidate ([A-Z])\n([\s\S]*?)(?=\n\n#{2,3} Candidate |\n\nRank all|\n\nWhich candidate)/g
  return [...prompt.matchAll(pattern)].map((match) => ({ label: match[1]!, text: match[2]! }))
}

/** Test support: a judge that reads its prompt and answers with `answer(candidates)`. */
export function promptReadingJudge(id: string, answer: (candidates: { label: string; text: string }[], request: GenerationRequest) => string): ScriptedPolicy {
  return createScriptedPolicy({ id, replies: (request) => answer(shownCandidates(request), request) })
}

/** Test support: whether a judge prompt asks for a pairwise verdict (else a group ranking). */
export function isPairwisePrompt(request: GenerationRequest): boolean {
  return requestMessages(request, 0).some((message) => message.content.includes("'Verdict: A'"))
}

/** Test support: always prefers the candidate shown first (ranks them in the order shown). */
export const firstShownJudge = () =>
  promptReadingJudge('first-shown', (candidates, request) =>
    isPairwisePrompt(request) ? 'Verdict: A' : `Ranking: ${candidates.map((candidate) => candidate.label).join(' > ')}`,
  )

/** Test support: prefers longer candidates, whatever the order. */
export const longestJudge = () =>
  promptReadingJudge('longest', (candidates, request) => {
    const byLength = candidates.toSorted((first, second) => second.text.length - first.text.length)
    return isPairwisePrompt(request)
      ? `Verdict: ${byLength[0]!.label}`
      : `I prefer detail.\nRanking: ${byLength.map((candidate) => candidate.label).join(' > ')}`
  })
