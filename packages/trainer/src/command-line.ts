import { InvalidArgumentError } from '@ludic/core'

/**
 * `--steps 10 --sft-steps 20 --run-directory runs/x --progress false` → `{ steps: 10, sftSteps: 20, runDirectory:
 * 'runs/x', progress: false }`: kebab-case flags become camelCase names, numbers and booleans are converted, every
 * other value stays a string. The result is meant for a zod options schema, which checks names and types.
 */
export function parseCommandLineOptions(argv: readonly string[]): Record<string, unknown> {
  const options: Record<string, unknown> = {}
  for (let index = 0; index < argv.length; index += 2) {
    const flag = argv[index]!
    const value = argv[index + 1]
    if (!flag.startsWith('--') || flag.length === 2) throw new InvalidArgumentError({ argument: 'argv', value: flag, message: 'expected --name value pairs' })
    if (value === undefined) throw new InvalidArgumentError({ argument: 'argv', value: flag, message: 'has no value (expected --name value pairs)' })
    const name = flag.slice(2).replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase())
    options[name] = /^-?\d+(\.\d+)?(e-?\d+)?$/i.test(value) ? Number(value) : value === 'true' || value === 'false' ? value === 'true' : value
  }
  return options
}
