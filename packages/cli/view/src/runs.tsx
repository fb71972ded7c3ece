import type { RunSummary } from './api.js'
import { flattenConfig } from './format.js'

function formatTime(value: RunSummary['updatedAt']): string {
  if (value === undefined || value === null) return ''
  const date = new Date(value)
  return Number.isNaN(date.getTime()) ? String(value) : date.toLocaleString()
}

/** The runs the server was given: tick to compare (charts, config), click a name to focus it (episodes, tables). */
export function RunList(props: {
  runs: readonly RunSummary[]
  compared: readonly string[]
  focus: string | undefined
  onCompare: (id: string, on: boolean) => void
  onFocus: (id: string) => void
}) {
  return (
    <aside class="runs">
      <h2>Runs</h2>
      <ul data-testid="run-list">
        {props.runs.map((run) => (
          <li key={run.id} data-testid="run-item" data-run={run.id} class={run.id === props.focus ? 'run focus' : 'run'}>
            <label class="compare" title="compare in the charts and the config table">
              <input type="checkbox" checked={props.compared.includes(run.id)} onChange={(event) => props.onCompare(run.id, event.currentTarget.checked)} />
            </label>
            <button type="button" class="run-name" onClick={() => props.onFocus(run.id)} title={run.path}>
              {run.name}
            </button>
            <span class={`status ${run.status}`}>{run.status}</span>
            <span class="run-meta">
              {run.step === null ? 'no step yet' : `step ${run.step}`}
              {run.kind === undefined ? '' : ` · ${run.kind}`}
            </span>
            <span class="run-time">{formatTime(run.updatedAt)}</span>
          </li>
        ))}
      </ul>
    </aside>
  )
}

/** The compared runs' configs side by side, one row per field; rows whose values differ are marked. */
export function ConfigTable(props: { runs: readonly RunSummary[] }) {
  const withConfig = props.runs.filter((run) => run.config !== undefined && run.config !== null)
  if (withConfig.length === 0) return <p class="empty">No saved config for the compared runs.</p>
  const flat = withConfig.map((run) => flattenConfig(run.config))
  const keys = [...new Set(flat.flatMap((map) => [...map.keys()]))].sort()
  return (
    <section class="config" data-testid="config-table">
      <h2>Config</h2>
      <table>
        <thead>
          <tr>
            <th>field</th>
            {withConfig.map((run) => (
              <th key={run.id}>{run.name}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {keys.map((key) => {
            const values = flat.map((map) => map.get(key))
            const differs = values.some((value) => value !== values[0])
            return (
              <tr key={key} class={differs && withConfig.length > 1 ? 'differs' : undefined}>
                <td class="field">{key}</td>
                {values.map((value, index) => (
                  <td key={withConfig[index]!.id}>{value ?? '—'}</td>
                ))}
              </tr>
            )
          })}
        </tbody>
      </table>
    </section>
  )
}
