import { checkErrorClasses } from '@ludic/core/test'
import { describe, it } from 'vitest'
import { HubError } from './hub-error.js'
import * as hub from './index.js'

describe('error classes', () => {
  it("each exported error class's isInstance accepts its own instances and its subclasses' only (core's included)", () => {
    checkErrorClasses([hub], {
      HubError: () => new HubError({ reason: 'missing', repoId: 'owner/name', message: 'example' }),
    })
  })
})
