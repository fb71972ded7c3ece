import { InvalidArgumentError } from './errors.js'

/** How a registry names what it holds, in its errors. */
export interface NamedFactoriesDescription {
  /** What a factory makes, e.g. `'policy loss'`: "a policy loss with this name is already registered". */
  kind: string
  /** The factory's shape, for a factory that is not a function: "must be a function (options) => PolicyLoss". */
  factoryShape: string
  /** The message for an unknown name, given the known names joined with `, `. */
  unknown: (known: string) => string
}

/** Factories by name: the built-in ones, then those registered, in order. */
export interface NamedFactories<Factory> {
  /** Adds `factory` under `name`; an empty name, a name already taken or a factory that is not a function is refused. */
  register(name: string, factory: Factory): void
  /** The factory registered under `name`; an unknown name is an error that lists the known ones. */
  get(name: string): Factory
  /** The registered names, built-in ones first, then in order of registration. */
  names(): string[]
}

/**
 * A registry of factories by name — the estimators', the policy losses' — whose refusals are
 * `InvalidArgumentError`s on `name` or `factory`, worded by `description`.
 */
export function createNamedFactories<Factory>(description: NamedFactoriesDescription, builtIns: Record<string, Factory>): NamedFactories<Factory> {
  const factories = new Map<string, Factory>(Object.entries(builtIns))
  return {
    register(name, factory) {
      if (typeof name !== 'string' || name.length === 0) {
        throw new InvalidArgumentError({ argument: 'name', value: name, message: 'must be a non-empty string' })
      }
      if (typeof factory !== 'function') {
        throw new InvalidArgumentError({ argument: 'factory', value: factory, message: `must be a function ${description.factoryShape}` })
      }
      if (factories.has(name)) {
        throw new InvalidArgumentError({ argument: 'name', value: name, message: `a ${description.kind} with this name is already registered` })
      }
      factories.set(name, factory)
    },
    get(name) {
      const factory = typeof name === 'string' ? factories.get(name) : undefined
      if (factory === undefined)
        throw new InvalidArgumentError({ argument: 'name', value: name, message: description.unknown([...factories.keys()].join(', ')) })
      return factory
    },
    names: () => [...factories.keys()],
  }
}
