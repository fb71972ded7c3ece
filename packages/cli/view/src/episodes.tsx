import { useEffect, useMemo, useState } from 'preact/hooks'
import {
  describeSkipped,
  type EpisodeQuery,
  type EpisodesAnswer,
  fetchEpisode,
  fetchEpisodes,
  type RunSummary,
  type TrajectoryRecord,
  type TrajectoryTurn,
} from './api.js'
import { type ColourMode, colourModes, formatNumber, type TokenScale, tokenScale, tokenTitle, visibleToken } from './token-colours.js'

// Everything a trajectory holds that a model or an environment wrote (prompts, responses, tokens, the judge's text,
// the board) is rendered as text: JSX children and attributes, which Preact escapes. Never as HTML.

const pageSize = 50

interface Filters {
  step: string
  environment: string
  role: string
  minReward: string
  maxReward: string
}
const noFilters: Filters = { step: '', environment: '', role: '', minReward: '', maxReward: '' }

const numberOrUndefined = (text: string) => (text.trim() === '' || !Number.isFinite(Number(text)) ? undefined : Number(text))

const formatReturn = (value: number) => (value > 0 ? `+${formatNumber(value)}` : formatNumber(value))

/** The episode browser of one run: filters, the list (pages of 50, in the file's order), one episode in full. */
export function EpisodeBrowser(props: { run: RunSummary; liveVersion: number }) {
  const [filters, setFilters] = useState<Filters>(noFilters)
  const [offset, setOffset] = useState(0)
  const [answer, setAnswer] = useState<EpisodesAnswer | undefined>(undefined)
  const [error, setError] = useState<string | undefined>(undefined)
  const [selected, setSelected] = useState<number | undefined>(undefined)
  const query: EpisodeQuery = useMemo(
    () => ({
      step: numberOrUndefined(filters.step),
      environment: filters.environment || undefined,
      role: filters.role || undefined,
      minReward: numberOrUndefined(filters.minReward),
      maxReward: numberOrUndefined(filters.maxReward),
      offset,
      limit: pageSize,
    }),
    [filters, offset],
  )
  // Refetched when the filters change and when the run writes episodes (the live events' count for the run).
  useEffect(() => {
    const controller = new AbortController()
    fetchEpisodes(props.run.id, query, controller.signal)
      .then((result) => {
        setAnswer(result)
        setError(undefined)
      })
      .catch((reason: unknown) => {
        if (!controller.signal.aborted) setError(String((reason as Error).message ?? reason))
      })
    return () => controller.abort()
  }, [props.run.id, query, props.liveVersion])

  const set = (name: keyof Filters) => (event: Event) => {
    setFilters({ ...filters, [name]: (event.currentTarget as HTMLInputElement | HTMLSelectElement).value })
    setOffset(0)
  }
  const skipped = describeSkipped(answer?.skipped ?? [], answer?.skippedCount)
  return (
    <section class="panel episodes">
      <div class="episode-side">
        <form class="filters" onSubmit={(event) => event.preventDefault()}>
          <label>
            step
            <select value={filters.step} onChange={set('step')} data-testid="filter-step">
              <option value="">all</option>
              {(answer?.steps ?? []).map((step) => (
                <option key={step} value={String(step)}>
                  {step}
                </option>
              ))}
            </select>
          </label>
          <label>
            environment
            <select value={filters.environment} onChange={set('environment')} data-testid="filter-environment">
              <option value="">all</option>
              {(answer?.environments ?? []).map((environment) => (
                <option key={environment} value={environment}>
                  {environment}
                </option>
              ))}
            </select>
          </label>
          <label>
            role
            <select value={filters.role} onChange={set('role')} data-testid="filter-role">
              <option value="">all</option>
              {(answer?.roles ?? []).map((role) => (
                <option key={role} value={role}>
                  {role}
                </option>
              ))}
            </select>
          </label>
          <label>
            reward ≥
            <input type="number" step="any" value={filters.minReward} onChange={set('minReward')} data-testid="filter-min-reward" />
          </label>
          <label>
            reward ≤
            <input type="number" step="any" value={filters.maxReward} onChange={set('maxReward')} data-testid="filter-max-reward" />
          </label>
        </form>
        {error === undefined ? null : <p class="error">{error}</p>}
        {skipped === '' ? null : (
          <p class="skipped" data-testid="episodes-skipped">
            trajectories.jsonl: {skipped}
          </p>
        )}
        <p class="count">
          {answer === undefined
            ? 'loading…'
            : `${answer.total} episode${answer.total === 1 ? '' : 's'}${answer.total > pageSize ? `, ${offset + 1}–${Math.min(offset + pageSize, answer.total)}` : ''}`}
        </p>
        <ul class="episode-list" data-testid="episode-list">
          {(answer?.episodes ?? []).map((episode) => (
            <li key={episode.index}>
              <button
                type="button"
                data-testid="episode-item"
                data-index={episode.index}
                class={episode.index === selected ? 'episode-item selected' : 'episode-item'}
                onClick={() => setSelected(episode.index)}
              >
                <span class="episode-step">step {episode.step}</span>
                <span class="episode-environment">{episode.environmentId}</span>
                <span class="episode-returns">
                  {Object.entries(episode.returns).map(([role, value]) => (
                    <span key={role} class={value > 0 ? 'return up' : value < 0 ? 'return down' : 'return'}>
                      {role} {formatReturn(value)}
                    </span>
                  ))}
                </span>
                <span class="episode-turns">
                  {episode.turnCount} turn{episode.turnCount === 1 ? '' : 's'} · {episode.trainer}
                </span>
              </button>
            </li>
          ))}
        </ul>
        <div class="pager">
          <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - pageSize))}>
            ← previous
          </button>
          <button type="button" disabled={answer === undefined || offset + pageSize >= answer.total} onClick={() => setOffset(offset + pageSize)}>
            next →
          </button>
        </div>
      </div>
      <div class="episode-main">
        {selected === undefined ? (
          <p class="empty">Pick an episode to read its transcript.</p>
        ) : (
          <EpisodeDetail key={selected} run={props.run.id} index={selected} />
        )}
      </div>
    </section>
  )
}

