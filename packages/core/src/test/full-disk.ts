/**
 * `node:fs/promises` as it behaves when the disk is full under any path containing `marker` (default `full-disk`):
 * writes through an open file (`handle.write`, `writev`) and `writeFile`/`appendFile` fail as Node's do, with an error
 * that names no file (`ENOSPC: no space left on device, write`). For a test's
 * `vi.mock('node:fs/promises', async (importOriginal) => (await import('@ludic/core/test')).fullDiskFileSystem(await importOriginal()))`.
 */
export function fullDiskFileSystem<FileSystem extends typeof import('node:fs/promises')>(actual: FileSystem, marker = 'full-disk'): FileSystem {
  const enospc = () => Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', errno: -28, syscall: 'write' })
  const full = (path: unknown) => String(path).includes(marker)
  const refuse = <Write extends (...args: never[]) => Promise<unknown>>(write: Write) =>
    ((...args: Parameters<Write>) => (full(args[0]) ? Promise.reject(enospc()) : write(...args))) as Write
  return {
    ...actual,
    writeFile: refuse(actual.writeFile),
    appendFile: refuse(actual.appendFile),
    open: async (...args: Parameters<typeof actual.open>) => {
      const handle = await actual.open(...args)
      if (!full(args[0])) return handle
      return new Proxy(handle, {
        get: (target, property) =>
          property === 'write' || property === 'writev'
            ? () => Promise.reject(enospc())
            : typeof Reflect.get(target, property) === 'function'
              ? (Reflect.get(target, property) as (...rest: unknown[]) => unknown).bind(target)
              : Reflect.get(target, property),
      })
    },
  }
}
