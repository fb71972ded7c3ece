import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { LudicError } from '@ludic/core'

/**
 * The path of a built entry of this package (`dist/<name>.js`) for a worker thread to import: next to the
 * calling module when it runs from dist/, or in dist/ when it runs from the package's sources (tests).
 */
export function builtModulePath(callerUrl: string, name: string): string {
  const beside = fileURLToPath(new URL(`./${name}.js`, callerUrl))
  if (existsSync(beside)) return beside
  const built = fileURLToPath(new URL(`../dist/${name}.js`, callerUrl))
  if (existsSync(built)) return built
  throw new LudicError(`the ${name} entry of @ludic/trainer is not built (looked for ${beside} and ${built}): run npm run build`)
}
