/**
 * The page: controls, live figures and charts of the training worker, a table to play the model on, preference marks
 * and DPO, and the model's download and upload. All model work happens in `worker.ts`.
 *
 * URL parameters preset the form and the recipe (`?game=tictactoe&backend=wasm&steps=30&episodesPerStep=64&…`, any
 * field of `recipeSchema`), and `autostart=1` presses Start.
 */
import { strToU8, unzipSync, zipSync } from 'fflate'
import { drawChart, type ChartSeries } from './chart.js'
import type { AnswerValue, BackendChoice, Envelope, Event, Phase, Request } from './protocol.js'
import { gameNames, recipeDefaults, recipeSchema, type GameName, type RecipeOptions } from './recipes.js'
import type { Evaluation, GameState, MoveChoice, StepReport } from './session.js'

const byId = <T extends HTMLElement>(id: string): T => {
  const node = document.getElementById(id)
  if (node === null) throw new Error(`the page has no #${id}`)
  return node as T
}

const worker = new Worker(new URL('./worker.ts', import.meta.url), { type: 'module' })
let nextId = 1
const pending = new Map<number, { resolve: (value: AnswerValue) => void; reject: (error: Error) => void }>()

/** Sends a request to the worker; resolves with its answer. */
function request<T extends AnswerValue>(message: Request): Promise<T> {
  const id = nextId++
  const envelope: Envelope = { id, request: message }
  return new Promise<T>((resolve, reject) => {
    pending.set(id, { resolve: resolve as (value: AnswerValue) => void, reject })
    worker.postMessage(envelope)
  })
}

/** What the page knows, also read by the browser tests (`window.playground.state`). */
const state = {
  phase: 'idle' as Phase,
  backend: undefined as string | undefined,
  /** Whether the backend's synchronous reads work (undefined: unchecked, for the backend check only). */
  synchronousReads: undefined as boolean | undefined,
  game: 'kuhn' as GameName,
  step: 0,
  steps: 0,
  warmUp: [] as { step: number; loss: number }[],
  warmedUp: undefined as Evaluation | undefined,
  evaluations: [] as Evaluation[],
  /** Seconds from Start to each evaluation (the warm-up's included), in order. */
  evaluationSeconds: [] as number[],
  startedAt: 0,
  reports: [] as StepReport[],
  lastGame: undefined as GameState | undefined,
  preferences: 0,
  errors: [] as string[],
}

worker.onmessage = (message: MessageEvent<Event>) => {
  const event = message.data
  switch (event.kind) {
    case 'answer':
      pending.get(event.id)?.resolve(event.value)
      pending.delete(event.id)
      return
    case 'failure': {
      const error = new Error(event.message)
      error.name = event.name
      pending.get(event.id)?.reject(error)
      pending.delete(event.id)
      return
    }
    case 'status':
      state.phase = event.phase
      state.step = event.step
      state.steps = event.steps
      if (event.backend !== undefined) state.backend = event.backend
      if (event.synchronousReads !== undefined) state.synchronousReads = event.synchronousReads
      if (event.phase === 'error' && event.message !== undefined) state.errors.push(event.message)
      renderStatus(event.message, event.warmUpStep, event.warmUpSteps)
      return
    case 'warmUp':
      state.warmUp.push({ step: event.step, loss: event.loss })
      renderStatus(undefined, event.step)
      return
    case 'step':
      state.reports.push(event.report)
      renderReport(event.report)
      return
    case 'evaluation':
      if (event.warmedUp) state.warmedUp = event.evaluation
      state.evaluations.push(event.evaluation)
      state.evaluationSeconds.push((performance.now() - state.startedAt) / 1000)
      renderEvaluation(event.evaluation)
      return
  }
}
worker.onerror = (error) => {
  state.errors.push(error.message)
  byId('status').textContent = `The worker failed: ${error.message}`
}

// ---- the form ----
const gameSelect = byId<HTMLSelectElement>('game')
const backendSelect = byId<HTMLSelectElement>('backend')
const stepsInput = byId<HTMLInputElement>('steps')
const episodesInput = byId<HTMLInputElement>('episodes')
const seedInput = byId<HTMLInputElement>('seed')
const parameters = new URLSearchParams(location.search)

/** Recipe fields given in the URL, as numbers where the schema wants numbers. */
function recipeFromUrl(): Partial<RecipeOptions> {
  const fields: Record<string, unknown> = {}
  for (const key of Object.keys(recipeSchema.shape)) {
    const value = parameters.get(key)
    if (value === null || key === 'game') continue
    fields[key] = key === 'modelSize' ? value : Number(value)
  }
  return fields as Partial<RecipeOptions>
}

