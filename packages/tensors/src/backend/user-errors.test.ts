import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

// A script of the user's, run with tsx as the examples are, that starts the WebAssembly backend and then fails. It
// imports the built package, as the examples do (tfjs-core's gradient files load only bundled: `npm test` builds first).
function runAfterInitTensors(failure: string, wasmThreads = 1): { status: number | null; stderr: string } {
  const script = `
    import { initTensors } from '@ludic/tensors'
    await initTensors({ backend: 'wasm', wasmThreads: ${wasmThreads} })
    function usersOwnFunction() {
      ${failure}
    }
    usersOwnFunction()
  `
  const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '--eval', script], {
    cwd: fileURLToPath(new URL('.', import.meta.url)),
    encoding: 'utf8',
    env: { ...process.env, LUDIC_BACKEND: 'wasm' },
    timeout: 60_000,
  })
  expect(child.error).toBeUndefined()
  return { status: child.status, stderr: child.stderr }
}

describe("a user's error after initTensors starts the WebAssembly backend", () => {
  it.each([1, 2])('a thrown error prints its own message and stack and exits 1, as Node does without Ludic (wasmThreads %i)', (wasmThreads) => {
    const { status, stderr } = runAfterInitTensors("throw new Error('the user’s own bug')", wasmThreads)
    expect(stderr).toContain('Error: the user’s own bug')
    expect(stderr).toMatch(/at usersOwnFunction/)
    // Not tfjs-backend-wasm's Emscripten glue, whose listener rethrew the error and printed its minified source.
    expect(stderr).not.toContain('var Module=')
    expect(stderr.length).toBeLessThan(4000)
    expect(status).toBe(1)
  })

  it('an unhandled rejection prints its own message and exits 1', () => {
    const { status, stderr } = runAfterInitTensors("Promise.reject(new Error('the user’s own rejection'))")
    expect(stderr).toContain('Error: the user’s own rejection')
    expect(stderr).toMatch(/at usersOwnFunction/)
    expect(stderr).not.toContain('var Module=')
    expect(stderr.length).toBeLessThan(4000)
    expect(status).toBe(1)
  })
})
