/**
 * A Kuhn Poker observation cut down to what the decision depends on, for small models trained from scratch:
 * the current round's moves, the legal moves (without the words around them) and the card, last, right
 * before the move. TextArena's rules preamble, the seat and the `[GAME]` lines are dropped (the moves already
 * tell who acts). A tiny transformer warmed up on card-independent (random) play has to learn to attend to the
 * card during self-play; every token of filler dilutes that signal (with the full observation the policy of
 * `examples/selfplay-kuhn-poker` stayed card-blind, exploitability 1/3).
 *
 * `[Player 1] [bet]\n[fold], [call]\ncard Q`
 */
export function kuhnTerseObservation(observation: string): string {
  const round = observation.lastIndexOf('[GAME] Starting round')
  const lines = round < 0 ? observation : observation.slice(round)
  const moves = [...lines.matchAll(/^\[Player \d\] \[\w+\]$/gm)].map((match) => match[0])
  const legal = [...lines.matchAll(/Your available actions are: (.*)$/gm)].at(-1)?.[1]
  const card = /Your card is: ([JQK])/.exec(lines)?.[1]
  return [...moves, ...(legal === undefined ? [] : [legal]), ...(card === undefined ? [] : [`card ${card}`])].join('\n')
}
