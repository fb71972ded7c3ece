/**
 * A static server over the page's build, for the browser tests and the benchmark (Node only; the page never imports
 * it): 127.0.0.1 on a free port, cross-origin isolated like `vite preview` (COOP + COEP, so WebAssembly may use
 * threads), and `extra` files by path (a model archive to load, say). Paths outside the build are 404.
 */
import { readFile, stat } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import { extname, join, normalize, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The build's folder (`npm run build --workspace playground`). */
export const buildDirectory = fileURLToPath(new URL('../dist/', import.meta.url))

const contentTypes: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
  '.zip': 'application/zip',
  '.svg': 'image/svg+xml',
}

export async function serveBuild(extra: ReadonlyMap<string, Uint8Array> = new Map(), root = buildDirectory): Promise<{ url: string; close(): Promise<void> }> {
  const base = root.endsWith(sep) ? root : `${root}${sep}`
  const server: Server = createServer(async (request, response) => {
    const headers = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp', 'Cache-Control': 'no-store' }
    let path: string
    try {
      path = decodeURIComponent(new URL(request.url ?? '/', 'http://127.0.0.1').pathname)
    } catch {
      response.writeHead(400, headers).end()
      return
    }
    const body = extra.get(path)
    if (body !== undefined) {
      response.writeHead(200, { ...headers, 'Content-Type': contentTypes[extname(path)] ?? 'application/octet-stream' }).end(body)
      return
    }
    const file = normalize(join(base, path === '/' ? 'index.html' : path))
    const isFile =
      file.startsWith(base) &&
      (await stat(file).then(
        (entry) => entry.isFile(),
        () => false,
      ))
    if (!isFile) {
      response.writeHead(404, headers).end()
      return
    }
    response.writeHead(200, { ...headers, 'Content-Type': contentTypes[extname(file)] ?? 'application/octet-stream' }).end(await readFile(file))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('the server has no port')
  return { url: `http://127.0.0.1:${address.port}`, close: () => new Promise<void>((resolve) => server.close(() => resolve())) }
}

/** Chromium's flags here: headless, no network services, and WebGPU and WebGL on the CPU (SwiftShader: no GPU here). */
export const chromiumArguments = [
  '--headless',
  '--no-sandbox',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--enable-unsafe-webgpu',
  '--enable-unsafe-swiftshader',
]
