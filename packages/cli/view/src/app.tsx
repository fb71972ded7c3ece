import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks'
import { describeSkipped, fetchMetrics, fetchRuns, type RunSummary, type SkippedLine, type StepMetrics } from './api.js'
import { EpisodeBrowser } from './episodes.js'
import { mergeRecords, parseEpisodesEvent, parseMetricsEvent } from './live.js'
import { MetricCharts } from './metric-charts.js'
import { ConfigTable, RunList } from './runs.js'
import { RunTables } from './tables.js'

type Tab = 'runs' | 'episodes' | 'tables'
const tabs: readonly { tab: Tab; label: string }[] = [
  { tab: 'runs', label: 'Runs & metrics' },
  { tab: 'episodes', label: 'Episodes' },
  { tab: 'tables', label: 'Report & tables' },
]
const tabOfHash = (): Tab => {
  const name = location.hash.replace(/^#\/?/, '')
  return name === 'episodes' || name === 'tables' ? name : 'runs'
}

export interface RunMetrics {
  records: StepMetrics[]
  skipped: SkippedLine[]
}

/** How many runs are compared when the page opens (the user ticks others in). */
const initiallyCompared = 4

export function App() {
  const [runs, setRuns] = useState<RunSummary[] | undefined>(undefined)
  const [error, setError] = useState<string | undefined>(undefined)
  const [compared, setCompared] = useState<string[]>([])
  const [focus, setFocus] = useState<string | undefined>(undefined)
  const [metrics, setMetrics] = useState<ReadonlyMap<string, RunMetrics>>(new Map())
  const [episodeTotals, setEpisodeTotals] = useState<ReadonlyMap<string, number>>(new Map())
  const [tab, setTab] = useState<Tab>(tabOfHash)
  const [connected, setConnected] = useState(false)
  const metricsRef = useRef(metrics)
  metricsRef.current = metrics

  useEffect(() => {
    const onHash = () => setTab(tabOfHash())
    addEventListener('hashchange', onHash)
    return () => removeEventListener('hashchange', onHash)
  }, [])

  const loadRuns = useCallback(async () => {
    try {
      const list = await fetchRuns()
      setRuns(list)
      setError(undefined)
      setCompared((current) =>
        current.length > 0 ? current.filter((id) => list.some((run) => run.id === id)) : list.slice(0, initiallyCompared).map((run) => run.id),
      )
      setFocus((current) => (current !== undefined && list.some((run) => run.id === current) ? current : list[0]?.id))
    } catch (reason) {
      setError(String((reason as Error).message ?? reason))
    }
  }, [])

  const addRecords = useCallback((run: string, records: readonly StepMetrics[], skipped?: readonly SkippedLine[]) => {
    setMetrics((current) => {
      const previous = current.get(run)
      const next = new Map(current)
      next.set(run, { records: mergeRecords(previous?.records ?? [], records), skipped: skipped === undefined ? (previous?.skipped ?? []) : [...skipped] })
      return next
    })
  }, [])

  /** Loads a run's metrics after the last step the page has (all of them the first time). */
  const loadMetrics = useCallback(
    async (run: string) => {
      const known = metricsRef.current.get(run)?.records
      const after = known === undefined || known.length === 0 ? undefined : known[known.length - 1]!.step
      try {
        const answer = await fetchMetrics(run, after)
        addRecords(run, answer.records, after === undefined ? answer.skipped : mergeSkipped(metricsRef.current.get(run)?.skipped ?? [], answer.skipped))
      } catch (reason) {
        setError(String((reason as Error).message ?? reason))
      }
    },
    [addRecords],
  )

  useEffect(() => {
    void loadRuns()
  }, [loadRuns])

  // Every compared run and the focused one have their metrics loaded once; the live events keep them current.
  const wanted = useMemo(() => [...new Set([...compared, ...(focus === undefined ? [] : [focus])])], [compared, focus])
  useEffect(() => {
    for (const run of wanted) if (!metricsRef.current.has(run)) void loadMetrics(run)
  }, [wanted, loadMetrics])

  // Live updates: new metric lines and episode counts as the server sees the files grow. On every (re)connection the
  // page catches up on what it may have missed while disconnected.
  useEffect(() => {
    const source = new EventSource('/api/events')
    let opened = false
    source.addEventListener('open', () => {
      setConnected(true)
      if (opened) {
        void loadRuns()
        for (const run of metricsRef.current.keys()) void loadMetrics(run)
      }
      opened = true
    })
    source.addEventListener('error', () => setConnected(false))
    source.addEventListener('metrics', (event) => {
      const data = parseMetricsEvent((event as MessageEvent<string>).data)
      if (data === undefined || !metricsRef.current.has(data.run)) return
      addRecords(data.run, data.records)
      const last = data.records.reduce((step, record) => Math.max(step, record.step), 0)
      setRuns((current) => current?.map((run) => (run.id === data.run && last > run.step ? { ...run, step: last } : run)))
    })
    source.addEventListener('episodes', (event) => {
      const data = parseEpisodesEvent((event as MessageEvent<string>).data)
      if (data !== undefined) setEpisodeTotals((current) => new Map(current).set(data.run, data.total))
    })
    source.addEventListener('runs', () => void loadRuns())
    return () => source.close()
  }, [loadRuns, loadMetrics, addRecords])

  const focusRun = runs?.find((run) => run.id === focus)
  const focusRecords = focus === undefined ? undefined : metrics.get(focus)?.records
  const liveStep = Math.max(focusRun?.step ?? 0, focusRecords?.[focusRecords.length - 1]?.step ?? 0)
  const comparedRuns = useMemo(() => (runs ?? []).filter((run) => compared.includes(run.id)), [runs, compared])
  const skippedNotes = comparedRuns.map((run) => ({ run, text: describeSkipped(metrics.get(run.id)?.skipped ?? []) })).filter((note) => note.text !== '')

  return (
    <div class="page">
      <header class="top">
        <h1>ludic view</h1>
        <nav>
          {tabs.map(({ tab: name, label }) => (
            <a key={name} href={`#/${name}`} class={name === tab ? 'tab current' : 'tab'} data-testid={`tab-${name}`}>
              {label}
            </a>
          ))}
        </nav>
        <div class="live" title={connected ? 'live: new steps appear as the run writes them' : 'not connected to the view server (retrying)'}>
          <span class={connected ? 'dot on' : 'dot'} />
          {focusRun === undefined ? null : (
            <>
              <span class="live-run">{focusRun.name}</span>
              <span data-testid="live-step">step {liveStep}</span>
              {episodeTotals.has(focusRun.id) ? <span data-testid="live-episodes">{episodeTotals.get(focusRun.id)} episodes</span> : null}
            </>
          )}
        </div>
      </header>
      {error === undefined ? null : (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {runs === undefined ? (
        <p class="empty">Loading runs…</p>
      ) : runs.length === 0 ? (
        <p class="empty">No run directories (a run directory has a metrics.jsonl).</p>
      ) : (
        <main>
          <RunList
            runs={runs}
            compared={compared}
            focus={focus}
            onCompare={(id, on) => setCompared((current) => (on ? [...current, id] : current.filter((other) => other !== id)))}
            onFocus={setFocus}
          />
          {tab === 'runs' ? (
            <section class="panel">
              {skippedNotes.map((note) => (
                <p key={note.run.id} class="skipped">
                  {note.run.name} metrics.jsonl: {note.text}
                </p>
              ))}
              <MetricCharts runs={comparedRuns} metrics={metrics} />
              <ConfigTable runs={comparedRuns} />
            </section>
          ) : focusRun === undefined ? null : tab === 'episodes' ? (
            <EpisodeBrowser key={focusRun.id} run={focusRun} liveTotal={episodeTotals.get(focusRun.id)} />
          ) : (
            <RunTables key={focusRun.id} run={focusRun} liveStep={liveStep} />
          )}
        </main>
      )}
    </div>
  )
}

function mergeSkipped(older: readonly SkippedLine[], newer: readonly SkippedLine[]): SkippedLine[] {
  const lines = new Set(older.map((entry) => entry.line))
  return [...older, ...newer.filter((entry) => !lines.has(entry.line))]
}
