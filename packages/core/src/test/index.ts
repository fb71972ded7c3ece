export { createByteTokenizer } from './byte-tokenizer.js'
export { createScriptedPolicy, type ScriptedPolicy, type ScriptedPolicyOptions, type ScriptedReply } from './scripted-policy.js'
export {
  createScriptedEnvironment,
  type ScriptedEnvironment,
  type ScriptedEnvironmentOptions,
} from './scripted-environment.js'
export { checkErrorClasses, coreErrorExamples, exportedErrorClasses } from './error-classes.js'
export { fullDiskFileSystem } from './full-disk.js'
