import { checkErrorClasses } from '@ludic/core/test'
import { describe, it } from 'vitest'
import * as trainer from './index.js'
import { LoraPublishError } from './lora-adapter-loader.js'
import { ResumeError } from './run-state.js'

describe('error classes', () => {
  it("each exported error class's isInstance accepts its own instances and its subclasses' only", () => {
    checkErrorClasses([trainer], {
      LoraPublishError: () => new LoraPublishError({ endpoint: 'http://127.0.0.1:8001/v1', operation: 'load', adapter: 'step-1', detail: 'example' }),
      ResumeError: () => new ResumeError({ reason: 'reference-missing', directory: 'runs/example', message: 'example' }),
    })
  })
})
