export { createProgressBar, type ProgressBar, type ProgressBarOptions, type ProgressStream } from './progress-bar.js'
export { renderVegaLite, type VegaLiteSpec } from './vega-chart.js'
export { renderRunChart, runChartSpecification, type ChartSeries, type RunChartOptions } from './run-chart.js'
export { arenaChartSpecification, renderArenaChart, type ArenaRatings } from './arena-chart.js'
export { applyConfigOverrides, parseCommandLineOptions, runConfigMaxDepth } from './command-line.js'
export {
  evaluationMetrics,
  loggedEvaluations,
  makeRunDirectory,
  markdownPage,
  markdownTable,
  runExampleMain,
  runReport,
  writeReportFiles,
  type Evaluated,
  type EvaluationSeries,
  type ExampleReport,
  type LoggedMetrics,
  type ReportedRun,
  type RunReport,
} from './run-report.js'
