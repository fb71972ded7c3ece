import { useEffect, useState } from 'preact/hooks'
import { fetchFiles, type RunFiles, type RunSummary } from './api.js'
import { formatCell } from './format.js'

/** The run's report (Markdown, shown as text) and its tables (CharacterArena ratings, evaluations with their intervals). */
export function RunTables(props: { run: RunSummary; liveStep: number }) {
  const [files, setFiles] = useState<RunFiles | undefined>(undefined)
  const [error, setError] = useState<string | undefined>(undefined)
  // Reloaded as the run goes on: an evaluation or an arena writes its file during the run.
  useEffect(() => {
    const controller = new AbortController()
    fetchFiles(props.run.id, controller.signal)
      .then((result) => {
        setFiles(result)
        setError(undefined)
      })
      .catch((reason: unknown) => {
        if (!controller.signal.aborted) setError(String((reason as Error).message ?? reason))
      })
    return () => controller.abort()
  }, [props.run.id, props.run.status, props.liveStep])
  if (error !== undefined) return <p class="error">{error}</p>
  if (files === undefined) return <p class="empty">loading…</p>
  return (
    <section class="panel tables" data-testid="tables">
      {files.tables.length === 0 && files.report === undefined ? <p class="empty">No report or evaluation table in this run's directory yet.</p> : null}
      {files.tables.map((table) => (
        <section key={table.name} class="table" data-testid="run-table">
          <h2>{table.name}</h2>
          <table>
            <thead>
              <tr>
                {table.columns.map((column, columnIndex) => (
                  <th key={column} class={Array.isArray(table.rows[0]) && typeof table.rows[0][columnIndex] === 'number' ? 'number' : undefined}>
                    {column}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {table.rows.map((row, rowIndex) => (
                <tr key={rowIndex}>
                  {(Array.isArray(row) ? row : [row]).map((cell, cellIndex) => (
                    <td key={cellIndex} class={typeof cell === 'number' ? 'number' : undefined}>
                      {formatCell(cell)}
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      ))}
      {files.report === undefined ? null : (
        <section class="report">
          <h2>report</h2>
          <pre data-testid="report">{files.report}</pre>
        </section>
      )}
    </section>
  )
}
