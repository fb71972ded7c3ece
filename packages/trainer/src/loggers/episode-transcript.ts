import type { Trajectory } from '@ludic/core'

/**
 * One episode as text for a logger's text summary (tag `episodes/sample`): its environment, seed and returns, then each
 * turn's role, observation and action (the model's completion when it differs), at most `maxCharacters` (cut with a
 * note), as preformatted Markdown so that TensorBoard shows model text as it is, never as markup.
 */
export function episodeTranscript(trajectory: Trajectory, maxCharacters = 16_384): string {
  const number = (value: number) => (Number.isInteger(value) ? String(value) : value.toPrecision(4))
  const returns = Object.entries(trajectory.returns)
    .map(([role, value]) => `${role} ${number(value)}`)
    .join(', ')
  const lines = [
    `${trajectory.environmentId}, seed ${trajectory.seed}, ${trajectory.turns.length} turns${trajectory.truncated ? ' (truncated)' : ''}; returns: ${returns}`,
  ]
  if (trajectory.error !== undefined) lines.push(`error: ${trajectory.error}`)
  for (const turn of trajectory.turns) {
    lines.push('', `[${turn.index}] ${turn.role}${turn.invalidAction ? ' (invalid action)' : ''}`, 'observation:', turn.observation)
    const completion = turn.completion?.text
    if (completion !== undefined && completion !== turn.action) lines.push('completion:', completion)
    lines.push(`action: ${turn.action}`)
  }
  let text = lines.join('\n')
  if (text.length > maxCharacters) text = `${text.slice(0, maxCharacters)}\n… (cut at ${maxCharacters} characters of ${text.length})`
  return preformatted(text)
}

/** Text TensorBoard shows as it is: its text plugin reads Markdown, where lines indented by four spaces are preformatted. */
export function preformatted(text: string): string {
  return text
    .split('\n')
    .map((line) => `    ${line}`)
    .join('\n')
}
