import { checkErrorClasses } from '@ludic/core/test'
import { describe, it } from 'vitest'
import * as advantages from './index.js'

describe('error classes', () => {
  it("each exported error class's isInstance accepts its own instances and its subclasses' only (none of its own yet; core's included)", () => {
    checkErrorClasses([advantages], {})
  })
})