function fillDefaults(): void {
  const defaults = recipeDefaults[gameSelect.value as GameName]
  const given = recipeFromUrl()
  stepsInput.value = String(given.steps ?? defaults.steps)
  episodesInput.value = String(given.episodesPerStep ?? defaults.episodesPerStep)
  seedInput.value = String(given.seed ?? defaults.seed)
}

const urlGame = parameters.get('game')
if (urlGame !== null && (gameNames as readonly string[]).includes(urlGame)) gameSelect.value = urlGame
const urlBackend = parameters.get('backend')
if (urlBackend !== null && [...backendSelect.options].some((option) => option.value === urlBackend)) backendSelect.value = urlBackend
fillDefaults()
gameSelect.addEventListener('change', fillDefaults)

function recipe(): RecipeOptions {
  return {
    ...recipeFromUrl(),
    game: gameSelect.value as GameName,
    steps: Number(stepsInput.value),
    episodesPerStep: Number(episodesInput.value),
    seed: Number(seedInput.value),
  }
}

const buttons = {
  start: byId<HTMLButtonElement>('start'),
  pause: byId<HTMLButtonElement>('pause'),
  resume: byId<HTMLButtonElement>('resume'),
  reset: byId<HTMLButtonElement>('reset'),
  firstGame: byId<HTMLButtonElement>('new-game-first'),
  secondGame: byId<HTMLButtonElement>('new-game-second'),
  trainPreferences: byId<HTMLButtonElement>('train-preferences'),
  download: byId<HTMLButtonElement>('download'),
}

function clearRun(game: GameName): void {
  Object.assign(state, {
    game,
    step: 0,
    steps: 0,
    warmUp: [],
    warmedUp: undefined,
    evaluations: [],
    evaluationSeconds: [],
    startedAt: performance.now(),
    reports: [],
    lastGame: undefined,
    preferences: 0,
  })
  byId('table').replaceChildren()
  byId('decision').replaceChildren()
  byId('game-result').textContent = ''
  byId('preference-result').replaceChildren()
  byId('preference-count').textContent = 'No preferences yet.'
  for (const id of ['metric-step', 'metric-exploitability', 'metric-winrate', 'metric-minimax', 'metric-reward', 'metric-invalid', 'metric-tokens'])
    byId(id).textContent = '–'
  byId('card-exploitability').hidden = game !== 'kuhn'
  byId('card-minimax').hidden = game !== 'tictactoe'
  drawCharts()
}

async function guarded(action: () => Promise<unknown>): Promise<void> {
  try {
    await action()
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error)
    state.errors.push(message)
    byId('status').textContent = `Error: ${message}`
  }
}

buttons.start.addEventListener('click', () =>
  guarded(async () => {
    clearRun(gameSelect.value as GameName)
    try {
      await request({ kind: 'start', recipe: recipe(), backend: backendSelect.value as BackendChoice })
    } catch (error) {
      // A backend that cannot start (or train here) ends the run before it began.
      state.phase = 'error'
      renderStatus()
      throw error
    }
  }),
)
buttons.pause.addEventListener('click', () => guarded(() => request({ kind: 'pause' })))
buttons.resume.addEventListener('click', () => guarded(() => request({ kind: 'resume' })))
buttons.reset.addEventListener('click', () =>
  guarded(async () => {
    await request({ kind: 'reset' })
    clearRun(gameSelect.value as GameName)
  }),
)

// ---- status, figures, charts ----
const percent = (value: number | undefined) => (value === undefined ? '–' : `${(100 * value).toFixed(1)}%`)

