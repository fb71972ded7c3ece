import { readFileSync } from 'node:fs'
import { Command, CommanderError, InvalidArgumentError as CommanderInvalidArgument, Option } from 'commander'
import { type CommandContext, log, type OutputStream, untilAborted, writeResult } from './context.js'
import { exitCodeHelp, exitCodeOf, exitCodes, formatError, type ExitCode } from './errors.js'

/** Where the command line reads and writes: the process's streams and signal, or a test's. */
export interface CliIo {
  stdout: OutputStream
  stderr: OutputStream
  /** Aborted at Ctrl+C (and SIGTERM): training stops after its step and saves a checkpoint; `serve` shuts down. */
  signal?: AbortSignal
  /** Default: `process.cwd()`. */
  cwd?: string
  /** Told when `serve` or `view` is listening (tests read the URL here). */
  onListening?: (url: string) => void
}

// Each command's module is imported when the command runs, so `ludic --help` loads no TensorFlow.js, no bench suite.
const commands = {
  train: () => import('./commands/train.js'),
  evaluate: () => import('./commands/eval.js'),
  bench: () => import('./commands/bench.js'),
  serve: () => import('./commands/serve.js'),
  tokenizer: () => import('./commands/tokenizer.js'),
  download: () => import('./commands/download.js'),
  view: () => import('./commands/view.js'),
}

const version = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version

const integer =
  (flag: string, minimum = 0, maximum = Number.MAX_SAFE_INTEGER) =>
  (value: string): number => {
    const number = Number(value)
    if (!/^-?\d+$/.test(value.trim()) || !Number.isSafeInteger(number) || number < minimum || number > maximum) {
      const bounds = [minimum > Number.MIN_SAFE_INTEGER ? `≥ ${minimum}` : '', maximum < Number.MAX_SAFE_INTEGER ? `≤ ${maximum}` : ''].filter(
        (bound) => bound !== '',
      )
      throw new CommanderInvalidArgument(`${flag} must be an integer${bounds.length === 0 ? '' : ` ${bounds.join(' and ')}`}`)
    }
    return number
  }
/** A TCP port: 0 (any free one) to 65535. */
const port = integer('--port', 0, 65535)
const list = (value: string, previous: string[] | undefined): string[] => [
  ...(previous ?? []),
  ...value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== ''),
]
const collect = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value]
/** `options` without the properties that are undefined: an option not given on the command line is left to the command's default. */
const given = <T extends Record<string, unknown>>(options: T): { [K in keyof T]?: Exclude<T[K], undefined> } =>
  Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) as { [K in keyof T]?: Exclude<T[K], undefined> }

const examples = (lines: readonly string[]) => `\nExamples:\n${lines.map((line) => `  $ ${line}`).join('\n')}\n`

/**
 * The `ludic` program (commander): `train`, `eval`, `bench`, `serve`, `tokenizer train`, `download`, `view`, with the global
 * flags `--json`, `--quiet`, `--seed`, `--backend`. Parse errors throw a `CommanderError` (`exitOverride`); help and
 * usage text go to `io`. `runCli` runs it and turns every outcome into an exit code.
 */
