import { useEffect, useState } from 'preact/hooks'
import { fetchFiles, type RunFiles, type RunSummary } from './api.js'
import { joinIntervals } from './format.js'

/** The run's report (Markdown, shown as text) and its tables (CharacterArena ratings, evaluations with their intervals joined). */
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
      {files.tables.map((table) => {
        const shown = joinIntervals(table)
        return (
          <section key={`${table.source ?? ''}/${table.name}`} class="table" data-testid="run-table">
            <h2>{table.name}</h2>
            {table.source === undefined ? null : <p class="source">from {table.source}</p>}
            <table>
              <thead>
                <tr>
                  {shown.columns.map((column, index) => (
                    <th key={column} class={shown.numeric[index] ? 'number' : undefined}>
                      {column}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {shown.rows.map((row, rowIndex) => (
                  <tr key={rowIndex}>
                    {row.map((cell, index) => (
                      <td key={shown.columns[index]} class={shown.numeric[index] ? 'number' : undefined}>
                        {cell}
                      </td>
                    ))}
                  </tr>
                ))}
              </tbody>
            </table>
          </section>
        )
      })}
      {files.report === undefined ? null : (
        <section class="report">
          <h2>report</h2>
          <pre data-testid="report">{files.report}</pre>
        </section>
      )}
    </section>
  )
}
