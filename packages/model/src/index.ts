// The Node entry: the browser entry (browser.ts: the model, generation, LoRA, training, modelFiles/loadModelFromFiles),
// Node's parts registered first (node-platform.ts: matmul worker threads, V8 flags, total memory), and what reads and
// writes files: loadModel/saveModel, LoRA adapter files, training checkpoints.
import './node-platform.js'
export * from './browser.js'
export { loadModel, loadModelOptionsSchema, type LoadModelOptions } from './checkpoint/load-model.js'
export { saveModel, saveModelOptionsSchema, type SaveModelOptions } from './checkpoint/save-model.js'
export {
  attachLoraAdapter,
  loadLoraAdapter,
  loadLoraAdapterOptionsSchema,
  encodeLoraAdapter,
  readLoraAdapter,
  saveLoraAdapter,
  saveLoraAdapterOptionsSchema,
  type LoadLoraAdapterOptions,
  type LoraAdapterFiles,
  type SaveLoraAdapterOptions,
  type StoredLoraAdapter,
} from './lora/lora-adapter-files.js'
export { ConfinedPathError } from './lora/confined-files.js'
export { latestCheckpoint, listCheckpoints, type CheckpointEntry } from './training/list-checkpoints.js'
export { loadTrainingCheckpoint, type LoadedTrainingCheckpoint, type TrainingCheckpointTargets } from './training/load-training-checkpoint.js'
export {
  saveTrainingCheckpoint,
  saveTrainingCheckpointOptionsSchema,
  type SaveTrainingCheckpointOptions,
  type TrainingCheckpointContents,
} from './training/save-training-checkpoint.js'
export { checkpointFileNames } from './training/training-checkpoint-format.js'
