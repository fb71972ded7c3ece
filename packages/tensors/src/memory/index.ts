export { createTensorScope, withTensorScope, type TensorScope } from './tensor-scope.js'
export { expectNoLeaks, TensorLeakError, type NoLeaksOptions } from './no-leaks.js'
