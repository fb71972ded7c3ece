import { BackendError, FileSystemError, InvalidArgumentError, LudicError, ParseError, ShapeError } from '../errors.js'

/** An error class as a package exports it: a constructor whose instances are `Error`s, with `isInstance` when it is a `LudicError`. */
type ErrorClass = (abstract new (...args: never[]) => Error) & { isInstance?: (error: unknown) => boolean }

/** One example instance of each of core's error classes, by class name. */
export const coreErrorExamples: Readonly<Record<string, () => Error>> = {
  LudicError: () => new LudicError('example'),
  InvalidArgumentError: () => new InvalidArgumentError({ argument: 'example', value: 1, message: 'example' }),
  ParseError: () => new ParseError({ source: 'example.json', path: ['field'], message: 'example' }),
  BackendError: () => new BackendError({ backend: 'example', message: 'example' }),
  ShapeError: () => new ShapeError({ argument: 'example', expected: [1], actual: [2] }),
  FileSystemError: () => new FileSystemError({ path: 'example.bin', operation: 'write', code: 'ENOSPC' }),
}

const coreErrorClasses: readonly ErrorClass[] = [LudicError, InvalidArgumentError, ParseError, BackendError, ShapeError, FileSystemError]

/** The error classes among a module's exports: functions whose prototype chain includes `Error.prototype`. */
export function exportedErrorClasses(module: object): ErrorClass[] {
  return Object.values(module).filter(
    (value): value is ErrorClass => typeof value === 'function' && typeof value.prototype === 'object' && value.prototype instanceof Error,
  )
}

/**
 * Checks every error class exported by `modules` (a package's index, `import * as index from './index.js'`,
 * and those of the packages it builds on), together with core's, and throws one `Error` listing every problem
 * (it works in any test framework):
 *
 * - each class has an example in `examples` (by class name; core's are built in), so a new class cannot be
 *   left out, and each example is an instance of exactly that class;
 * - each class is a `LudicError` with its own static `isInstance` and its own `Symbol.for('ludic.error.<ClassName>')`
 *   marker (so markers of classes in different packages cannot collide while class names differ);
 * - `A.isInstance(example of B)` is true exactly when B is A or a subclass of A.
 */
export function checkErrorClasses(modules: readonly object[], examples: Readonly<Record<string, () => Error>>): void {
  const classes = [...new Set([...coreErrorClasses, ...modules.flatMap(exportedErrorClasses)])]
  const allExamples: Record<string, () => Error> = { ...coreErrorExamples, ...examples }
  const problems: string[] = []
  const instances = new Map<ErrorClass, Error>()
  const names = new Map<string, ErrorClass>()

  for (const errorClass of classes) {
    const name = errorClass.name
    if (names.has(name)) problems.push(`two exported error classes are named ${name}`)
    names.set(name, errorClass)
    const example = allExamples[name]
    if (example === undefined) {
      problems.push(`${name} has no example: add \`${name}: () => new ${name}(…)\` to the examples`)
      continue
    }
    const instance = example()
    if (Object.getPrototypeOf(instance) !== errorClass.prototype) {
      problems.push(`the example of ${name} is not an instance of exactly ${name}`)
      continue
    }
    if (!(instance instanceof LudicError)) {
      problems.push(`${name} does not extend LudicError`)
      continue
    }
    if (!Object.hasOwn(errorClass, 'isInstance')) problems.push(`${name} has no static isInstance of its own`)
    const marker = errorClass === LudicError ? Symbol.for('ludic.error') : Symbol.for(`ludic.error.${name}`)
    if ((instance as unknown as Record<symbol, unknown>)[marker] !== true) problems.push(`${name} instances lack the marker ${marker.toString()}`)
    instances.set(errorClass, instance)
  }
  for (const name of Object.keys(examples)) {
    if (!names.has(name)) problems.push(`the example ${name} is of no exported error class`)
  }

  for (const errorClass of instances.keys()) {
    for (const [other, instance] of instances) {
      const expected = other === errorClass || other.prototype instanceof errorClass
      const actual = errorClass.isInstance?.(instance) === true
      if (actual !== expected) {
        problems.push(`${errorClass.name}.isInstance(${other.name} instance) is ${actual}, expected ${expected}`)
      }
    }
  }

  if (problems.length > 0) throw new Error(`Error classes: ${problems.length} problem(s):\n- ${problems.join('\n- ')}`)
}
