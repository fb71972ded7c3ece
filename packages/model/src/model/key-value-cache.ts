import * as tf from '@tensorflow/tfjs-core'
import { InvalidArgumentError, LudicError } from '@ludic/core'

/**
 * The keys and values of every layer for the tokens seen so far, for incremental decoding: each layer
 * holds `[batch, keyValueHeads, length, headDim]` (keys already rotated). `model.forward(ids, { cache })`
 * reads it and appends the new tokens' keys and values; `length` counts the positions held, padding
 * included. The cache owns its tensors: `dispose()` frees them.
 */
export class KeyValueCache {
  private readonly keys: (tf.Tensor4D | undefined)[]
  private readonly values: (tf.Tensor4D | undefined)[]
  private lengthHeld = 0
  private batchSize: number | undefined
  private disposed = false
  private taken = false

  constructor(readonly numLayers: number) {
    this.keys = new Array<tf.Tensor4D | undefined>(numLayers).fill(undefined)
    this.values = new Array<tf.Tensor4D | undefined>(numLayers).fill(undefined)
  }

  /** Positions held (the attention mask of the next forward covers `length + time` positions). */
  get length(): number {
    return this.lengthHeld
  }

  /** Rows held; `undefined` while empty. */
  get batch(): number | undefined {
    return this.batchSize
  }

  /** Checks that a forward of `batch` rows may use this cache. */
  checkBatch(batch: number): void {
    if (this.disposed) throw new LudicError('the KeyValueCache was disposed')
    if (this.batchSize !== undefined && this.batchSize !== batch) {
      throw new InvalidArgumentError({ argument: 'inputIds', value: batch, message: `has ${batch} rows but the cache holds ${this.batchSize}` })
    }
  }

  /**
   * Appends a layer's new keys and values (`[batch, keyValueHeads, time, headDim]`) and returns all of them
   * (`[batch, keyValueHeads, length + time, headDim]`). The returned tensors are the cache's (kept out of any
   * enclosing `tf.tidy`); the previous ones are freed.
   */
  append(layer: number, key: tf.Tensor4D, value: tf.Tensor4D): { key: tf.Tensor4D; value: tf.Tensor4D } {
    if (this.taken) throw new LudicError('the KeyValueCache handed its tensors over (take())')
    const pastKey = this.keys[layer]
    const pastValue = this.values[layer]
    const allKeys = tf.keep(pastKey === undefined ? tf.clone(key) : tf.concat([pastKey, key], 2))
    const allValues = tf.keep(pastValue === undefined ? tf.clone(value) : tf.concat([pastValue, value], 2))
    pastKey?.dispose()
    pastValue?.dispose()
    this.keys[layer] = allKeys
    this.values[layer] = allValues
    return { key: allKeys, value: allValues }
  }

  /** Called by the model once every layer appended `time` positions for `batch` rows. */
  advance(batch: number, time: number): void {
    this.batchSize = batch
    this.lengthHeld += time
  }

  /**
   * Hands every layer's keys and values (`[batch, keyValueHeads, length, headDim]`) to the caller, who then
   * owns them; the cache keeps its length and batch but no tensors (a later `append` fails).
   */
  take(): { keys: tf.Tensor4D[]; values: tf.Tensor4D[] } {
    if (this.disposed) throw new LudicError('the KeyValueCache was disposed')
    if (this.keys.some((key) => key === undefined)) throw new LudicError('the KeyValueCache holds no keys yet (run a forward pass with it first)')
    const taken = { keys: this.keys.slice() as tf.Tensor4D[], values: this.values.slice() as tf.Tensor4D[] }
    this.keys.fill(undefined)
    this.values.fill(undefined)
    this.taken = true
    return taken
  }

  dispose(): void {
    for (const tensor of [...this.keys, ...this.values]) tensor?.dispose()
    this.keys.fill(undefined)
    this.values.fill(undefined)
    this.disposed = true
  }
}
