/**
 * The few members of the `WebAssembly` global that the kernels use, typed here because this package
 * compiles without the DOM library (Node's types do not declare the `WebAssembly` namespace).
 */
export interface WasmMemory {
  readonly buffer: ArrayBuffer | SharedArrayBuffer
  grow(pages: number): number
}

export interface WasmCompiledModule {
  readonly compiled: unique symbol
}

export interface WebAssemblyApi {
  Memory: new (descriptor: { initial: number; maximum?: number; shared?: boolean }) => WasmMemory
  Module: new (bytes: Uint8Array) => WasmCompiledModule
  Instance: new (module: WasmCompiledModule, imports: Record<string, Record<string, unknown>>) => { exports: Record<string, unknown> }
  instantiate(bytes: Uint8Array, imports: object): Promise<{ instance: unknown; module: WasmCompiledModule }>
  validate(bytes: Uint8Array): boolean
}

export const webAssembly = (globalThis as unknown as { WebAssembly: WebAssemblyApi }).WebAssembly

export function isWasmMemory(value: unknown): value is WasmMemory {
  return value instanceof webAssembly.Memory
}