function renderStatus(message?: string, warmUpStep?: number, warmUpSteps?: number): void {
  const node = byId('status')
  node.dataset.phase = state.phase
  node.dataset.step = String(state.step)
  const text: Record<Phase, string> = {
    idle: 'Idle.',
    'warming-up': `Warm-up on random legal play: update ${warmUpStep ?? state.warmUp.length}${warmUpSteps === undefined ? '' : ` of ${warmUpSteps}`}.`,
    training: `Self-play: step ${state.step} of ${state.steps}.`,
    paused: `Paused at step ${state.step} of ${state.steps}.`,
    done: `Done: ${state.step} self-play steps.`,
    error: 'Failed.',
  }
  node.textContent = `${text[state.phase]}${message === undefined ? '' : ` ${message}`}`
  byId('metric-backend').textContent = state.backend ?? '–'
  const running = state.phase === 'warming-up' || state.phase === 'training' || state.phase === 'paused'
  buttons.pause.disabled = state.phase !== 'training'
  buttons.resume.disabled = state.phase !== 'paused'
  buttons.reset.disabled = state.phase === 'idle'
  const playable = state.phase === 'training' || state.phase === 'paused' || state.phase === 'done'
  buttons.firstGame.disabled = !playable
  buttons.secondGame.disabled = !playable
  buttons.download.disabled = !playable
  byId<HTMLButtonElement>('keep').disabled = !playable
  buttons.trainPreferences.disabled = !playable || state.preferences === 0
  buttons.start.textContent = running ? 'Restart' : 'Start'
}

function renderReport(report: StepReport): void {
  byId('metric-step').textContent = `${report.step} (${report.seconds.toFixed(1)} s)`
  byId('metric-reward').textContent = report.reward.toFixed(3)
  byId('metric-invalid').textContent = percent(report.invalidRate)
  byId('metric-tokens').textContent = report.tokensPerSecond.toFixed(0)
  drawCharts()
}

function renderEvaluation(evaluation: Evaluation): void {
  if (evaluation.exploitability !== undefined) byId('metric-exploitability').textContent = evaluation.exploitability.toFixed(3)
  byId('metric-winrate').textContent = percent(evaluation.winRate)
  if (evaluation.minimax !== undefined) {
    const { winRate, drawRate, lossRate } = evaluation.minimax
    byId('metric-minimax').textContent = `${percent(winRate)} / ${percent(drawRate)} / ${percent(lossRate)}`
  }
  byId('metric-exploitability').dataset.value = String(evaluation.exploitability ?? '')
  drawCharts()
}

function drawCharts(): void {
  const evaluations = state.evaluations
  const evaluationSeries: ChartSeries[] =
    state.game === 'kuhn'
      ? [
          { name: 'exploitability', color: '#1f77b4', points: evaluations.map((e) => ({ x: e.step, y: e.exploitability ?? 0 })) },
          { name: 'win rate vs random', color: '#2ca02c', points: evaluations.map((e) => ({ x: e.step, y: e.winRate })) },
        ]
      : [
          { name: 'win vs random', color: '#2ca02c', points: evaluations.map((e) => ({ x: e.step, y: e.winRate })) },
          { name: 'draw vs minimax', color: '#9467bd', points: evaluations.flatMap((e) => (e.minimax ? [{ x: e.step, y: e.minimax.drawRate }] : [])) },
        ]
  drawChart(byId('chart-evaluation'), evaluationSeries, {
    title: state.game === 'kuhn' ? 'Evaluations (exploitability: exact)' : 'Evaluations',
    yRange: [0, 1],
    ...(state.game === 'kuhn' ? { references: [{ y: 0.1, label: 'exploitability 0.10' }] } : {}),
  })
  drawChart(
    byId('chart-steps'),
    [
      { name: 'reward', color: '#ff7f0e', points: state.reports.map((r) => ({ x: r.step, y: r.reward })) },
      { name: 'invalid rate', color: '#d62728', points: state.reports.map((r) => ({ x: r.step, y: r.invalidRate })) },
    ],
    { title: 'Self-play steps' },
  )
}

// ---- playing ----
function renderGame(game: GameState): void {
  state.lastGame = game
  const table = byId('table')
  table.replaceChildren()
  const yourTurn = !game.done && game.legalActions.length > 0
  if (game.game === 'tictactoe') {
    const grid = document.createElement('div')
    grid.className = 'board'
    const board = game.board ?? new Array(9).fill('')
    board.forEach((mark, cell) => {
      const button = document.createElement('button')
      button.type = 'button'
      button.dataset.cell = String(cell)
      button.textContent = mark || ''
      button.disabled = !yourTurn || !game.legalActions.includes(`[${cell}]`)
      button.addEventListener('click', () => guarded(async () => renderGame(await request<GameState>({ kind: 'play', action: `[${cell}]` }))))
      grid.append(button)
    })
    table.append(grid)
  } else {
    const hand = document.createElement('div')
    hand.className = 'hand'
    const card = document.createElement('span')
    card.className = 'playing-card'
    card.textContent = game.card ?? '?'
    const moves = document.createElement('pre')
    moves.textContent = game.observation
    hand.append(card, moves)
    for (const action of game.legalActions) {
      const button = document.createElement('button')
      button.type = 'button'
      button.dataset.action = action
      button.textContent = action.replace(/[[\]]/g, '')
      button.disabled = !yourTurn
      button.addEventListener('click', () => guarded(async () => renderGame(await request<GameState>({ kind: 'play', action }))))
      hand.append(button)
    }
    table.append(hand)
  }
  const you = game.rewards[game.humanRole]
  byId('game-result').textContent = game.done
    ? `Game over: ${you === undefined ? 'no result' : you > 0 ? `you won (${you})` : you < 0 ? `the model won (${you})` : 'a draw'}.`
    : yourTurn
      ? 'Your move.'
      : ''
  const last = game.modelMoves.at(-1)
  if (last !== undefined) renderDecision(last)
}

