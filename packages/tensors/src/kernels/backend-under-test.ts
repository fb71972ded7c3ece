import type { BackendName } from '../backend/init-tensors.js'

/**
 * The backend that backend-sensitive tests compare against the CPU reference: `LUDIC_BACKEND` when
 * set (`auto` or empty meaning `wasm`), else `wasm`. CI runs those tests once plainly and once with
 * `LUDIC_BACKEND=tensorflow`.
 */
export function backendUnderTest(): BackendName {
  const value = process.env.LUDIC_BACKEND
  if (value === undefined || value === '' || value === 'auto') return 'wasm'
  return value as BackendName
}
