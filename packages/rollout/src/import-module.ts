import { isAbsolute } from 'node:path'
import { pathToFileURL } from 'node:url'

/**
 * Imports a module by absolute path or URL, as worker threads need: a TypeScript file (`.ts`, `.mts`, `.cts`,
 * `.tsx`) goes through tsx (an optional peer), since Node 20 applies no `--import` loader to worker threads.
 */
export async function importModule(module: string): Promise<Record<string, unknown>> {
  const specifier = isAbsolute(module) ? pathToFileURL(module).href : module
  if (!/\.[cm]?tsx?$/.test(module)) return (await import(specifier)) as Record<string, unknown>
  let api: { tsImport(specifier: string, parentURL: string): Promise<unknown> }
  try {
    api = (await import('tsx/esm/api')) as typeof api
  } catch (error) {
    throw new Error(`${module} is TypeScript: install tsx (npm install -D tsx) to load it in a worker thread, or use built JavaScript`, { cause: error })
  }
  return (await api.tsImport(specifier, import.meta.url)) as Record<string, unknown>
}

/** The function a module exports under `name`, or as its default export; a clear error when it has neither. */
export function exportedFunction<T>(imported: Record<string, unknown>, name: string, module: string): T {
  const found = imported[name] ?? imported.default
  if (typeof found !== 'function') throw new TypeError(`${module} exports no ${name} function (nor a default export function)`)
  return found as T
}
