import { expect, it } from 'vitest'
import { createTranscript } from './transcript.js'

it("renders each player's view of the log in TextArena's [GAME] / [Player k] lines", () => {
  const transcript = createTranscript()
  transcript.game('Welcome, Player 0.', 0)
  transcript.game('Welcome, Player 1.', 1)
  transcript.player(0, '[bet]')
  transcript.game('Your move.', 1)
  transcript.game('Round over.\nNext round.')
  expect(transcript.render(0)).toBe('[GAME] Welcome, Player 0.\n[Player 0] [bet]\n[GAME] Round over.\nNext round.')
  expect(transcript.render(1)).toBe('[GAME] Welcome, Player 1.\n[Player 0] [bet]\n[GAME] Your move.\n[GAME] Round over.\nNext round.')
})
