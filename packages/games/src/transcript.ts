import type { PlayerIndex } from './two-player-environment.js'

/**
 * A game's message log in TextArena's style: each player sees, in order, the messages sent to everyone
 * and those sent to them alone, one per line as `[GAME] message` or `[Player k] message`.
 */
export interface Transcript {
  /** A message from the game, to both players or to one. */
  game(message: string, to?: PlayerIndex): void
  /** A player's (canonical) move, seen by both. */
  player(from: PlayerIndex, message: string): void
  /** What `player` has seen, one message per line. */
  render(player: PlayerIndex): string
}

export function createTranscript(): Transcript {
  const entries: { sender: string; text: string; to: PlayerIndex | undefined }[] = []
  return {
    game(message, to) {
      entries.push({ sender: 'GAME', text: message, to })
    },
    player(from, message) {
      entries.push({ sender: `Player ${from}`, text: message, to: undefined })
    },
    render(player) {
      return entries
        .filter((entry) => entry.to === undefined || entry.to === player)
        .map((entry) => `[${entry.sender}] ${entry.text}`)
        .join('\n')
    },
  }
}
