import { CliError, exitCodes } from './errors.js'

/**
 * A port or an address the server cannot listen on is the command line's to change (exit code 2, with the flag to
 * change): a port in use, a privileged port, an address this machine does not have. Other errors: `undefined`.
 */
export function listenProblem(error: unknown, host: string, port: number): CliError | undefined {
  const code = (error as { code?: unknown } | null)?.code
  const where = `${host}:${port}`
  if (code === 'EADDRINUSE')
    return new CliError(
      `cannot listen on ${where}: the port is in use (another ludic serve or ludic view?); choose another with --port <n>, or --port 0 for a free one`,
      exitCodes.usage,
      {
        cause: error,
      },
    )
  if (code === 'EACCES')
    return new CliError(`cannot listen on ${where}: this user may not open the port; choose one above 1023 with --port <n>`, exitCodes.usage, { cause: error })
  if (code === 'EADDRNOTAVAIL')
    return new CliError(
      `cannot listen on ${where}: ${host} is not an address of this machine; choose another with --host (127.0.0.1, 0.0.0.0)`,
      exitCodes.usage,
      {
        cause: error,
      },
    )
  return undefined
}