function EpisodeDetail(props: { run: string; index: number }) {
  const [record, setRecord] = useState<TrajectoryRecord | undefined>(undefined)
  const [error, setError] = useState<string | undefined>(undefined)
  const [mode, setMode] = useState<ColourMode>('advantage')
  useEffect(() => {
    const controller = new AbortController()
    fetchEpisode(props.run, props.index, controller.signal)
      .then(setRecord)
      .catch((reason: unknown) => {
        if (!controller.signal.aborted) setError(String((reason as Error).message ?? reason))
      })
    return () => controller.abort()
  }, [props.run, props.index])
  const scale = useMemo(() => (record === undefined ? undefined : tokenScale(mode, record.turns)), [record, mode])
  if (error !== undefined)
    return (
      <p class="error">
        line {props.index}: {error}
      </p>
    )
  if (record === undefined || scale === undefined) return <p class="empty">loading…</p>
  const { episode } = record
  return (
    <article class="episode" data-testid="episode">
      <header class="episode-header">
        <h2>
          {episode.environmentId} · step {record.step}
        </h2>
        <dl>
          {[
            ['trainer', record.trainer],
            ['policy version', record.policyVersion],
            ['seed', episode.seed],
            ['episode', episode.id],
            ['group', episode.groupId],
            [
              'outcome',
              episode.error === undefined
                ? episode.truncated === true
                  ? 'truncated'
                  : episode.done === false
                    ? 'not done'
                    : 'done'
                : `error: ${episode.error}`,
            ],
            ['external', episode.external === true ? 'yes (a demonstration)' : undefined],
          ]
            .filter(([, value]) => value !== undefined)
            .map(([name, value]) => (
              <div key={String(name)}>
                <dt>{name}</dt>
                <dd>{String(value)}</dd>
              </div>
            ))}
        </dl>
        <p class="episode-returns">
          {Object.entries(episode.returns).map(([role, value]) => (
            <span key={role} class={value > 0 ? 'return up' : value < 0 ? 'return down' : 'return'}>
              {role} {formatReturn(value)}
            </span>
          ))}
        </p>
        {record.truncatedFields === undefined || record.truncatedFields.length === 0 ? null : (
          <p class="skipped">cut to fit the line limit: {record.truncatedFields.join(', ')}</p>
        )}
      </header>
      {record.judgement === undefined ? null : <Judgement judgement={record.judgement} episodeId={episode.id} />}
      <div class="colour-controls">
        <span>colour tokens by</span>
        {colourModes.map((entry) => (
          <label key={entry.mode}>
            <input type="radio" name="colour-mode" value={entry.mode} checked={mode === entry.mode} onChange={() => setMode(entry.mode)} />
            {entry.label}
          </label>
        ))}
        <Legend scale={scale} />
      </div>
      <ol class="transcript" data-testid="transcript">
        {record.turns.map((turn) => (
          <Turn key={turn.index} turn={turn} scale={scale} />
        ))}
      </ol>
      {record.render === undefined ? null : (
        <section class="render">
          <h3>final state</h3>
          <pre data-testid="render">{record.render}</pre>
        </section>
      )}
    </article>
  )
}

function Legend(props: { scale: TokenScale }) {
  return (
    <span class="legend" data-testid="legend">
      <span>{props.scale.legend.low}</span>
      <span class="legend-bar" style={{ backgroundImage: props.scale.legend.gradient }} />
      <span>{props.scale.legend.high}</span>
    </span>
  )
}

