// tfjs-core alone registers no gradients (the `@tensorflow/tfjs` bundle does this import for its users).
// Every module of this package that takes gradients imports this file for its side effect.
import '@tensorflow/tfjs-core/dist/register_all_gradients.js'
