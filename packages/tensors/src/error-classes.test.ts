import { checkErrorClasses } from '@ludic/core/test'
import { describe, it } from 'vitest'
import * as tensors from './index.js'
import { TensorLeakError } from './memory/no-leaks.js'
import * as tensorsTest from './test/index.js'

describe('error classes', () => {
  it("each exported error class's isInstance accepts its own instances and its subclasses' only (core's included)", () => {
    checkErrorClasses([tensors, tensorsTest], {
      TensorLeakError: () => new TensorLeakError(1, 2, 'example'),
      EngineInternalsError: () => new tensors.EngineInternalsError({ foundVersion: '4.23.0', expectedVersion: '4.22.0', detail: 'example' }),
    })
  })
})
