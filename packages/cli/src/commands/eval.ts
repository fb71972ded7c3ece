import { type CommandContext, commandContext } from '../context.js'
import { CliError, exitCodes } from '../errors.js'
import { namedPrompts } from '../registries.js'
import { importCommandPlugins } from '../plugins.js'
import { checkModelFolder, localModelDirectory } from '../sources.js'
import { bench, type BenchResult } from './bench.js'

export interface EvalOptions {
  /** The evaluation suite. Only `games` for now. */
  suite?: string
  /** Game ids (`@ludic/games`, or registered ones). Default: every two-player game. */
  games?: readonly string[]
  /** `random`, `minimax`, `nash`. Default: all three (each plays the games it knows). */
  opponents?: readonly string[]
  /** Episodes per game and opponent. Default 100. */
  episodes?: number
  /** The model's prompt, by name: `terse` (the observation, default), `spiral`, `kuhn-terse` (`namedPrompts`). */
  prompt?: string
  /** Most tokens per move. Default 32. */
  maxTokens?: number
  /** `path=value` options of the `games` suite, values as YAML (e.g. `gameOptions.kuhn-poker-v1.rounds=1`). */
  set?: readonly string[]
  /** Where the report files go. Default `bench-results`. */
  out?: string
  /** Also write the chart as PNG. */
  png?: boolean
  /** Modules imported first (paths relative to the working directory) that register games, as a config's `plugins:` (`--plugin`). */
  plugins?: readonly string[]
}

/**
 * `ludic eval <checkpoint|repo> --suite games`: the `games` suite of `@ludic/bench` on a model directory or a
 * Hugging Face repo id (downloaded first): win, draw and loss rates with 95% Wilson intervals against each opponent.
 */
export async function evaluate(source: string, options: EvalOptions = {}, partialContext: Partial<CommandContext> = {}): Promise<BenchResult> {
  const context = commandContext(partialContext)
  const suite = options.suite ?? 'games'
  if (suite !== 'games') throw new CliError(`unknown evaluation suite '${suite}' (allowed: games)`, exitCodes.usage)
  const prompt = options.prompt === undefined ? undefined : namedPrompts[options.prompt]
  if (options.prompt !== undefined && prompt === undefined)
    throw new CliError(`unknown prompt '${options.prompt}' (allowed: ${Object.keys(namedPrompts).join(' | ')})`, exitCodes.usage)
  await importCommandPlugins(options.plugins, context.cwd)
  const checkpoint = await localModelDirectory(source, { base: context.cwd, signal: context.signal })
  checkModelFolder(checkpoint, source)
  return bench(
    'games',
    {
      ...(options.out === undefined ? {} : { out: options.out }),
      ...(options.png === undefined ? {} : { png: options.png }),
      ...(options.set === undefined ? {} : { set: options.set }),
      suiteOptions: {
        checkpoint,
        ...(options.games === undefined ? {} : { games: [...options.games] }),
        ...(options.opponents === undefined ? {} : { opponents: [...options.opponents] }),
        ...(options.episodes === undefined ? {} : { episodes: options.episodes }),
        ...(options.maxTokens === undefined ? {} : { maxTokens: options.maxTokens }),
        ...(prompt === undefined ? {} : { prompt }),
      },
    },
    context,
  )
}
