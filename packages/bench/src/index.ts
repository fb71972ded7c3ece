export {
  benchCellSchema,
  benchMachineSchema,
  benchPeerSchema,
  benchReportSchema,
  benchTableSchema,
  numberCell,
  parseBenchReport,
  ratioCell,
  type BenchCell,
  type BenchMachine,
  type BenchPeer,
  type BenchReport,
  type BenchTable,
} from './bench-report.js'
export { defineBenchSuite, type BenchContext, type BenchSuite } from './bench-suite.js'
export { benchSuiteNames, benchSuites, runBenchSuite } from './bench-suites.js'
export { benchOptionsFromArguments } from './command-line.js'
export { describeMachine } from './machine.js'
export { benchReportMarkdown, formatCell, markdownTable } from './report-markdown.js'
export { renderChart, type RenderChartOptions } from './render-chart.js'
export { writeBenchReport, type BenchReportFiles } from './write-report.js'

// Evaluation
export {
  builtInOpponentNames,
  evaluateGames,
  evaluateGamesOptionsSchema,
  gameEvaluationChart,
  gameEvaluationTable,
  type BuiltInOpponentName,
  type EvaluateGamesOptions,
  type GameEvaluation,
  type GameEvaluationRow,
} from './evaluation/evaluate-games.js'
export {
  evaluateKuhn,
  evaluateKuhnOptionsSchema,
  kuhnEvaluationChart,
  kuhnEvaluationTable,
  kuhnPromptNames,
  type EvaluateKuhnOptions,
  type KuhnEvaluationRow,
  type KuhnPromptName,
} from './evaluation/kuhn-evaluation.js'
export {
  runTransfer,
  transferChart,
  transferOptionsSchema,
  transferTable,
  type TransferOptions,
  type TransferResult,
  type TransferRow,
} from './evaluation/transfer.js'
export { gamesSuite, kuhnSuite, transferSuite } from './evaluation/evaluation-suites.js'

// Speed
export { collectionOptionsSchema, collectionSuite, type CollectionOptions } from './perf/collection-suite.js'
export { disaggregatedOptionsSchema, disaggregatedSuite, type DisaggregatedOptions } from './disaggregated/disaggregated-suite.js'
export { decodeOptionsSchema, decodeSuite, type DecodeOptions } from './perf/decode-suite.js'
export { kernelsOptionsSchema, kernelsSuite, type KernelsOptions } from './perf/kernels-suite.js'
export { findPeerPython, type PeerPython } from './perf/python-peer.js'
export { benchDocuments, referenceTokenizerNames, tokenizerOptionsSchema, tokenizerSuite, type TokenizerOptions } from './perf/tokenizer-suite.js'
export { trainStepOptionsSchema, trainStepSuite, type TrainStepOptions } from './perf/train-step-suite.js'

// Scale
export { scaleOptionsSchema, scaleShape, scaleSuite, type ScaleOptions } from './scale/scale-suite.js'
export { measureScale, peakResidentBytes, scaleWorks, type ScaleInputs, type ScaleMeasurement, type ScaleWork } from './scale/measure-scale.js'
export { runScaleTask, type ScaleChildTask } from './scale/scale-child.js'