function Turn(props: { turn: TrajectoryTurn; scale: TokenScale }) {
  const { turn } = props
  const rewards = Object.entries(turn.rewards ?? {}).filter(([, value]) => value !== 0)
  return (
    <li class={turn.trained === true ? 'turn trained' : 'turn'} data-testid="turn">
      <div class="turn-header">
        <span class="turn-role">{turn.role}</span>
        <span class="turn-index">turn {turn.index}</span>
        {turn.trained === true ? <span class="badge">trained</span> : <span class="badge muted">not trained</span>}
        {turn.invalidAction === true ? <span class="badge bad">invalid action</span> : null}
        {turn.policyId === undefined ? null : <span class="badge muted">{turn.policyId}</span>}
        {rewards.map(([role, value]) => (
          <span key={role} class={value > 0 ? 'return up' : 'return down'}>
            {role} {formatReturn(value)}
          </span>
        ))}
      </div>
      {turn.prompt === undefined && turn.observation === undefined ? null : (
        <details class="prompt">
          <summary>{turn.prompt === undefined ? 'observation' : 'prompt'}</summary>
          <pre>{turn.prompt ?? turn.observation}</pre>
          {turn.legalActions === undefined ? null : <p class="legal">legal: {turn.legalActions.join(', ')}</p>}
        </details>
      )}
      <div class="response">
        {turn.tokens !== undefined && turn.tokens.length > 0 ? (
          <TokenText turn={turn} scale={props.scale} />
        ) : (
          <pre class="plain-response">{turn.response ?? turn.action ?? ''}</pre>
        )}
      </div>
      {turn.action === undefined || (turn.response !== undefined && turn.action === turn.response.trim()) ? null : (
        <p class="action">
          action: <code>{turn.action}</code>
        </p>
      )}
    </li>
  )
}

function TokenText(props: { turn: TrajectoryTurn; scale: TokenScale }) {
  const { turn, scale } = props
  const field = scale.mode === 'advantage' ? turn.advantages : scale.mode === 'logprob' ? turn.logprobs : turn.entropy
  return (
    <p class="tokens">
      {(turn.tokens ?? []).map((token, index) => {
        const advantage = turn.advantages?.[index]
        const logprob = turn.logprobs?.[index]
        const entropy = turn.entropy?.[index]
        return (
          <span
            key={index}
            class="token"
            data-testid="token"
            data-advantage={typeof advantage === 'number' ? String(advantage) : undefined}
            data-logprob={typeof logprob === 'number' ? String(logprob) : undefined}
            data-entropy={typeof entropy === 'number' ? String(entropy) : undefined}
            title={tokenTitle(turn, index)}
            style={{ backgroundColor: scale.colour(field?.[index]) }}
          >
            {visibleToken(token)}
          </span>
        )
      })}
    </p>
  )
}

function Judgement(props: { judgement: NonNullable<TrajectoryRecord['judgement']>; episodeId: string }) {
  const { judgement } = props
  const members = judgement.groupScores.map((score, index) => ({
    score,
    rank: judgement.groupRanking?.[index],
    id: judgement.groupEpisodeIds?.[index],
  }))
  const isThis = (member: (typeof members)[number]) => (member.id === undefined ? member.score === judgement.score : member.id === props.episodeId)
  return (
    <section class="judgement" data-testid="judgement">
      <h3>judgement · {judgement.scorer}</h3>
      <p>
        {judgement.rank === undefined ? null : (
          <span class="badge" data-testid="judgement-rank">
            rank {formatNumber(judgement.rank)} of {judgement.groupScores.length}
          </span>
        )}
        <span class="badge">score {formatNumber(judgement.score)}</span>
        {judgement.agreement === undefined ? null : <span class="badge">agreement {formatNumber(judgement.agreement)}</span>}
      </p>
      {members.length === 0 ? null : (
        <table class="group">
          <thead>
            <tr>
              <th>group</th>
              <th class="number">score</th>
              {judgement.groupRanking === undefined ? null : <th class="number">rank</th>}
            </tr>
          </thead>
          <tbody>
            {members.map((member, index) => (
              <tr key={index} class={isThis(member) ? 'this' : undefined}>
                <td>
                  {member.id ?? `#${index + 1}`}
                  {isThis(member) ? ' (this episode)' : ''}
                </td>
                <td class="number">{formatNumber(member.score)}</td>
                {judgement.groupRanking === undefined ? null : <td class="number">{member.rank === undefined ? '' : formatNumber(member.rank)}</td>}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {(judgement.failures ?? []).length === 0 ? null : <p class="skipped">the judge gave no verdict: {(judgement.failures ?? []).join('; ')}</p>}
      {judgement.rawText.map((text, index) => (
        <details key={index} open={index === 0}>
          <summary>judge's text{judgement.rawText.length > 1 ? ` ${index + 1} of ${judgement.rawText.length}` : ''}</summary>
          <pre data-testid="judge-text">{text}</pre>
        </details>
      ))}
    </section>
  )
}
