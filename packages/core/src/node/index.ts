// `@ludic/core/node`: what needs Node's file system (the main entry stays free of Node built-ins).
export { openRegularFile, readOpenedFile, readRegularFile, type OpenedRegularFile, type OpenRegularFileOptions } from './regular-file.js'
