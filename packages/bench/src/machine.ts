import { readFileSync } from 'node:fs'
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os'
import type { InitTensorsOptions } from '@ludic/tensors'
import { version_core } from '@tensorflow/tfjs-core'
import type { BenchMachine } from './bench-report.js'

/** The CPU flags the kernels' speed depends on. */
const interestingFlags = /^(sse4_2|avx|avx2|fma|avx512f|avx512bw|avx512vl|avx512_vnni|amx_tile)$/

/**
 * The machine a report was measured on: Node, platform, processors (model and vector flags, read from
 * `/proc/cpuinfo` on Linux), memory, the load average at the start, the backend the suite ran on and tfjs-core's
 * version. Printed at the top of every report: absolute figures only mean something next to it.
 */
export function describeMachine(backend: string): BenchMachine {
  let cpuInfo = ''
  try {
    cpuInfo = readFileSync('/proc/cpuinfo', 'utf8')
  } catch {
    // not Linux: no flags
  }
  const flags = (/^flags\s*:\s*(.*)$/m.exec(cpuInfo)?.[1] ?? '').split(' ').filter((flag) => interestingFlags.test(flag))
  return {
    node: process.version,
    platform: process.platform,
    arch: process.arch,
    cpus: availableParallelism(),
    cpuModel: (/^model name\s*:\s*(.*)$/m.exec(cpuInfo)?.[1] ?? cpus()[0]?.model ?? 'unknown').trim(),
    ...(flags.length === 0 ? {} : { cpuFlags: flags.join(' ') }),
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    loadAverage: Number(loadavg()[0]!.toFixed(2)),
    backend,
    tfjsVersion: version_core,
  }
}

/** This process's CPU time so far, every thread (user + system), in seconds. */
export function processCpuSeconds(): number {
  const usage = process.cpuUsage()
  return (usage.user + usage.system) / 1e6
}

/** `initTensors`' options for `threads` threads of `backend`: WebAssembly's pool, else the native intra-op pool; none for undefined. */
export function backendThreadOptions(
  backend: InitTensorsOptions['backend'],
  threads: number | undefined,
): Pick<InitTensorsOptions, 'wasmThreads' | 'nativeThreads'> {
  if (threads === undefined) return {}
  return backend === 'wasm' ? { wasmThreads: threads } : { nativeThreads: { intraOp: threads } }
}
