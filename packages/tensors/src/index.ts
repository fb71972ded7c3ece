export * from './backend/init-tensors.js'