function renderDecision(decision: MoveChoice & { played?: string }, into = byId('decision')): void {
  const list = document.createElement('ul')
  list.className = 'moves'
  const ranked = [...decision.moves].sort((a, b) => b.probability - a.probability)
  for (const move of decision.moves) {
    const item = document.createElement('li')
    item.dataset.move = move.action
    item.dataset.probability = String(move.probability)
    const bar = document.createElement('span')
    bar.className = 'bar'
    bar.style.width = `${(100 * move.probability).toFixed(1)}%`
    const label = document.createElement('span')
    label.textContent = `${move.action} ${percent(move.probability)}${move.action === decision.played ? ' (played)' : ''}`
    item.append(bar, label)
    const alternative = ranked.find((other) => other.action !== move.action)
    if (into.id === 'decision' && alternative !== undefined) {
      for (const [verdict, chosen, rejected] of [
        ['better', move.action, alternative.action],
        ['worse', alternative.action, move.action],
      ] as const) {
        const button = document.createElement('button')
        button.type = 'button'
        button.className = verdict
        button.dataset.verdict = verdict
        button.textContent = verdict
        button.title = `${chosen} preferred over ${rejected}`
        button.addEventListener('click', () =>
          guarded(async () => {
            const { preferences } = await request<{ preferences: number }>({ kind: 'prefer', prompt: decision.prompt, chosen, rejected })
            state.preferences = preferences
            preferred.push({ prompt: decision.prompt, actions: decision.moves.map((entry) => entry.action), before: decision, chosen })
            byId('preference-count').textContent = `${preferences} preference${preferences === 1 ? '' : 's'}: last, ${chosen} over ${rejected}.`
            renderStatus()
          }),
        )
        item.append(button)
      }
    }
    list.append(item)
  }
  const heading = document.createElement('p')
  heading.textContent = decision.prompt.replaceAll('\n', ' ⏎ ')
  heading.className = 'prompt'
  into.replaceChildren(heading, list)
}

buttons.firstGame.addEventListener('click', () => guarded(async () => renderGame(await request<GameState>({ kind: 'newGame', humanRole: 'player0' }))))
buttons.secondGame.addEventListener('click', () => guarded(async () => renderGame(await request<GameState>({ kind: 'newGame', humanRole: 'player1' }))))

// ---- teaching ----
const preferred: { prompt: string; actions: string[]; before: MoveChoice; chosen: string }[] = []

buttons.trainPreferences.addEventListener('click', () =>
  guarded(async () => {
    buttons.trainPreferences.disabled = true
    const { metrics } = await request<{ metrics: Record<string, number>[] }>({ kind: 'trainPreferences', steps: 8 })
    const result = byId('preference-result')
    result.replaceChildren()
    const summary = document.createElement('p')
    const last = metrics.at(-1) ?? {}
    summary.textContent = `DPO: ${metrics.length} steps, loss ${(last.loss ?? Number.NaN).toFixed(3)}, accuracy ${percent(last['rewards/accuracies'])}. The marked decisions now:`
    result.append(summary)
    for (const entry of preferred.slice(-3)) {
      const after = await request<MoveChoice>({ kind: 'probabilities', prompt: entry.prompt, actions: entry.actions })
      const row = document.createElement('div')
      row.className = 'preference-after'
      const before = entry.before.moves.find((move) => move.action === entry.chosen)?.probability
      const now = after.moves.find((move) => move.action === entry.chosen)?.probability
      row.dataset.chosen = entry.chosen
      row.dataset.before = String(before)
      row.dataset.after = String(now)
      row.textContent = `${entry.chosen}: ${percent(before)} → ${percent(now)}`
      result.append(row)
    }
    renderStatus()
  }),
)

