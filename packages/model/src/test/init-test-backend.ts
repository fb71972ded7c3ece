import { initTensors } from '@ludic/tensors'

/** Test set-up: the WebAssembly backend (LUDIC_BACKEND overrides it, so CI re-runs on the native one). */
export async function initTestBackend(): Promise<void> {
  await initTensors({ backend: 'wasm', verbose: false })
}