export function createProgram(io: CliIo, state: { exitCode: ExitCode } = { exitCode: exitCodes.ok }): Command {
  const program = new Command('ludic')
  const contextOf = (command: Command): CommandContext => {
    const globals = command.optsWithGlobals() as { json?: boolean; quiet?: boolean; seed?: number; backend?: string }
    return {
      stdout: io.stdout,
      stderr: io.stderr,
      json: globals.json === true,
      quiet: globals.quiet === true,
      seed: globals.seed,
      backend: globals.backend,
      signal: io.signal ?? new AbortController().signal,
      cwd: io.cwd ?? process.cwd(),
    }
  }
  program
    .description('Ludic: train language models through play, evaluate, benchmark and serve them.')
    .version(version, '-V, --version')
    .option('--json', 'print the result as JSON on stdout (progress and logs stay on stderr)')
    .option('-q, --quiet', 'no progress bars or log lines, only the result')
    .option('--seed <n>', 'seed everything random (a config file’s own seed is replaced)', integer('--seed', Number.MIN_SAFE_INTEGER))
    .option('--backend <name>', 'TensorFlow.js backend: wasm, cpu, tensorflow… (default: the best installed; LUDIC_BACKEND)')
    .showHelpAfterError('(run with --help for usage)')
    .configureOutput({ writeOut: (text) => io.stdout.write(text), writeErr: (text) => io.stderr.write(text), outputError: (text, write) => write(text) })
    .exitOverride()
    .addHelpText(
      'after',
      `${examples([
        'ludic train examples/selfplay-kuhn-poker/kuhn.yaml',
        'ludic eval examples/selfplay-kuhn-poker/runs/kuhn-yaml/model --suite games --games kuhn-poker-v1 --opponents random,nash',
        'ludic bench tokenizer --quick',
        'ludic serve examples/selfplay-kuhn-poker/runs/kuhn-yaml/model --port 8000',
        'ludic tokenizer train --input corpus.txt --vocab-size 1024 --out my-tokenizer',
        'ludic download HuggingFaceTB/SmolLM2-135M-Instruct',
        'ludic view examples/selfplay-kuhn-poker/runs',
      ])}\n${exitCodeHelp}\n`,
    )

  program
    .command('train')
    .description('train from a run config file (YAML or JSON): kind rl (self-play, default), cpo, sft, preference (DPO family) or reward-model')
    .argument('<config>', 'the run config file (.yaml, .yml or .json)')
    .option('--steps <n>', "replace the config's steps", integer('--steps'))
    .option('--run-directory <dir>', "replace the config's runDirectory (metrics, checkpoints, model/)")
    .option('--set <path=value>', 'set a config field before it is checked, e.g. --set batch.episodesPerStep=4 (repeatable; values are YAML)', collect)
    .option('--resume', "continue from the run directory's latest checkpoint (every kind; checkpoints need checkpointEvery)")
    .option('--plugin <file>', "a module to import first that registers games or estimators (registerGame…), as a config's plugins: (repeatable)", collect)
    .addHelpText(
      'after',
      examples([
        'ludic train examples/selfplay-kuhn-poker/kuhn.yaml',
        'ludic train kuhn.yaml --steps 2 --set batch.episodesPerStep=8 --run-directory runs/try',
        'ludic train dpo.yaml --json > summary.json',
      ]),
    )
    .action(
      async (config: string, options: { steps?: number; runDirectory?: string; set?: string[]; resume?: boolean; plugin?: string[] }, command: Command) => {
        const context = contextOf(command)
        const { train, trainSummaryText } = await commands.train()
        const summary = await train(
          config,
          {
            ...given({ steps: options.steps, runDirectory: options.runDirectory, set: options.set, resume: options.resume, plugins: options.plugin }),
          },
          context,
        )
        writeResult(context, summary, () => trainSummaryText(summary))
        if (summary.interrupted) state.exitCode = exitCodes.interrupted
      },
    )

  program
    .command('eval')
    .description('evaluate a model (a directory or a Hugging Face repo id) against opponents: win rates with 95% intervals')
    .argument('<checkpoint>', 'a model directory (config.json, model.safetensors, tokenizer.json) or owner/name')
    .addOption(new Option('--suite <name>', 'the evaluation suite').choices(['games']).default('games'))
    .option('--games <ids>', 'game ids, comma-separated (default: every two-player game; a game of your own: --plugin)', list)
    .option('--opponents <names>', 'random, minimax, nash, comma-separated (default: all)', list)
    .option('--episodes <n>', 'episodes per game and opponent (default 100)', integer('--episodes', 1))
    .option('--prompt <name>', "the model's prompt: terse (the observation, default), spiral, kuhn-terse")
    .option('--max-tokens <n>', 'most tokens per move (default 32)', integer('--max-tokens', 1))
    .option('--set <option=value>', 'set an option of the suite, e.g. --set gameOptions.kuhn-poker-v1.rounds=1 (repeatable; values are YAML)', collect)
    .option('--out <dir>', 'where the report files go', 'bench-results')
    .option('--png', 'also write the chart as PNG')
    .option('--plugin <file>', "a module to import first that registers games or estimators (registerGame…), as a config's plugins: (repeatable)", collect)
    .addHelpText(
      'after',
      examples([
        'ludic eval runs/my-run/model --plugin my-plugin.js --games my-game-v1 --opponents random',
        'ludic eval runs/kuhn-try/model --games kuhn-poker-v1 --opponents random,nash --episodes 200 --prompt kuhn-terse --set gameOptions.kuhn-poker-v1.rounds=1',
      ]),
    )
    .action(
      async (
        checkpoint: string,
        options: {
          suite: string
          games?: string[]
          opponents?: string[]
          episodes?: number
          prompt?: string
          maxTokens?: number
          set?: string[]
          out: string
          png?: boolean
          plugin?: string[]
        },
        command: Command,
      ) => {
        const context = contextOf(command)
        const { evaluate } = await commands.evaluate()
        const { benchResultText } = await commands.bench()
        const result = await evaluate(
          checkpoint,
          {
            suite: options.suite,
            out: options.out,
            ...given({
              games: options.games,
              opponents: options.opponents,
              episodes: options.episodes,
              prompt: options.prompt,
              maxTokens: options.maxTokens,
              set: options.set,
              png: options.png,
              plugins: options.plugin,
            }),
          },
          context,
        )
        writeResult(context, result, () => benchResultText(result))
      },
    )

  program
    .command('bench')
    .description('run a benchmark suite of @ludic/bench and write its report (JSON, Markdown, chart)')
    .argument('<suite>', 'kernels, tokenizer, train-step, decode, collection, scale, disaggregated (speed against peers); games, kuhn, transfer (evaluation)')
    .option('--quick', 'the short form of the suite')
    .option('--set <option=value>', "set one of the suite's options, e.g. --set presets=[tiny] (repeatable; values are YAML)", collect)
    .option('--out <dir>', 'where the report files go', 'bench-results')
    .option('--png', 'also write the chart as PNG')
    .option('--plugin <file>', "a module to import first that registers games or estimators (registerGame…), as a config's plugins: (repeatable)", collect)
    .addHelpText(
      'after',
      examples(['ludic bench tokenizer', 'ludic bench train-step --quick --set presets=[tiny] --set backends=[wasm]', 'ludic bench kuhn --out results']),
    )
    .action(async (suite: string, options: { quick?: boolean; set?: string[]; out: string; png?: boolean; plugin?: string[] }, command: Command) => {
      const context = contextOf(command)
      const { bench, benchResultText } = await commands.bench()
      const result = await bench(
        suite,
        {
          out: options.out,
          ...given({ quick: options.quick, set: options.set, png: options.png, plugins: options.plugin }),
        },
        context,
      )
      writeResult(context, result, () => benchResultText(result))
    })

  program
    .command('serve')
    .description('serve a model over the OpenAI API (chat and completions, streaming) until Ctrl+C')
    .argument('<checkpoint>', 'a model directory or a Hugging Face repo id (owner/name[@revision])')
    .option('--port <n>', 'port (0: a free one)', port, 8000)
    .option('--host <address>', 'interface to listen on (0.0.0.0 for every one)', '127.0.0.1')
    .option('--max-tokens <n>', 'max_tokens of a request that gives none', integer('--max-tokens', 1), 256)
    .option('--model-id <name>', "the model name clients send (default: the directory's or repo's name)")
    .option('--api-key <key>', 'require Authorization: Bearer <key> (default: LUDIC_API_KEY, else none)')
    .option('--chat-template <file>', "a Jinja chat template file, instead of the tokenizer's")
    .option('--max-batch <n>', 'requests generated together (with --engine: the rows decoded together)', integer('--max-batch', 1), 16)
    .option('--engine', 'generate with continuous batching and shared prompt prefixes (a long request does not hold short ones back)')
    .option('--enable-lora', "take LoRA adapters at run time (vLLM's POST /v1/load_lora_adapter and /v1/unload_lora_adapter); needs --lora-root")
    .option('--lora-root <dir>', 'a directory clients may load LoRA adapters from, symbolic links resolved (repeatable; required with --enable-lora)', collect)
    .option('--max-loras <n>', 'LoRA adapters held at once, with --enable-lora', integer('--max-loras', 1), 8)
    .option(
      '--allowed-host <name>',
      "a Host header name to accept besides IP addresses and localhost ('.example.com': its subdomains; '*': any; repeatable)",
      collect,
    )
    .addHelpText(
      'after',
      examples([
        'ludic serve runs/kuhn-try/model',
        'ludic serve HuggingFaceTB/SmolLM2-135M-Instruct --port 8080',
        'ludic serve runs/kuhn-try/model --engine --max-batch 64',
        'ludic serve runs/kuhn-try/model --enable-lora --lora-root runs/adapters',
      ]),
    )
    .action(
      async (
        checkpoint: string,
        options: {
          port: number
          host: string
          maxTokens: number
          modelId?: string
          apiKey?: string
          chatTemplate?: string
          maxBatch: number
          engine?: boolean
          enableLora?: boolean
          loraRoot?: string[]
          maxLoras: number
          allowedHost?: string[]
        },
        command: Command,
      ) => {
        const context = contextOf(command)
        let fatal: ((error: unknown) => void) | undefined
        const failed = new Promise<unknown>((resolve) => {
          fatal = resolve
        })
        const { serve } = await commands.serve()
        const running = await serve(
          checkpoint,
          {
            port: options.port,
            host: options.host,
            maxTokens: options.maxTokens,
            maxBatch: options.maxBatch,
            ...(options.engine === true ? { engine: true } : {}),
            ...(options.enableLora === true ? { enableLora: true, maxLoras: options.maxLoras, loraRoots: options.loraRoot ?? [] } : {}),
            ...given({ allowedHosts: options.allowedHost, modelId: options.modelId, apiKey: options.apiKey, chatTemplate: options.chatTemplate }),
          },
          context,
          (error) => fatal?.(error),
        )
        const { server } = running
        writeResult(context, { url: server.url, model: server.modelId, port: server.port }, () => `serving ${server.modelId} at ${server.url}`)
        log(context, 'Ctrl+C stops the server')
        io.onListening?.(server.url)
        const outcome = await Promise.race([untilAborted(context.signal).then(() => undefined), failed.then((error) => ({ error }))])
        await running.close()
        if (outcome !== undefined) {
          io.stderr.write(`fatal policy error; the server stopped (a supervisor should restart it): ${formatError(outcome.error)}\n`)
          state.exitCode = exitCodes.failed
        } else {
          log(context, 'server stopped')
          state.exitCode = exitCodes.interrupted // stopped by Ctrl+C or SIGTERM, as the exit-code table says
        }
      },
    )

  const tokenizer = program.command('tokenizer').description('tokenizer tools')
  tokenizer
    .command('train')
    .description('train a byte-level BPE on text files (one text per line); writes tokenizer.json and tokenizer_config.json')
    .requiredOption('--input <files...>', 'text files')
    .requiredOption('--vocab-size <n>', 'vocabulary size (256 bytes + special tokens + merges)', integer('--vocab-size', 1))
    .requiredOption('--out <dir>', 'output directory')
    .option('--pattern <name|regex>', 'pre-tokenizer: gpt2, llama3, qwen2, gpt4o or an Oniguruma regex', 'llama3')
    .option('--special-tokens <tokens...>', 'special tokens (the first ids)')
    .option('--eos <token>', 'the end-of-sequence token (added as a special token)')
    .option('--chat-template <file>', 'a Jinja chat template file for tokenizer_config.json')
    .option('--min-frequency <n>', 'a pair must occur this often to be merged', integer('--min-frequency', 1), 2)
    .addHelpText('after', examples(['ludic tokenizer train --input corpus.txt --vocab-size 1024 --eos "<|end|>" --out my-tokenizer']))
    .action(
      async (
        options: {
          input: string[]
          vocabSize: number
          out: string
          pattern: string
          specialTokens?: string[]
          eos?: string
          chatTemplate?: string
          minFrequency: number
        },
        command: Command,
      ) => {
        const context = contextOf(command)
        const { tokenizerTrain } = await commands.tokenizer()
        const summary = await tokenizerTrain(
          {
            input: options.input,
            vocabSize: options.vocabSize,
            out: options.out,
            pattern: options.pattern,
            minFrequency: options.minFrequency,
            ...given({ specialTokens: options.specialTokens, eos: options.eos, chatTemplate: options.chatTemplate }),
          },
          context,
        )
        writeResult(
          context,
          summary,
          () => `trained a ${summary.vocabSize}-token BPE (${summary.merges} merges) on ${summary.texts} lines in ${summary.seconds} s: ${summary.directory}`,
        )
      },
    )

  program
    .command('download')
    .description('download a Hugging Face repo into the Hub cache (resumable, shared with Python); prints the snapshot directory')
    .argument('<repo>', 'owner/name or owner/name@revision')
    .option('--revision <rev>', 'branch, tag or commit (default: main)')
    .option('--cache-dir <dir>', 'the cache (default: HF_HUB_CACHE, $HF_HOME/hub, ~/.cache/huggingface/hub)')
    .option('--include <files...>', "files of the repo to fetch (default: the model's: config, weights, tokenizer)")
    .option('--tokenizer-only', "only the tokenizer's files")
    .option('--refresh', "ask the Hub for the revision's current commit even when the cache has one")
    .addHelpText('after', examples(['ludic download HuggingFaceTB/SmolLM2-135M-Instruct', 'ludic download Qwen/Qwen3-0.6B --tokenizer-only']))
    .action(
      async (
        repo: string,
        options: { revision?: string; cacheDir?: string; include?: string[]; tokenizerOnly?: boolean; refresh?: boolean },
        command: Command,
      ) => {
        const context = contextOf(command)
        const { download, formatBytes } = await commands.download()
        const summary = await download(
          repo,
          {
            ...given({
              revision: options.revision,
              cacheDir: options.cacheDir,
              include: options.include,
              tokenizerOnly: options.tokenizerOnly,
              refresh: options.refresh,
            }),
          },
          context,
        )
        writeResult(context, summary, () => `${summary.directory}\n(${summary.files.length} files, ${formatBytes(summary.bytes)})`)
      },
    )
  program
    .command('view')
    .description('a web page over run directories, live while they train: metrics charts, episodes turn by turn, reports (until Ctrl+C)')
    .argument('<runs...>', 'run directories, or directories holding run directories (such as runs/)')
    .option('--port <n>', 'port (0: a free one)', port, 6007)
    .option('--host <address>', 'interface to listen on (a non-loopback one needs --allow-remote)', '127.0.0.1')
    .option('--allow-remote', 'allow a --host other machines reach: the page has no password, anyone who reaches it reads the runs')
    .option(
      '--allowed-host <name>',
      "a Host header name to accept besides IP addresses and localhost ('.example.com': its subdomains; '*': any; repeatable)",
      collect,
    )
    .option('--no-open', 'do not open the page in a browser (it opens only on an interactive terminal)')
    .addHelpText('after', examples(['ludic view runs/', 'ludic view runs/kuhn-a runs/kuhn-b --port 0 --no-open']))
    .action(
      async (
        runArguments: string[],
        options: { port: number; host: string; allowRemote?: boolean; allowedHost?: string[]; open: boolean },
        command: Command,
      ) => {
        const context = contextOf(command)
        const { view } = await commands.view()
        const running = await view(
          runArguments,
          {
            port: options.port,
            host: options.host,
            open: options.open,
            ...(options.allowRemote === true ? { allowRemote: true } : {}),
            ...given({ allowedHosts: options.allowedHost }),
          },
          context,
        )
        const { server } = running
        writeResult(
          context,
          { url: server.url, port: server.port, runs: running.runs },
          () => `viewing ${running.runs} run${running.runs === 1 ? '' : 's'} at ${server.url}`,
        )
        log(context, 'Ctrl+C stops the server')
        io.onListening?.(server.url)
        await untilAborted(context.signal)
        await server.close()
        log(context, 'server stopped')
        state.exitCode = exitCodes.interrupted // stopped by Ctrl+C or SIGTERM, as the exit-code table says
      },
    )
  return program
}

/**
 * Runs `ludic` with `argv` (without `node` and the script): returns the exit code (see `exitCodes`). Failures are
 * printed on stderr as one block (a config error lists every wrong field), never thrown.
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<ExitCode> {
  const state: { exitCode: ExitCode } = { exitCode: exitCodes.ok }
  const program = createProgram(io, state)
  try {
    await program.parseAsync([...argv], { from: 'user' })
    return state.exitCode
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and --version end with exit code 0; commander has already printed its message.
      return error.exitCode === 0 ? exitCodes.ok : exitCodes.usage
    }
    // Stopped by Ctrl+C: whatever the command threw at its signal (its reason, an AbortError) is an interruption.
    const code = io.signal?.aborted === true && chainHas(error, io.signal.reason) ? exitCodes.interrupted : exitCodeOf(error)
    io.stderr.write(`ludic: ${formatError(error)}\n`)
    return code
  }
}

/** Whether `item` is `error` or one of its causes. */
function chainHas(error: unknown, item: unknown): boolean {
  for (let current = error, depth = 0; current !== undefined && current !== null && depth < 16; current = (current as { cause?: unknown }).cause, depth++) {
    if (current === item) return true
    if (typeof current !== 'object') return false
  }
  return false
}
