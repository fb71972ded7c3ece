import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { AsyncCollectorError } from './async-collector-error.js'

/**
 * The path of a package's built entry `dist/<name>.js` for a worker thread to run or import: next to the calling
 * module when it runs from dist/, or in the package's dist/ when it runs from its sources (tests).
 */
export function builtModulePath(callerUrl: string, name: string, packageName: string): string {
  const beside = fileURLToPath(new URL(`./${name}.js`, callerUrl))
  if (existsSync(beside)) return beside
  const built = fileURLToPath(new URL(`../dist/${name}.js`, callerUrl))
  if (existsSync(built)) return built
  throw new AsyncCollectorError({ message: `the ${name} entry of ${packageName} is not built (looked for ${beside} and ${built}): run npm run build` })
}
