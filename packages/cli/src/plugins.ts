import { ParseError } from '@ludic/core'
import { importPlugins } from '@ludic/trainer'
import { ConfigError } from './errors.js'

/**
 * Imports the modules of `--plugin` (paths relative to `cwd`), in order, with the loader of a run config's `plugins:`
 * (`importPlugins` of `@ludic/trainer`): what they register (`registerGame`, `registerAdvantageEstimator`…) can then be
 * named by the command. A missing file exits 3, a module that fails to import 2, as the same entry in a config would.
 */
export async function importCommandPlugins(plugins: readonly string[] | undefined, cwd: string): Promise<void> {
  if (plugins === undefined || plugins.length === 0) return
  try {
    await importPlugins(plugins, { base: cwd, source: '--plugin' })
  } catch (error) {
    throw ParseError.isInstance(error) ? new ConfigError(error, undefined) : error
  }
}
