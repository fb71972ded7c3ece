export {
  type DownloadProgress,
  type DownloadRepoOptions,
  type DownloadWait,
  downloadRepo,
  downloadRepoOptionsSchema,
  type HubOptions,
  hubOptionsSchema,
} from './download-repo.js'
export { type FilePreset, type FileSelection, filePresets } from './file-selection.js'
export { HubError, type HubErrorReason } from './hub-error.js'
export { defaultCacheDir, defaultEndpoint, defaultEndpointUrl, defaultOffline, defaultToken, huggingFaceHome } from './hub-environment.js'
export { isRepoId, isValidRepoId, isValidRevision, parseRepoReference, type RepoReference } from './repo-id.js'
export { repoStorageFolder } from './cache-layout.js'
export { resolveModelSource, type ResolveModelSourceOptions, resolveModelSourceOptionsSchema } from './resolve-model-source.js'
