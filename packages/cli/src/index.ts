export { createProgram, runCli, type CliIo } from './cli.js'
export { bench, benchResultText, type BenchOptions, type BenchResult } from './commands/bench.js'
export { download, formatBytes, type DownloadOptions, type DownloadSummary } from './commands/download.js'
export { evaluate, type EvalOptions } from './commands/eval.js'
export { serve, type RunningServer, type ServeOptions } from './commands/serve.js'
export { tokenizerTrain, type TokenizerTrainOptions, type TokenizerTrainSummary } from './commands/tokenizer.js'
export { train, trainSummaryText, type TrainOptions, type TrainSummary } from './commands/train.js'
export { view, type RunningView, type ViewOptions } from './commands/view.js'
export { startViewServer, viewServerOptionsSchema, type ViewServer, type ViewServerOptions } from './view/view-server.js'
export type { EpisodeSummary, MetricsRecord, RunStatus, RunSummary } from './view/run-data.js'
export type { RunFiles, RunTable, TableCell } from './view/run-files.js'
export { type CommandContext, commandContext, type OutputStream } from './context.js'
export {
  CliError,
  ConfigError,
  exitCodeHelp,
  exitCodeMarkdown,
  exitCodeOf,
  exitCodes,
  exitCodeTable,
  formatError,
  formatIssues,
  InterruptedError,
  type ExitCode,
} from './errors.js'
export { environmentRegistry, namedPrompts, opponentRegistry } from './registries.js'
