import type { BenchCell, BenchReport, BenchTable } from './bench-report.js'

/**
 * A report as Markdown: the title, when and how long, the machine and the peers (with their versions, or why
 * they did not run), then each table with its notes. Numbers are right-aligned; a missing figure is `—`.
 */
export function benchReportMarkdown(report: BenchReport): string {
  const { machine } = report
  const lines = [
    `# ${report.title}`,
    '',
    `Suite \`${report.suite}\`, started ${report.startedAt}, ${formatDuration(report.durationSeconds)}.`,
    '',
    `Machine: ${machine.cpuModel}, ${machine.cpus} cores${machine.cpuFlags === undefined ? '' : ` (${machine.cpuFlags})`}, ${machine.memoryGiB} GiB; ` +
      `Node ${machine.node}, ${machine.platform} ${machine.arch}; backend ${machine.backend}; tfjs ${machine.tfjsVersion}` +
      `${machine.loadAverage === undefined ? '' : `; load average ${machine.loadAverage} at the start`}.`,
  ]
  const peers = Object.entries(report.peers)
  if (peers.length > 0) {
    lines.push(
      '',
      `Peers: ${peers
        .map(([name, peer]) =>
          peer.available
            ? `${name}${peer.version === undefined ? '' : ` ${peer.version}`}${peer.reason === undefined ? '' : ` (${peer.reason})`}`
            : `${name}: unavailable (${peer.reason ?? 'no reason given'})`,
        )
        .join('; ')}.`,
    )
  }
  for (const table of report.tables) lines.push('', ...markdownTable(table))
  return `${lines.join('\n')}\n`
}

/** One table: `## title`, the header, an alignment row (numbers right), the rows, then the notes as a list. */
export function markdownTable(table: BenchTable): string[] {
  const numeric = table.columns.map((_, column) => table.rows.some((row) => typeof row[column] === 'number'))
  return [
    `## ${escapeCell(table.title)}`,
    '',
    `| ${table.columns.map(escapeCell).join(' | ')} |`,
    `| ${numeric.map((isNumber) => (isNumber ? '---:' : '---')).join(' | ')} |`,
    ...table.rows.map((row) => `| ${row.map(formatCell).join(' | ')} |`),
    ...(table.notes === undefined || table.notes.length === 0 ? [] : ['', ...table.notes.map((note) => `- ${note}`)]),
  ]
}

/** A cell as text: integers as they are, other numbers to 5 significant digits (1 decimal from 1000 up), null as `—`. */
export function formatCell(cell: BenchCell): string {
  if (cell === null) return '—'
  if (typeof cell === 'string') return escapeCell(cell)
  if (Number.isInteger(cell)) return String(cell)
  if (Math.abs(cell) >= 1000) return cell.toFixed(1)
  return String(Number(cell.toPrecision(5)))
}

function escapeCell(text: string): string {
  return text.replaceAll('|', '\\|').replaceAll(/\r?\n/g, ' ')
}

function formatDuration(seconds: number): string {
  return seconds < 120 ? `${seconds.toFixed(1)} s` : `${(seconds / 60).toFixed(1)} min`
}
