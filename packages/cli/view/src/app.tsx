import { useCallback, useEffect, useMemo, useRef, useState } from 'preact/hooks'
import { describeSkipped, fetchEpisodes, fetchMetrics, fetchRuns, type RunSummary, type SkippedLine, type StepMetrics } from './api.js'
import { EpisodeBrowser } from './episodes.js'
import { combineLoaded, mergeRecords, parseEpisodesEvent, parseMetricsEvent, parseRunsEvent } from './live.js'
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
  skippedCount: number
}

/** A run's episode count as the live events last said it, and how many times they said it changed. */
export interface EpisodeCount {
  total: number
  version: number
}

/** How many runs are compared when the page opens (the user ticks others in). */
const initiallyCompared = 4

const message = (reason: unknown) => String((reason as Error | undefined)?.message ?? reason)

export function App() {
  const [runs, setRuns] = useState<RunSummary[] | undefined>(undefined)
  const [error, setError] = useState<string | undefined>(undefined)
  const [compared, setCompared] = useState<string[]>([])
  const [focus, setFocus] = useState<string | undefined>(undefined)
  const [metrics, setMetrics] = useState<ReadonlyMap<string, RunMetrics>>(new Map())
  const [episodeCounts, setEpisodeCounts] = useState<ReadonlyMap<string, EpisodeCount>>(new Map())
  const [tab, setTab] = useState<Tab>(tabOfHash)
  const [connected, setConnected] = useState(false)
  const metricsRef = useRef(metrics)
  metricsRef.current = metrics

  useEffect(() => {
    const onHash = () => setTab(tabOfHash())
    addEventListener('hashchange', onHash)
    return () => removeEventListener('hashchange', onHash)
  }, [])

  /** The run list as the server gave it; the compared runs and the focus kept where they still exist. */
  const applyRuns = useCallback((list: RunSummary[]) => {
    setRuns(list)
    setCompared((current) =>
      current.length > 0 ? current.filter((id) => list.some((run) => run.id === id)) : list.slice(0, initiallyCompared).map((run) => run.id),
    )
    setFocus((current) => (current !== undefined && list.some((run) => run.id === current) ? current : list[0]?.id))
  }, [])

  const loadRuns = useCallback(async () => {
    try {
      applyRuns(await fetchRuns())
      setError(undefined)
    } catch (reason) {
      setError(message(reason))
    }
  }, [applyRuns])

  /**
   * Loads a run's metrics after the last step the page has (`full`: all of them, replacing what the page has), and
   * combines them with what the live events brought meanwhile (`combineLoaded`).
   */
  const loadMetrics = useCallback(async (run: string, full = false) => {
    const known = metricsRef.current.get(run)?.records
    const after = full || known === undefined || known.length === 0 ? undefined : known[known.length - 1]!.step
    try {
      const answer = await fetchMetrics(run, after)
      setMetrics((current) =>
        new Map(current).set(run, {
          records: combineLoaded(current.get(run)?.records ?? [], answer.records, after),
          skipped: answer.skipped,
          skippedCount: answer.skippedCount,
        }),
      )
    } catch (reason) {
      setError(message(reason))
    }
  }, [])

  useEffect(() => {
    void loadRuns()
  }, [loadRuns])

  // Every compared run and the focused one have their metrics loaded once; the live events keep them current.
  const wanted = useMemo(() => [...new Set([...compared, ...(focus === undefined ? [] : [focus])])], [compared, focus])
  // The run is entered at once (empty), so the live events that come while its load is under way are kept.
  useEffect(() => {
    const missing = wanted.filter((run) => !metricsRef.current.has(run))
    if (missing.length === 0) return
    const enter = (current: ReadonlyMap<string, RunMetrics>) => {
      const next = new Map(current)
      for (const run of missing) if (!next.has(run)) next.set(run, { records: [], skipped: [], skippedCount: 0 })
      return next
    }
    metricsRef.current = enter(metricsRef.current) // the event handlers read it before the next render
    setMetrics(enter)
    for (const run of missing) void loadMetrics(run, true)
  }, [wanted, loadMetrics])

  // The focused run's episode count before any live event tells it (one summary line of its episode list).
  useEffect(() => {
    if (focus === undefined || episodeCounts.has(focus)) return
    const controller = new AbortController()
    fetchEpisodes(focus, { limit: 1 }, controller.signal)
      .then((answer) => setEpisodeCounts((current) => (current.has(focus) ? current : new Map(current).set(focus, { total: answer.available, version: 0 }))))
      .catch(() => {}) // the episode browser says why, when it is opened
    return () => controller.abort()
  }, [focus, episodeCounts])

  // Live updates: the run list, new metric lines and episode counts as the server sees the files change. On a
  // reconnection the page catches up on what it may have missed while disconnected.
  useEffect(() => {
    const source = new EventSource('/api/events')
    let opened = false
    source.addEventListener('open', () => {
      setConnected(true)
      if (opened) {
        void loadRuns()
        for (const run of metricsRef.current.keys()) void loadMetrics(run, true) // a reset may have been missed
      }
      opened = true
    })
    source.addEventListener('error', () => setConnected(false))
    source.addEventListener('runs', (event) => {
      const list = parseRunsEvent((event as MessageEvent<string>).data)
      if (list === undefined) void loadRuns()
      else applyRuns(list)
    })
    source.addEventListener('metrics', (event) => {
      const data = parseMetricsEvent((event as MessageEvent<string>).data)
      if (data === undefined || !metricsRef.current.has(data.run)) return
      // A reset (the file was rewritten: a resumed run) sends the new file's lines: they replace the page's. Too many
      // lines for one event (refetch): the page reads them.
      setMetrics((current) => {
        const previous = current.get(data.run)
        if (previous === undefined) return current
        return new Map(current).set(data.run, {
          ...previous,
          records: data.reset ? mergeRecords([], data.records) : mergeRecords(previous.records, data.records),
        })
      })
      if (data.refetch) void loadMetrics(data.run, data.reset)
      const last = data.records.reduce((step, record) => Math.max(step, record.step), 0)
      setRuns((current) => current?.map((run) => (run.id === data.run && last > (run.step ?? 0) ? { ...run, step: last } : run)))
    })
    source.addEventListener('episodes', (event) => {
      const data = parseEpisodesEvent((event as MessageEvent<string>).data)
      if (data === undefined) return
      setEpisodeCounts((current) => new Map(current).set(data.run, { total: data.total, version: (current.get(data.run)?.version ?? 0) + 1 }))
    })
    return () => source.close()
  }, [loadRuns, loadMetrics, applyRuns])

  const focusRun = runs?.find((run) => run.id === focus)
  const focusRecords = focus === undefined ? undefined : metrics.get(focus)?.records
  const liveStep = Math.max(focusRun?.step ?? 0, focusRecords?.[focusRecords.length - 1]?.step ?? 0)
  const comparedRuns = useMemo(() => (runs ?? []).filter((run) => compared.includes(run.id)), [runs, compared])
  const skippedNotes = comparedRuns
    .map((run) => ({ run, text: describeSkipped(metrics.get(run.id)?.skipped ?? [], metrics.get(run.id)?.skippedCount) }))
    .filter((note) => note.text !== '')

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
              {episodeCounts.has(focusRun.id) ? <span data-testid="live-episodes">{episodeCounts.get(focusRun.id)!.total} episodes</span> : null}
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
            <EpisodeBrowser key={focusRun.id} run={focusRun} liveVersion={episodeCounts.get(focusRun.id)?.version ?? 0} />
          ) : (
            <RunTables key={focusRun.id} run={focusRun} liveStep={liveStep} />
          )}
        </main>
      )}
    </div>
  )
}
