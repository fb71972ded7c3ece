import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { exportedFunction, importModule } from './import-module.js'

describe('importModule / exportedFunction', () => {
  it('imports a TypeScript module by absolute path through tsx and finds a named or default function', async () => {
    const module = fileURLToPath(new URL('./test/async-worker-module.ts', import.meta.url))
    const imported = await importModule(module)
    expect(exportedFunction(imported, 'createRolloutWorker', module)).toBeTypeOf('function')
    expect(exportedFunction({ default: () => 1 }, 'createRolloutWorker', 'm.js')).toBeTypeOf('function')
  })

  it('names the module and the missing export', () => {
    expect(() => exportedFunction({ other: () => 1 }, 'createRolloutSetup', '/tmp/setup.js')).toThrow(
      '/tmp/setup.js exports no createRolloutSetup function (nor a default export function)',
    )
  })

  it('rejects with the loader error for a module that does not exist', async () => {
    await expect(importModule('/nonexistent/ludic-module.js')).rejects.toThrow(/ludic-module/)
  })
})
