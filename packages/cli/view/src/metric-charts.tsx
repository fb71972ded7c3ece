import { useEffect, useMemo, useRef, useState } from 'preact/hooks'
import { parse, View } from 'vega'
import { expressionInterpreter } from 'vega-interpreter'
import { compile } from 'vega-lite'
import type { RunSummary, StepMetrics } from './api.js'
import type { RunMetrics } from './app.js'
import { defaultMetrics, metricNames, metricPoints, metricSpec } from './charts.js'

/** The metric charts of the compared runs: a picker over the union of their metric names, a smoothing slider, one chart per metric. */
export function MetricCharts(props: { runs: readonly RunSummary[]; metrics: ReadonlyMap<string, RunMetrics> }) {
  const series = useMemo(() => props.runs.map((run) => ({ run: run.name, records: props.metrics.get(run.id)?.records ?? [] })), [props.runs, props.metrics])
  const names = useMemo(() => metricNames(series.map((entry) => entry.records)), [series])
  const [chosen, setChosen] = useState<string[] | undefined>(undefined)
  const [smoothing, setSmoothing] = useState(0.6)
  const [filter, setFilter] = useState('')
  const shown = (chosen ?? defaultMetrics(names)).filter((name) => names.includes(name))
  const toggle = (name: string, on: boolean) => setChosen(on ? [...shown, name] : shown.filter((other) => other !== name))
  const visibleNames = names.filter((name) => name.toLowerCase().includes(filter.trim().toLowerCase()))

  if (props.runs.length === 0) return <p class="empty">Tick a run to see its metrics.</p>
  if (names.length === 0) return <p class="empty">No metrics yet: the chart appears with the run's first step.</p>
  return (
    <section class="metrics">
      <div class="metric-controls">
        <label class="smoothing">
          smoothing <input type="range" min={0} max={0.99} step={0.01} value={smoothing} onInput={(event) => setSmoothing(Number(event.currentTarget.value))} />
          <output>{smoothing.toFixed(2)}</output>
        </label>
        <details class="metric-picker">
          <summary>
            metrics ({shown.length} of {names.length})
          </summary>
          <input type="search" placeholder="filter" value={filter} onInput={(event) => setFilter(event.currentTarget.value)} />
          <ul>
            {visibleNames.map((name) => (
              <li key={name}>
                <label>
                  <input type="checkbox" checked={shown.includes(name)} onChange={(event) => toggle(name, event.currentTarget.checked)} /> {name}
                </label>
              </li>
            ))}
          </ul>
        </details>
      </div>
      <div class="charts">
        {shown.map((name) => (
          <MetricChart key={name} metric={name} series={series} smoothing={smoothing} />
        ))}
      </div>
    </section>
  )
}

/** One metric of several runs, drawn by Vega (SVG renderer, Vega's expression interpreter: no `eval` under the page's CSP). */
function MetricChart(props: { metric: string; series: readonly { run: string; records: readonly StepMetrics[] }[]; smoothing: number }) {
  const container = useRef<HTMLDivElement>(null)
  const [failure, setFailure] = useState<string | undefined>(undefined)
  const points = useMemo(() => metricPoints(props.series, props.metric, props.smoothing), [props.series, props.metric, props.smoothing])
  const runs = props.series.map((entry) => entry.run)
  useEffect(() => {
    const element = container.current
    if (element === null) return
    const spec = metricSpec(props.metric, points, { runs, smoothing: props.smoothing > 0, width: Math.max(240, element.clientWidth - 8) })
    let view: View | undefined
    try {
      view = new View(parse(compile(spec).spec, undefined, { ast: true }), { renderer: 'svg', container: element, hover: true, expr: expressionInterpreter })
      view.runAsync().catch((reason: unknown) => setFailure(String(reason)))
      setFailure(undefined)
    } catch (reason) {
      setFailure(String(reason))
    }
    return () => view?.finalize()
  }, [points, props.metric, props.smoothing, runs.join('\u0000')])
  return (
    <figure class="chart" data-testid="metric-chart" data-metric={props.metric} data-points={points.length}>
      <div ref={container} />
      {failure === undefined ? null : <figcaption class="error">{failure}</figcaption>}
    </figure>
  )
}
