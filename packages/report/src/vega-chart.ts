import { InvalidArgumentError } from '@ludic/core'
import { parse, View } from 'vega'
import { compile, type TopLevelSpec } from 'vega-lite'

/** A Vega-Lite specification (plain JSON), as `vega-lite` types it. */
export type VegaLiteSpec = TopLevelSpec

/**
 * A Vega-Lite specification as a standalone SVG document: compiled to Vega, then rendered headless in Node
 * (renderer `none`, no canvas; text widths are estimated). The one renderer of Ludic's charts: the run
 * chart, the arena chart and `@ludic/bench`'s report charts. The specification is not modified. One Vega-Lite
 * cannot compile is an `InvalidArgumentError` naming `spec`.
 */
export async function renderVegaLite(spec: VegaLiteSpec): Promise<string> {
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) {
    throw new InvalidArgumentError({ argument: 'spec', value: spec, message: 'must be a Vega-Lite specification object' })
  }
  let compiled: ReturnType<typeof compile>['spec']
  try {
    // Vega marks the data rows it reads (a symbol property): compile a copy, so the caller's specification stays as it was.
    compiled = compile(structuredClone(spec)).spec
  } catch (error) {
    throw new InvalidArgumentError({
      argument: 'spec',
      value: spec,
      message: `is not a valid Vega-Lite specification (${(error as Error).message})`,
      cause: error,
    })
  }
  const view = new View(parse(compiled), { renderer: 'none' })
  try {
    return `${await view.toSVG()}\n`
  } finally {
    view.finalize()
  }
}
