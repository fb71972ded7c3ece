export { expectNoLeaks, TensorLeakError, type NoLeaksOptions } from '../memory/no-leaks.js'
