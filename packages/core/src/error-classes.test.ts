import { describe, expect, it } from 'vitest'
import { LudicError } from './errors.js'
import * as core from './index.js'
import { checkErrorClasses, exportedErrorClasses } from './test/error-classes.js'

describe('error classes', () => {
  it("each exported error class's isInstance accepts its own instances and its subclasses' only", () => {
    expect(
      exportedErrorClasses(core)
        .map((errorClass) => errorClass.name)
        .sort(),
    ).toEqual(['BackendError', 'FileSystemError', 'InvalidArgumentError', 'LudicError', 'ParseError', 'ShapeError'])
    checkErrorClasses([core], {})
  })

  it('reports a class without its own marker, a missing example and a plain Error class', () => {
    class MarkerlessError extends LudicError {
      override readonly name = 'MarkerlessError'
    }
    class PlainError extends Error {}
    class ForgottenError extends LudicError {}
    const check = () =>
      checkErrorClasses([{ MarkerlessError, PlainError, ForgottenError }], {
        MarkerlessError: () => new MarkerlessError('x'),
        PlainError: () => new PlainError('x'),
      })
    expect(check).toThrow('MarkerlessError has no static isInstance of its own')
    expect(check).toThrow('MarkerlessError.isInstance(InvalidArgumentError instance) is true, expected false')
    expect(check).toThrow('PlainError does not extend LudicError')
    expect(check).toThrow('ForgottenError has no example')
  })
})
