#!/usr/bin/env node
import { runCli } from './cli.js'
import { InterruptedError } from './errors.js'

// Ctrl+C (or SIGTERM) aborts the command's signal: training stops after its step and saves a checkpoint, a server
// shuts down; the exit code is 130. A second Ctrl+C exits at once (130). The abort reason is an InterruptedError, so
// a command that ends with it (a download rethrows its signal's reason) exits 130, not 1 as a plain Error would.
const controller = new AbortController()
let interrupts = 0
const stop = (signal: NodeJS.Signals) => {
  interrupts++
  if (interrupts > 1) process.exit(130)
  process.stderr.write(`\n${signal}: stopping (again to quit at once)\n`)
  controller.abort(new InterruptedError(`interrupted (${signal})`)) // what a command throws at its signal exits 130
}
process.on('SIGINT', stop)
process.on('SIGTERM', stop)

const code = await runCli(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, signal: controller.signal })
// Flush what was written, then exit: a backend's worker threads or timers must not keep the process alive.
process.stdout.write('', () => process.exit(code))
