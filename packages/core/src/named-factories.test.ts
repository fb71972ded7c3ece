import { describe, expect, it } from 'vitest'
import { InvalidArgumentError } from './errors.js'
import { createNamedFactories } from './named-factories.js'

const description = { kind: 'shape', factoryShape: '(options) => Shape', unknown: (known: string) => `unknown shape; known: ${known}` }

describe('createNamedFactories', () => {
  it('gives the built-in factories, then the registered ones, in order', () => {
    const square = () => 'square'
    const factories = createNamedFactories<() => string>(description, { circle: () => 'circle' })
    factories.register('square', square)
    expect(factories.names()).toEqual(['circle', 'square'])
    expect(factories.get('square')).toBe(square)
    expect(factories.get('circle')()).toBe('circle')
  })

  it('refuses an empty name, a taken name, a factory that is not a function and an unknown name, naming each', () => {
    const factories = createNamedFactories<() => string>(description, { circle: () => 'circle' })
    const cases: [() => unknown, string, RegExp][] = [
      [() => factories.register('', () => ''), 'name', /'name' \(value: ""\): must be a non-empty string/],
      [() => factories.register('circle', () => ''), 'name', /'name' \(value: "circle"\): a shape with this name is already registered/],
      [() => factories.register('star', 'star' as never), 'factory', /'factory' \(value: "star"\): must be a function \(options\) => Shape/],
      [() => factories.get('hexagon'), 'name', /'name' \(value: "hexagon"\): unknown shape; known: circle$/],
    ]
    for (const [call, argument, message] of cases) {
      let thrown: unknown
      try {
        call()
      } catch (error) {
        thrown = error
      }
      expect(thrown).toBeInstanceOf(InvalidArgumentError)
      expect((thrown as InvalidArgumentError).argument).toBe(argument)
      expect((thrown as Error).message).toMatch(message)
    }
    expect(factories.names()).toEqual(['circle'])
  })
})
