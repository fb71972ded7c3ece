// The Node-only parts of @ludic/model, registered for its browser-safe modules (see `platform.ts`). The Node entry
// (`index.ts`) imports this first; the browser entry does not.
import { totalmem } from 'node:os'
import { setFlagsFromString } from 'node:v8'
import { lendMatmulHelpers } from './generation/matmul-workers.js'
import { samplingHelper } from './generation/sampling-workers.js'
import { setPlatform } from './platform.js'

setPlatform({
  lendMatmulHelpers,
  samplingHelper,
  enableRelaxedSimd: () => setFlagsFromString('--experimental-wasm-relaxed-simd'),
  totalMemoryBytes: totalmem,
  environmentVariable: (name) => process.env[name],
})
