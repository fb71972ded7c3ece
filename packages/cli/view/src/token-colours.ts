import type { TrajectoryTurn } from './api.js'

/** What a response token's background shows. */
export type ColourMode = 'advantage' | 'logprob' | 'entropy'

export const colourModes: readonly { mode: ColourMode; label: string }[] = [
  { mode: 'advantage', label: 'advantage' },
  { mode: 'logprob', label: 'log-prob' },
  { mode: 'entropy', label: 'entropy' },
]

/** A colour scale over one episode's tokens, with what its legend says at each end. */
export interface TokenScale {
  mode: ColourMode
  /** The token's background (CSS colour); transparent where the token has no value in this mode. */
  colour(value: number | null | undefined): string
  legend: { low: string; high: string; gradient: string }
}

const rgba = ([red, green, blue]: readonly [number, number, number], alpha: number) =>
  `rgba(${red}, ${green}, ${blue}, ${Math.round(Math.min(1, Math.max(0, alpha)) * 1000) / 1000})`
const positive = [33, 102, 172] as const // blue: the update pushed the token up
const negative = [178, 24, 43] as const // red: pushed down
const unlikely = [230, 120, 0] as const // orange: the rollout sampled an unlikely token
const uncertain = [118, 42, 131] as const // purple: a high-entropy position
const transparent = 'transparent'

/** The finite values of one per-token array field over the turns (those without it contribute nothing). */
function valuesOf(turns: readonly TrajectoryTurn[], field: 'advantages' | 'logprobs' | 'entropy'): number[] {
  return turns.flatMap((turn) => (turn[field] ?? []).filter((value): value is number => typeof value === 'number' && Number.isFinite(value)))
}

export const formatNumber = (value: number): string =>
  Number.isInteger(value) && Math.abs(value) < 1e6
    ? String(value)
    : Math.abs(value) >= 1e6 || Math.abs(value) < 0.001
      ? value.toExponential(2)
      : value.toFixed(Math.abs(value) >= 100 ? 1 : 3)

/**
 * The scale of `mode` over an episode: advantages diverge around 0 (blue up, red down, saturated at the episode's
 * largest |advantage|); log-probs shade by 1 − p (an unlikely sample stands out); entropy by its share of the largest.
 */
export function tokenScale(mode: ColourMode, turns: readonly TrajectoryTurn[]): TokenScale {
  if (mode === 'advantage') {
    const largest = valuesOf(turns, 'advantages').reduce((most, value) => Math.max(most, Math.abs(value)), 0)
    const extent = largest > 0 ? largest : 1
    return {
      mode,
      colour: (value) =>
        typeof value !== 'number' || !Number.isFinite(value)
          ? transparent
          : rgba(value >= 0 ? positive : negative, value === 0 ? 0.06 : 0.12 + (0.5 * Math.abs(value)) / extent),
      legend: {
        low: `−${formatNumber(extent)}`,
        high: `+${formatNumber(extent)}`,
        gradient: `linear-gradient(to right, ${rgba(negative, 0.62)}, ${rgba(negative, 0.12)}, rgba(0, 0, 0, 0.06), ${rgba(positive, 0.12)}, ${rgba(positive, 0.62)})`,
      },
    }
  }
  if (mode === 'logprob') {
    return {
      mode,
      colour: (value) => (typeof value !== 'number' || !Number.isFinite(value) ? transparent : rgba(unlikely, 0.05 + 0.6 * (1 - Math.exp(Math.min(0, value))))),
      legend: { low: 'p = 1', high: 'p → 0', gradient: `linear-gradient(to right, ${rgba(unlikely, 0.05)}, ${rgba(unlikely, 0.65)})` },
    }
  }
  const largest = valuesOf(turns, 'entropy').reduce((most, value) => Math.max(most, value), 0)
  const extent = largest > 0 ? largest : 1
  return {
    mode,
    colour: (value) => (typeof value !== 'number' || !Number.isFinite(value) ? transparent : rgba(uncertain, 0.05 + (0.55 * Math.max(0, value)) / extent)),
    legend: { low: '0', high: `${formatNumber(extent)} nats`, gradient: `linear-gradient(to right, ${rgba(uncertain, 0.05)}, ${rgba(uncertain, 0.6)})` },
  }
}

/** A token's hover text: every value the record has for it. */
export function tokenTitle(turn: TrajectoryTurn, index: number): string {
  const parts: string[] = []
  const advantage = turn.advantages?.[index]
  const logprob = turn.logprobs?.[index]
  const entropy = turn.entropy?.[index]
  const id = turn.tokenIds?.[index]
  if (typeof advantage === 'number') parts.push(`advantage ${advantage > 0 ? '+' : ''}${formatNumber(advantage)}`)
  if (typeof logprob === 'number') parts.push(`log-prob ${formatNumber(logprob)} (p ${formatNumber(Math.exp(logprob))})`)
  if (typeof entropy === 'number') parts.push(`entropy ${formatNumber(entropy)}`)
  if (typeof id === 'number') parts.push(`token id ${id}`)
  return parts.join(' · ')
}

/** How a decoded token shows: whitespace made visible (a newline as ↵ then the break, a lone space as ·). */
export function visibleToken(text: string): string {
  if (text === '') return '∅'
  if (text.trim() === '' && !text.includes('\n')) return text.replaceAll(' ', '·').replaceAll('\t', '→')
  return text.replaceAll('\n', '↵\n')
}
