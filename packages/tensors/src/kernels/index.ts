/**
 * Kernel fixes per backend. `applyKernelFixes(tfBackendName)` is called by `initTensors` after a
 * backend starts; it is idempotent.
 */
export function applyKernelFixes(tfBackendName: string): void {
  void tfBackendName
}
