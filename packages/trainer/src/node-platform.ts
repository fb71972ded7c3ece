/**
 * The trainers' Node-only parts, registered when the Node entry is imported (`index.ts` imports this module first; the
 * browser entry does not): a run directory's files (checkpoints, `trajectories.jsonl`), the file loggers, collection in
 * worker threads and the terminal's progress bar.
 */
import { join } from 'node:path'
import { saveModel } from '@ludic/model'
import { createProgressBar } from '@ludic/report'
import { createAsyncRolloutSource } from './async-rollout-source.js'
import { createSnapshotFiles } from './league/snapshot-files.js'
import { createFileLogger } from './loggers/file-loggers.js'
import { setTrainerPlatform } from './platform.js'
import { createRunDirectoryState, refuseRunDirectoryOfAnother } from './run-directory.js'

setTrainerPlatform({
  createRunDirectoryState,
  refuseAnotherRun: refuseRunDirectoryOfAnother,
  createFileLogger,
  createAsyncRolloutSource,
  createProgressBar,
  snapshotFiles: createSnapshotFiles,
  saveRunModel: async (model, runDirectory) => {
    await saveModel(model, join(runDirectory, 'model'))
  },
})
