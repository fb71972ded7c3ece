import { readFileSync, existsSync } from 'node:fs'
import { kuhnAveragePolicy, kuhnExploitability } from '@ludic/games'
const keys = ['0', '1', '2', '0pb', '1pb', '2pb', '0p', '0b', '1p', '1b', '2p', '2b']
const pol = (r: any) => Object.fromEntries(keys.map((k) => [k, r[`eval/policy/${k}`]]))
const evals = (dir: string) =>
  readFileSync(`${dir}/metrics.jsonl`, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l))
    .filter((r) => r['eval/exploitability'] !== undefined)
const e = (ps: any[]) => kuhnExploitability(kuhnAveragePolicy(ps)).exploitability.toFixed(3)
for (const base of process.argv.slice(2)) {
  const rounds = [2, 3, 4, 5, 6].filter((k) => existsSync(`${base}/round-${k}/metrics.jsonl`))
  const halves = rounds
    .map((k) =>
      evals(`${base}/round-${k}`)
        .filter((r) => r.step >= 50)
        .map(pol),
    )
    .filter((h) => h.length === 11)
  console.log(base, 'own', halves.map((h) => e(h)).join(' '), '| cumulative', halves.map((_, i) => e(halves.slice(0, i + 1).flat())).join(' '))
}