// ---- the model's files ----
/** The model's files in a zip. */
async function modelArchive(): Promise<Uint8Array<ArrayBuffer>> {
  const files = await request<Record<string, string | Uint8Array>>({ kind: 'files' })
  return zipSync(
    Object.fromEntries(Object.entries(files).map(([name, file]) => [name, typeof file === 'string' ? strToU8(file) : file])),
  ) as Uint8Array<ArrayBuffer>
}

async function downloadModel(): Promise<void> {
  const zip = await modelArchive()
  const link = document.createElement('a')
  link.href = URL.createObjectURL(new Blob([zip], { type: 'application/zip' }))
  link.download = `ludic-${state.game}-step${state.step}.zip`
  link.click()
  setTimeout(() => URL.revokeObjectURL(link.href), 10_000)
}

/** The largest model archive the page loads (a `tiny` or `small` model is a few MB). */
const maxArchiveBytes = 512 * 1024 * 1024

async function loadArchive(bytes: Uint8Array): Promise<void> {
  if (bytes.byteLength > maxArchiveBytes) throw new Error(`the archive has ${bytes.byteLength} bytes, over the ${maxArchiveBytes} this page loads`)
  const entries = unzipSync(bytes)
  const files: Record<string, Uint8Array> = {}
  // A folder zipped with its name: the files may sit one level down.
  for (const [name, content] of Object.entries(entries)) files[name.split('/').at(-1)!] = content
  const playground = files['playground.json']
  if (playground !== undefined) {
    const game = (JSON.parse(new TextDecoder().decode(playground)) as { game?: string }).game
    if (game !== undefined && (gameNames as readonly string[]).includes(game)) gameSelect.value = game
  }
  clearRun(gameSelect.value as GameName)
  await request({
    kind: 'load',
    files,
    backend: backendSelect.value as BackendChoice,
    game: gameSelect.value as GameName,
    // The backend check of the tests: a model on a backend whose synchronous reads are wrong, for forward passes only.
    asyncReadsOnly: parameters.get('asyncReadsOnly') === '1',
  })
}

buttons.download.addEventListener('click', () => guarded(downloadModel))

// The Origin Private File System: the model's zip kept per game, for the next visit (nothing leaves the machine).
const keptName = (game: GameName) => `ludic-playground-${game}.zip`
async function keptFile(game: GameName): Promise<File | undefined> {
  try {
    const root = await navigator.storage.getDirectory()
    return await (await root.getFileHandle(keptName(game))).getFile()
  } catch {
    return undefined
  }
}
async function showKept(): Promise<void> {
  const file = await keptFile(gameSelect.value as GameName)
  byId<HTMLButtonElement>('restore').disabled = file === undefined
  byId('kept').textContent = file === undefined ? '' : `kept: ${(file.size / 1024 / 1024).toFixed(1)} MB, ${new Date(file.lastModified).toLocaleString()}`
}
byId('keep').addEventListener('click', () =>
  guarded(async () => {
    const root = await navigator.storage.getDirectory()
    const writable = await (await root.getFileHandle(keptName(state.game), { create: true })).createWritable()
    await writable.write(await modelArchive())
    await writable.close()
    await showKept()
  }),
)
byId('restore').addEventListener('click', () =>
  guarded(async () => {
    const file = await keptFile(gameSelect.value as GameName)
    if (file === undefined) throw new Error('no model is kept for this game')
    await loadArchive(new Uint8Array(await file.arrayBuffer()))
  }),
)
gameSelect.addEventListener('change', () => void showKept())
void showKept()
byId<HTMLInputElement>('load-file').addEventListener('change', (event) =>
  guarded(async () => {
    const file = (event.target as HTMLInputElement).files?.[0]
    if (file !== undefined) await loadArchive(new Uint8Array(await file.arrayBuffer()))
  }),
)
byId<HTMLFormElement>('load-url-form').addEventListener('submit', (event) => {
  event.preventDefault()
  void guarded(async () => {
    const response = await fetch(byId<HTMLInputElement>('load-url').value)
    if (!response.ok) throw new Error(`${response.status} ${response.statusText} from ${response.url}`)
    await loadArchive(new Uint8Array(await response.arrayBuffer()))
  })
})

clearRun(gameSelect.value as GameName)
renderStatus()
if (parameters.get('autostart') === '1') buttons.start.click()

/** For the browser tests and the curious: the page's state and the worker's requests. */
Object.assign(window, { playground: { state, request, loadArchive } })
