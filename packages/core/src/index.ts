export * from './errors.js'
export * from './validation.js'
